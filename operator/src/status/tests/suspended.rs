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

/// A Job longtask stopped because the Task ended (its start timeout): the
/// ending recorded on the Job stands when the status write that went with
/// the stop was lost, though the pod that showed why is gone; the same
/// Job suspended by someone else, without the record, is Queued.
#[test]
fn ending_recorded_on_a_stopped_job_stands() {
    use crate::status::{ending, observe};
    // now = 500, the Job made at 100: 400 s waiting, the limit 300.
    let t = Task::test().start_timeout(300).running();
    let pending = [PodFixture::new("p").waiting("ErrImagePull").build()];
    let running = JobFixture::ours().created_at(100).build();
    let failed = desired(&t, &obs(Some(&running), None, &pending)).status;
    assert_eq!(failed.phase, Some(Phase::Failed));
    let record = ending(&failed).expect("a terminal status has an ending");

    let mut stopped = JobFixture::ours().active(0).suspended().build();
    stopped.metadata.annotations = Some(
        [(
            crds::names::annotations::ENDED.to_owned(),
            record.to_string(),
        )]
        .into(),
    );
    assert!(observe::ended(&stopped).is_some());
    // The lost write: the Task still shows Running; no pod left.
    let again = desired(&t, &obs(Some(&stopped), None, &[])).status;
    assert_eq!(
        (
            again.phase,
            again.reason.as_deref(),
            again.message.as_deref()
        ),
        (
            failed.phase,
            failed.reason.as_deref(),
            failed.message.as_deref()
        )
    );
    // Not ours to trust on a Job that runs, nor without the record.
    let mut resumed = stopped.clone();
    resumed.spec.as_mut().expect("spec").suspend = Some(false);
    assert!(observe::ended(&resumed).is_none());
    let plain = JobFixture::ours().active(0).suspended().build();
    let s = desired(&t, &obs(Some(&plain), None, &[])).status;
    assert_eq!(s.phase, Some(Phase::Queued));
    assert_eq!(ending(&s), None);
}
