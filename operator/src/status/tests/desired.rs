use crds::Task;
use crds::conditions::{reasons, types};
use crds::result::{MAX_RESULT_BYTES, MAX_STATUS_RESULT_BYTES};

use crate::fixtures::*;
use crate::status::*;

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
    let j = JobFixture::ours().complete().build();
    let r = ResultFixture::new("42\n").build();
    let s = desired(&Task::test().status(prev), &obs(Some(&j), Some(&r), &[])).status;
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
    let j = JobFixture::ours().build();
    let s = desired(&Task::test().status(prev), &obs(Some(&j), None, &[])).status;
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
    let j = JobFixture::ours().complete().build();
    let big = "x".repeat(MAX_STATUS_RESULT_BYTES + 10);
    let r = ResultFixture::new(&big).build();
    let s = desired(&Task::test().running(), &obs(Some(&j), Some(&r), &[])).status;
    assert_eq!(
        s.result.as_ref().map(String::len),
        Some(MAX_STATUS_RESULT_BYTES)
    );
    assert_eq!(s.result_truncated, Some(true));
    // As the worker writes it: a result over the limit is not stored.
    let huge = ResultFixture::omitted(MAX_RESULT_BYTES + 1).build();
    let s = desired(&Task::test().running(), &obs(Some(&j), Some(&huge), &[])).status;
    assert_eq!(s.reason.as_deref(), Some(reasons::RESULT_TOO_LARGE));
}

#[test]
fn backoff_message_names_the_exit_code() {
    let j = JobFixture::ours()
        .failed("BackoffLimitExceeded")
        .failed_pods(2)
        .build();
    let r = ResultFixture::new("").exit(3).build();
    let s = desired(&Task::test().running(), &obs(Some(&j), Some(&r), &[])).status;
    let m = s.message.unwrap_or_default();
    assert!(m.contains("exit code 3") && m.contains("2 attempts"), "{m}");
    assert_eq!(s.attempts, Some(2));
}

#[test]
fn invalid_spec_fails_once() {
    let d = invalid(&Task::test(), "spec.command is empty".into(), at(5));
    assert_eq!(d.status.reason.as_deref(), Some(reasons::INVALID_SPEC));
    assert_eq!(d.next, Next::Done);
    assert_eq!(
        cond(&d.status, types::FAILED).map(|c| c.status.as_str()),
        Some("True")
    );
}

#[test]
fn refused_job_fails_with_the_server_message_once() {
    let server = r#"Job.batch "t" is invalid: spec.template.spec.containers[0].env[8].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.nonexistent""#;
    let wait = crate::queue::Wait {
        position: 1,
        of: 1,
        scope: crate::queue::Scope::Global,
        namespace: "ns".into(),
        limit: 1,
        overtakes: false,
    };
    // Fresh, or queued before a slot freed: either way Failed, InvalidSpec.
    let queued = queued(&Task::test(), &wait, at(3)).status;
    assert_eq!(queued.queue_position, Some(1));
    for prev in [None, Some(queued)] {
        let t = Task::test().status(prev.clone());
        let d = refused(&t, &Refusal::invalid(server.into()), at(5));
        let s = &d.status;
        assert_eq!(s.phase, Some(crds::Phase::Failed));
        assert_eq!(s.reason.as_deref(), Some(reasons::INVALID_SPEC));
        let m = s.message.as_deref().unwrap_or_default();
        assert!(m.contains(server), "{m}");
        assert_eq!(d.next, Next::Done);
        assert_eq!(s.job_uid, None);
        // Out of the queue: no place in it is shown any more.
        assert_eq!(s.queue_position, None);
        assert_eq!(
            cond(s, types::FAILED).map(|c| c.status.as_str()),
            Some("True")
        );
        assert_ne!(
            cond(s, types::WAITING).map(|c| c.status.as_str()),
            Some("True")
        );
        // One Failed Event for the transition, none when seen again.
        let notes = crate::status::events::transitions(prev.as_ref(), s);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].warning && notes[0].reason == crate::status::events::reason::FAILED);
        assert!(notes[0].message.contains("InvalidSpec"));
        assert!(crate::status::events::transitions(Some(s), s).is_empty());
        assert!(!needs_patch(
            Some(s),
            &refused(
                &Task::test().status(s.clone()),
                &Refusal::invalid(server.into()),
                at(9)
            )
            .status
        ));
    }
}

