use crds::conditions::reasons;
use crds::{Phase, Task};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::fixtures::*;
use crate::status::*;

/// (name, Job, ConfigMap, phase, reason, percent)
type Case<'a> = (
    &'a str,
    &'a Job,
    ConfigMap,
    Option<Phase>,
    Option<&'a str>,
    Option<i32>,
);

#[test]
fn progress_is_copied_while_running_and_never_taken_as_a_result() {
    let run = JobFixture::ours().build();
    let done = JobFixture::ours().complete().build();
    let pcm = ResultFixture::progress_only((10, 100), (50, 140)).build();
    let cases: Vec<Case> = vec![
        (
            "running, progress",
            &run,
            pcm.clone(),
            Some(Phase::Running),
            None,
            Some(50),
        ),
        (
            "foreign job's progress ignored",
            &run,
            ResultFixture::progress_only((10, 100), (50, 140))
                .of_job("other")
                .build(),
            Some(Phase::Running),
            None,
            None,
        ),
        (
            "ended with progress only: no result",
            &done,
            pcm.clone(),
            Some(Phase::Failed),
            Some(reasons::RESULT_MISSING),
            Some(50),
        ),
        (
            "completed: 100%",
            &done,
            ResultFixture::new("ok").build(),
            Some(Phase::Completed),
            Some(reasons::SUCCEEDED),
            None,
        ),
    ];
    for (name, job, cm, phase, reason, percent) in cases {
        let d = desired(&Task::test().running(), &obs(Some(job), Some(&cm), &[]));
        let s = &d.status;
        assert_eq!(s.phase, phase, "{name}: phase");
        assert_eq!(
            s.reason.as_deref(),
            reason,
            "{name}: reason {:?}",
            s.message
        );
        assert_eq!(s.progress.as_ref().map(|p| p.percent), percent, "{name}");
        let again = desired(
            &Task::test().status(s.clone()),
            &obs(Some(job), Some(&cm), &[]),
        );
        assert!(!needs_patch(Some(s), &again.status), "{name}: second patch");
    }
}

#[test]
fn progress_has_eta_and_completion_shows_full() {
    let run = JobFixture::ours().build();
    let pcm = ResultFixture::progress_only((10, 100), (50, 140)).build();
    let d = desired(&Task::test().running(), &obs(Some(&run), Some(&pcm), &[]));
    let p = d.status.progress.clone().unwrap();
    assert_eq!(p.display, "50%");
    assert_eq!(p.message.as_deref(), Some("step at 50"));
    assert_eq!(p.updated_at, Some(at(140)));
    assert_eq!(p.eta, Some(at(190)));
    // The final write keeps the progress keys next to the result.
    let fin = ResultFixture::new("ok")
        .progress((10, 100), (50, 140))
        .build();
    let done = JobFixture::ours().complete().build();
    let d = desired(
        &Task::test().status(d.status),
        &obs(Some(&done), Some(&fin), &[]),
    );
    let p = d.status.progress.unwrap();
    assert_eq!((p.percent, p.display.as_str(), p.eta), (100, "100%", None));
}
