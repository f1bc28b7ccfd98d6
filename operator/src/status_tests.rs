use crds::conditions::{reasons, types};
use crds::result::{MAX_RESULT_BYTES, MAX_STATUS_RESULT_BYTES, keys};

use super::*;
use crate::fixtures::*;

#[test]
fn running_status_records_the_job() {
    let s = running();
    assert_eq!(
        (s.job_name.as_deref(), s.job_uid.as_deref()),
        (Some("t"), Some("j1"))
    );
    assert_eq!(s.started_at, Some(at(100)));
    assert_eq!(s.attempts, Some(1));
    assert_eq!(
        cond(&s, types::RUNNING).map(|c| c.status.as_str()),
        Some("True")
    );
    assert!(cond(&s, types::COMPLETE).is_none() && cond(&s, types::FAILED).is_none());
}

#[test]
fn completion_moves_only_changed_condition_times() {
    let mut prev = running();
    for c in &mut prev.conditions {
        c.last_transition_time = at(150);
    }
    let j = job(
        "j1",
        Some("tu"),
        Some(("Complete", "CompletionsReached")),
        1,
        0,
        0,
    );
    let r = cm("tu", "j1", 0, "42\n");
    let s = desired(&task(Some(prev)), &obs(Some(&j), Some(&r), &[])).status;
    assert_eq!(s.result.as_deref(), Some("42\n"));
    assert_eq!(s.completed_at, Some(at(200)));
    assert_eq!(
        cond(&s, types::RUNNING).map(|c| c.last_transition_time.clone()),
        Some(at(500))
    );
    assert_eq!(
        cond(&s, types::COMPLETE).map(|c| c.status.as_str()),
        Some("True")
    );
    // Still running: times stay.
    let mut prev = running();
    prev.conditions
        .iter_mut()
        .for_each(|c| c.last_transition_time = at(150));
    let j = job("j1", Some("tu"), None, 0, 0, 1);
    let s = desired(&task(Some(prev)), &obs(Some(&j), None, &[])).status;
    assert!(
        s.conditions
            .iter()
            .all(|c| c.last_transition_time == at(150))
    );
}

#[test]
fn timestamps_only_change_is_skipped() {
    let a = running();
    let mut b = a.clone();
    b.started_at = Some(at(999));
    b.conditions
        .iter_mut()
        .for_each(|c| c.last_transition_time = at(999));
    assert!(!needs_patch(Some(&a), &b));
    b.attempts = Some(2);
    assert!(needs_patch(Some(&a), &b));
    assert!(needs_patch(None, &a));
}

#[test]
fn results_are_bounded() {
    let j = job(
        "j1",
        Some("tu"),
        Some(("Complete", "CompletionsReached")),
        1,
        0,
        0,
    );
    let big = "x".repeat(MAX_STATUS_RESULT_BYTES + 10);
    let r = cm("tu", "j1", 0, &big);
    let s = desired(&task(Some(running())), &obs(Some(&j), Some(&r), &[])).status;
    assert_eq!(
        s.result.as_ref().map(String::len),
        Some(MAX_STATUS_RESULT_BYTES)
    );
    assert_eq!(s.result_truncated, Some(true));
    let mut huge = cm("tu", "j1", 0, "");
    if let Some(d) = huge.data.as_mut() {
        d.insert(keys::RESULT_SIZE.into(), (MAX_RESULT_BYTES + 1).to_string());
    }
    let s = desired(&task(Some(running())), &obs(Some(&j), Some(&huge), &[])).status;
    assert_eq!(s.reason.as_deref(), Some(reasons::RESULT_TOO_LARGE));
}

#[test]
fn backoff_message_names_the_exit_code() {
    let j = job(
        "j1",
        Some("tu"),
        Some(("Failed", "BackoffLimitExceeded")),
        0,
        2,
        0,
    );
    let r = cm("tu", "j1", 3, "");
    let s = desired(&task(Some(running())), &obs(Some(&j), Some(&r), &[])).status;
    let m = s.message.unwrap_or_default();
    assert!(m.contains("exit code 3") && m.contains("2 attempts"), "{m}");
    assert_eq!(s.attempts, Some(2));
}

#[test]
fn invalid_spec_fails_once() {
    let d = invalid(&task(None), "spec.command is empty".into(), at(5));
    assert_eq!(d.status.reason.as_deref(), Some(reasons::INVALID_SPEC));
    assert_eq!(d.next, Next::Done);
    assert_eq!(
        cond(&d.status, types::FAILED).map(|c| c.status.as_str()),
        Some("True")
    );
}

#[test]
fn result_is_read_only_when_needed() {
    let run = job("j1", Some("tu"), None, 0, 0, 1);
    let done = job("j1", Some("tu"), Some(("Complete", "x")), 1, 0, 0);
    assert!(!wants_result(&task(Some(running())), Some(&run)));
    assert!(wants_result(&task(Some(running())), Some(&done)));
    assert!(wants_result(&task(Some(running())), None));
    assert!(!wants_result(&task(None), None));
}
