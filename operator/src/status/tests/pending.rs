//! A Task that waits for its upstreams (`spec.after`): Pending, Waiting
//! with the message that names what it waits for, the upstreams seen kept
//! until it has a Job; failed by them, Failed without one.

use crds::after::UpstreamSeen;
use crds::conditions::{reasons, types};
use crds::{Phase, Reason, Task};
use std::time::Duration;

use crate::after::{Fail, Wait};
use crate::fixtures::*;
use crate::status::{Next, desired, needs_patch, pending, upstream_failed};

fn wait(message: &str, wake_in: Option<Duration>) -> Wait {
    Wait {
        message: message.into(),
        seen: vec![UpstreamSeen {
            name: "a".into(),
            uid: "ua".into(),
        }],
        wake_in,
    }
}

#[test]
fn pending_waits_and_names_its_upstream() {
    let t = Task::test().after(&["a"]);
    let d = pending(&t, &wait("waiting for upstream a to succeed", None), at(10));
    let s = &d.status;
    assert_eq!(s.phase, Some(Phase::Pending));
    assert_eq!(s.reason.as_deref(), Some(reasons::WAITING_FOR_UPSTREAM));
    assert_eq!(s.job_uid, None);
    assert_eq!(s.upstreams.len(), 1);
    let w = cond(s, types::WAITING).expect("Waiting");
    assert_eq!(
        (w.status.as_str(), w.message.as_str()),
        ("True", "waiting for upstream a to succeed")
    );
    assert_eq!(
        cond(s, types::RUNNING).map(|c| c.status.as_str()),
        Some("False")
    );
    assert_eq!(
        cond(s, types::FINISHED).map(|c| c.status.as_str()),
        Some("False")
    );
    // Woken by its upstreams; a long safety net only.
    assert_eq!(d.next, Next::Running);
    // The same wait again writes nothing.
    let again = pending(
        &t.clone().status(d.status.clone()),
        &wait("waiting for upstream a to succeed", None),
        at(20),
    );
    assert!(!needs_patch(Some(&d.status), &again.status));
    // A missing upstream's deadline is when to look again.
    let timed = pending(&t, &wait("m", Some(Duration::from_secs(30))), at(10));
    assert_eq!(timed.next, Next::Wake(Duration::from_secs(30)));
}

#[test]
fn once_started_the_task_runs_as_any_other() {
    let t = Task::test().after(&["a"]);
    let p = pending(&t, &wait("waiting for upstream a to succeed", None), at(10)).status;
    let job = JobFixture::ours().build();
    let s = desired(&t.status(p), &obs(Some(&job), None, &[])).status;
    assert_eq!(s.phase, Some(Phase::Running));
    assert!(s.upstreams.is_empty(), "its upstreams are done with");
    assert_eq!(
        cond(&s, types::WAITING).map(|c| c.status.as_str()),
        Some("False")
    );
}

#[test]
fn upstream_failure_fails_without_a_job() {
    let t = Task::test().after(&["a"]);
    let f = Fail {
        reason: Reason::UpstreamFailed,
        message: "upstream a failed (BackoffLimitExceeded)".into(),
        seen: Vec::new(),
    };
    let s = upstream_failed(&t, &f, at(10)).status;
    assert_eq!(s.phase, Some(Phase::Failed));
    assert_eq!(s.reason.as_deref(), Some(reasons::UPSTREAM_FAILED));
    assert_eq!(s.job_uid, None);
    assert_eq!(s.completed_at, Some(at(10)));
    assert_eq!(
        cond(&s, types::FAILED).map(|c| c.status.as_str()),
        Some("True")
    );
}