#[test]
fn result_is_read_only_when_needed() {
    let run = JobFixture::ours().build();
    let done = JobFixture::ours().complete().build();
    let t = Task::test().running();
    assert!(wants_result(&t, Some(&run)));
    assert!(wants_result(&t, Some(&done)));
    assert!(wants_result(&t, None));
    assert!(!wants_result(&Task::test(), None));
    assert!(!wants_final_result(&t, Some(&run)));
    assert!(wants_final_result(&t, Some(&done)));
}

#[test]
fn cancel_suspends_then_fails_cancelled_with_the_partial_result() {
    let running_job = JobFixture::ours().build();
    let t = Task::test().cancelled().running();
    // 1. The Job still runs: stop it, stay Running.
    let d = desired(&t, &obs(Some(&running_job), None, &[]));
    assert_eq!(d.status.phase, Some(Phase::Running));
    assert!(wants_stop(&t, Some(&running_job), &d.status));
    assert!(wants_result(&t, Some(&running_job)));
    // 2. Suspended, its pod still terminating: still Running, no second stop.
    let sj = JobFixture::ours().suspended().build();
    let live = [PodFixture::new("p1").build()];
    let d = desired(&t, &obs(Some(&sj), None, &live));
    assert_eq!(d.status.phase, Some(Phase::Running));
    assert!(!wants_stop(&t, Some(&sj), &d.status));
    // 3. Pod gone, the worker wrote what the program had: Failed Cancelled.
    let r = ResultFixture::new("partial").exit(143).build();
    let d = desired(&t, &obs(Some(&sj), Some(&r), &[]));
    let s = &d.status;
    assert_eq!(
        (s.phase, s.reason.as_deref()),
        (Some(Phase::Failed), Some(reasons::CANCELLED))
    );
    assert_eq!(s.result.as_deref(), Some("partial"));
    assert_eq!(s.exit_code, Some(143));
    assert!(s.message.as_deref().unwrap_or_default().contains("SIGTERM"));
    assert_eq!(
        s.result_digest.as_deref(),
        Some(digest(b"partial").as_str())
    );
    assert_eq!(d.next, Next::Done);
    // Without a result: still Cancelled, saying so.
    let d = desired(&t, &obs(Some(&sj), None, &[]));
    assert_eq!(d.status.reason.as_deref(), Some(reasons::CANCELLED));
    assert!(d.status.message.unwrap_or_default().contains("no result"));
}

#[test]
fn cancel_before_the_job_exists_runs_nothing() {
    let d = desired(&Task::test().cancelled(), &obs(None, None, &[]));
    assert_eq!(d.status.reason.as_deref(), Some(reasons::CANCELLED));
    assert_eq!(d.status.job_uid, None);
}

#[test]
fn cancel_after_the_job_finished_keeps_the_real_outcome() {
    let j = JobFixture::ours().complete().build();
    let t = Task::test().cancelled().running();
    let r = ResultFixture::new("42").build();
    let d = desired(&t, &obs(Some(&j), Some(&r), &[]));
    assert_eq!(d.status.phase, Some(Phase::Completed));
    assert!(!wants_stop(&t, Some(&j), &d.status));
}

#[test]
fn start_timeout_wakes_at_the_deadline_then_fails_with_the_waiting_reason() {
    let j = JobFixture::ours().created_at(100).build();
    let pods = [PodFixture::new("p1").waiting("ErrImagePull").build()];
    let t = Task::test().start_timeout(1000).running();
    // now = 500: 600 s left.
    let d = desired(&t, &obs(Some(&j), None, &pods));
    assert_eq!(d.status.phase, Some(Phase::Running));
    assert_eq!(d.next, Next::Wake(std::time::Duration::from_secs(600)));
    let w = cond(&d.status, types::WAITING).unwrap();
    assert_eq!(
        (w.status.as_str(), w.reason.as_str()),
        ("True", reasons::IMAGE_PULL_FAILED)
    );
    assert_eq!(w.message, "ErrImagePull happened");
    let t = t.start_timeout(400);
    let d = desired(&t, &obs(Some(&j), None, &pods));
    let s = &d.status;
    assert_eq!(
        (s.phase, s.reason.as_deref()),
        (Some(Phase::Failed), Some(reasons::IMAGE_PULL_FAILED))
    );
    assert!(
        s.message
            .as_deref()
            .unwrap_or_default()
            .contains("startTimeoutSeconds (400s)")
    );
    assert!(wants_stop(&t, Some(&j), s));
    // A pod that started is not held to the start timeout.
    let started = [PodFixture::new("p1").build()];
    let d = desired(&t, &obs(Some(&j), None, &started));
    assert_eq!(
        (d.status.phase, d.next),
        (Some(Phase::Running), Next::Running)
    );
}

