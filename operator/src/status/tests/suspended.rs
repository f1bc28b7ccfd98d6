//! A Job someone else suspended (Kueue, or by hand): the Task shows
//! Queued, reason Suspended, until the Job is resumed (`facts::suspended`).

use crds::conditions::{reasons, types};
use crds::{Phase, Task};

use crate::fixtures::*;
use crate::status::desired;

#[test]
fn suspended_job_shows_queued_until_resumed() {
    let t = Task::test();
    let j = JobFixture::ours().active(0).suspended().build();
    let s = desired(&t, &obs(Some(&j), None, &[])).status;
    assert_eq!(s.phase, Some(Phase::Queued));
    assert_eq!(s.reason.as_deref(), Some(reasons::SUSPENDED));
    let w = cond(&s, types::WAITING).unwrap();
    assert_eq!(
        (w.status.as_str(), w.reason.as_str()),
        ("True", reasons::SUSPENDED)
    );
    // Resumed: Running again, Waiting turns False.
    let resumed = JobFixture::ours().active(0).build();
    let s2 = desired(&t.status(s), &obs(Some(&resumed), None, &[])).status;
    assert_eq!(s2.phase, Some(Phase::Running));
    let w = cond(&s2, types::WAITING).unwrap();
    assert_eq!(w.status, "False");
    // A finished Job is never shown as suspended.
    let done = JobFixture::ours()
        .failed("DeadlineExceeded")
        .suspended()
        .build();
    let s3 = desired(&Task::test(), &obs(Some(&done), None, &[])).status;
    assert_eq!(s3.phase, Some(Phase::Failed));
}
