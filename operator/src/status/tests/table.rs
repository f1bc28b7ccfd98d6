use crds::conditions::{reasons, types};
use crds::{Phase, Task, TaskStatus};
use k8s_openapi::api::core::v1::Pod;

use crate::fixtures::*;
use crate::status::*;

struct Case {
    name: &'static str,
    prev: Option<TaskStatus>,
    job: Option<JobFixture>,
    cm: Option<ResultFixture>,
    pods: Vec<PodFixture>,
    phase: Option<Phase>,
    reason: Option<&'static str>,
    exit_code: Option<i32>,
    next: Next,
}

#[test]
fn table() {
    let cases = vec![
        Case {
            name: "new job runs",
            prev: None,
            job: Some(JobFixture::ours()),
            cm: None,
            pods: vec![],
            phase: Some(Phase::Running),
            reason: None,
            exit_code: None,
            next: Next::Running,
        },
        Case {
            name: "complete with result",
            prev: Some(running()),
            job: Some(JobFixture::ours().complete()),
            cm: Some(ResultFixture::new("42\n")),
            pods: vec![],
            phase: Some(Phase::Completed),
            reason: Some(reasons::SUCCEEDED),
            exit_code: Some(0),
            next: Next::Done,
        },
        Case {
            name: "complete without result",
            prev: Some(running()),
            job: Some(JobFixture::ours().complete()),
            cm: None,
            pods: vec![],
            phase: Some(Phase::Failed),
            reason: Some(reasons::RESULT_MISSING),
            exit_code: None,
            next: Next::Done,
        },
        Case {
            name: "result of a foreign job ignored",
            prev: Some(running()),
            job: Some(JobFixture::ours().complete()),
            cm: Some(ResultFixture::new("forged").of_job("other-job")),
            pods: vec![],
            phase: Some(Phase::Failed),
            reason: Some(reasons::RESULT_MISSING),
            exit_code: None,
            next: Next::Done,
        },
        Case {
            name: "result of a foreign task ignored",
            prev: Some(running()),
            job: Some(JobFixture::ours().complete()),
            cm: Some(ResultFixture::new("forged").of_task("other-task")),
            pods: vec![],
            phase: Some(Phase::Failed),
            reason: Some(reasons::RESULT_MISSING),
            exit_code: None,
            next: Next::Done,
        },
        Case {
            name: "deadline exceeded",
            prev: Some(running()),
            job: Some(JobFixture::ours().failed("DeadlineExceeded")),
            cm: None,
            pods: vec![],
            phase: Some(Phase::Failed),
            reason: Some(reasons::DEADLINE_EXCEEDED),
            exit_code: None,
            next: Next::Done,
        },
        Case {
            name: "backoff limit with result exit code",
            prev: Some(running()),
            job: Some(
                JobFixture::ours()
                    .failed("BackoffLimitExceeded")
                    .failed_pods(2),
            ),
            cm: Some(ResultFixture::new("").exit(3)),
            pods: vec![],
            phase: Some(Phase::Failed),
            reason: Some(reasons::BACKOFF_LIMIT_EXCEEDED),
            exit_code: Some(3),
            next: Next::Done,
        },
        Case {
            name: "backoff limit, exit code from last pod",
            prev: Some(running()),
            job: Some(
                JobFixture::ours()
                    .failed("BackoffLimitExceeded")
                    .failed_pods(2),
            ),
            cm: None,
            pods: vec![
                PodFixture::new("p1").exited(4),
                PodFixture::new("p2").created_at(2).exited(5),
            ],
            phase: Some(Phase::Failed),
            reason: Some(reasons::BACKOFF_LIMIT_EXCEEDED),
            exit_code: Some(5),
            next: Next::Done,
        },
        Case {
            name: "other job failure",
            prev: Some(running()),
            job: Some(JobFixture::ours().failed("PodFailurePolicy")),
            cm: None,
            pods: vec![],
            phase: Some(Phase::Failed),
            reason: Some(reasons::JOB_FAILED),
            exit_code: None,
            next: Next::Done,
        },
        Case {
            name: "job of another task: wait",
            prev: None,
            job: Some(JobFixture::other("other-task").uid("j9")),
            cm: None,
            pods: vec![],
            phase: None,
            reason: Some(reasons::JOB_OWNED_BY_OTHER),
            exit_code: None,
            next: Next::Blocked,
        },
        Case {
            name: "job without controller: wait",
            prev: None,
            job: Some(JobFixture::unowned().uid("j9")),
            cm: None,
            pods: vec![],
            phase: None,
            reason: Some(reasons::JOB_OWNED_BY_OTHER),
            exit_code: None,
            next: Next::Blocked,
        },
        Case {
            name: "job replaced: never adopted",
            prev: Some(running()),
            job: Some(JobFixture::ours().uid("j2")),
            cm: None,
            pods: vec![],
            phase: Some(Phase::Failed),
            reason: Some(reasons::JOB_LOST),
            exit_code: None,
            next: Next::Done,
        },
        Case {
            name: "job gone after writing a result",
            prev: Some(running()),
            job: None,
            cm: Some(ResultFixture::new("ok")),
            pods: vec![],
            phase: Some(Phase::Completed),
            reason: Some(reasons::SUCCEEDED),
            exit_code: Some(0),
            next: Next::Done,
        },
        Case {
            name: "job gone, failed result",
            prev: Some(running()),
            job: None,
            cm: Some(ResultFixture::new("").exit(7)),
            pods: vec![],
            phase: Some(Phase::Failed),
            // The Job's verdict is gone; its last pod failed and no
            // deadline passed, so it ran out of retries (issue 9, item 7).
            reason: Some(reasons::BACKOFF_LIMIT_EXCEEDED),
            exit_code: Some(7),
            next: Next::Done,
        },
        Case {
            name: "job gone without result",
            prev: Some(running()),
            job: None,
            cm: None,
            pods: vec![],
            phase: Some(Phase::Failed),
            reason: Some(reasons::JOB_LOST),
            exit_code: None,
            next: Next::Done,
        },
        Case {
            name: "image pull failure is visible",
            prev: Some(running()),
            job: Some(JobFixture::ours()),
            cm: None,
            pods: vec![PodFixture::new("p1").waiting("ImagePullBackOff")],
            phase: Some(Phase::Running),
            reason: Some(reasons::IMAGE_PULL_FAILED),
            exit_code: None,
            next: Next::Running,
        },
        Case {
            name: "config error is visible",
            prev: Some(running()),
            job: Some(JobFixture::ours()),
            cm: None,
            pods: vec![PodFixture::new("p1").waiting("CreateContainerConfigError")],
            phase: Some(Phase::Running),
            reason: Some(reasons::CREATE_CONTAINER_CONFIG_ERROR),
            exit_code: None,
            next: Next::Running,
        },
        Case {
            name: "retrying keeps the last exit code",
            prev: Some(running()),
            job: Some(JobFixture::ours().failed_pods(1)),
            cm: None,
            pods: vec![
                PodFixture::new("p1").exited(3),
                PodFixture::new("p2").created_at(2),
            ],
            phase: Some(Phase::Running),
            reason: None,
            exit_code: Some(3),
            next: Next::Running,
        },
    ];
    for c in cases {
        let job = c.job.map(JobFixture::build);
        let cm = c.cm.map(ResultFixture::build);
        let pods: Vec<Pod> = c.pods.into_iter().map(PodFixture::build).collect();
        let t = Task::test().status(c.prev.clone());
        let d = desired(&t, &obs(job.as_ref(), cm.as_ref(), &pods));
        let s = &d.status;
        assert_eq!(s.phase, c.phase, "{}: phase", c.name);
        assert_eq!(
            s.reason.as_deref(),
            c.reason,
            "{}: reason ({:?})",
            c.name,
            s.message
        );
        assert_eq!(s.exit_code, c.exit_code, "{}: exit code", c.name);
        assert_eq!(d.next, c.next, "{}: next", c.name);
        assert_eq!(s.observed_generation, Some(1), "{}", c.name);
        let finished = cond(s, types::FINISHED).map(|c| c.status.as_str());
        let terminal = c.phase.is_some_and(Phase::is_terminal);
        assert_eq!(
            finished,
            Some(if terminal { "True" } else { "False" }),
            "{}: Finished",
            c.name
        );
        // Idempotence: computing again from the written status changes nothing.
        let again = desired(
            &Task::test().status(s.clone()),
            &obs(job.as_ref(), cm.as_ref(), &pods),
        );
        assert_eq!(&again.status, s, "{}: second pass", c.name);
        assert!(
            !needs_patch(Some(s), &again.status),
            "{}: second patch",
            c.name
        );
    }
}