#[test]
fn completion_records_digest_and_log_tail() {
    let j = JobFixture::ours().complete().build();
    let r = ResultFixture::new("42")
        .log_tail("line 1\nline 2\n")
        .build();
    let s = desired(&Task::test().running(), &obs(Some(&j), Some(&r), &[])).status;
    assert_eq!(s.log_tail.as_deref(), Some("line 1\nline 2\n"));
    assert_eq!(
        s.result_digest.as_deref(),
        Some("sha256:73475cb40a568e8da8a045ced110137e159f890ac4da883b6b17dc651b3a8049")
    );
}

#[test]
fn a_job_whose_pods_are_refused_waits_with_the_refusal() {
    let j = JobFixture::ours().created_at(100).build();
    let t = Task::test().running();
    let refusal = "pods \"t-x\" is forbidden: violates PodSecurity \"restricted:latest\"";
    let o = Observed {
        pod_refused: Some(refusal.to_owned()),
        ..obs(Some(&j), None, &[])
    };
    let d = desired(&t, &o);
    assert_eq!(d.status.phase, Some(Phase::Running));
    assert_eq!(d.status.reason.as_deref(), Some(reasons::POD_REFUSED));
    let w = cond(&d.status, types::WAITING).unwrap();
    assert_eq!(
        (w.status.as_str(), w.reason.as_str(), w.message.as_str()),
        ("True", reasons::POD_REFUSED, refusal)
    );
    // Once a pod exists, its own state is what counts.
    let pods = [PodFixture::new("p1").build()];
    let o = Observed {
        pod_refused: None,
        ..obs(Some(&j), None, &pods)
    };
    assert_eq!(desired(&t, &o).status.reason, None);
}

#[test]
fn a_silent_node_is_told_and_never_times_out_as_a_start() {
    let j = JobFixture::ours().created_at(100).build();
    let pods = [PodFixture::new("p1").on_silent_node("node-2", 450).build()];
    // Past its start timeout: the program started, so it is not failed.
    let t = Task::test().start_timeout(10).running();
    let d = desired(&t, &obs(Some(&j), None, &pods));
    let s = &d.status;
    assert_eq!(
        (s.phase, s.reason.as_deref()),
        (Some(Phase::Running), Some(reasons::NODE_UNREACHABLE))
    );
    let w = cond(s, types::WAITING).unwrap();
    assert_eq!(
        (w.status.as_str(), w.reason.as_str()),
        ("True", reasons::NODE_UNREACHABLE)
    );
    assert!(
        w.message
            .contains("node node-2 of pod p1 stopped reporting")
            && w.message.contains("out-of-service"),
        "{}",
        w.message
    );
    // The node is back (Ready again): the Task no longer waits.
    let back = [PodFixture::new("p1").build()];
    let t2 = Task::test().status(d.status.clone());
    let d2 = desired(&t2, &obs(Some(&j), None, &back));
    let w = cond(&d2.status, types::WAITING).unwrap();
    assert_eq!(
        (w.status.as_str(), d2.status.reason.as_deref()),
        ("False", None)
    );
}

#[test]
fn a_job_without_a_pod_is_looked_at_again_soon_then_less_often() {
    let t = Task::test().running();
    // Now is 500: a Job made at 496 is 4 s old, one made at 100 is 400 s old.
    let young = JobFixture::ours().created_at(496).active(0).build();
    let d = desired(&t, &obs(Some(&young), None, &[]));
    assert_eq!(d.next, Next::Wake(std::time::Duration::from_secs(2)));
    let old = JobFixture::ours().created_at(100).active(0).build();
    let d = desired(&t, &obs(Some(&old), None, &[]));
    assert_eq!(d.next, Next::Wake(std::time::Duration::from_secs(60)));
    // A pod, an active count or a suspension: nothing to look for.
    let pods = [PodFixture::new("p1").build()];
    assert_eq!(
        desired(&t, &obs(Some(&old), None, &pods)).next,
        Next::Running
    );
    let active = JobFixture::ours().created_at(100).active(1).build();
    assert_eq!(
        desired(&t, &obs(Some(&active), None, &[])).next,
        Next::Running
    );
    let suspended = JobFixture::ours()
        .created_at(100)
        .active(0)
        .suspended()
        .build();
    assert_ne!(
        desired(&t, &obs(Some(&suspended), None, &[])).next,
        Next::Wake(std::time::Duration::from_secs(60))
    );
}
