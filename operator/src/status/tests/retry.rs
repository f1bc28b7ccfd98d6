//! Retries: exit codes that fail at once (`spec.failOnExitCodes`, the
//! Job's podFailurePolicy FailJob/FailIndex), and disruptions, which use no
//! retry and are counted once each.

use crds::conditions::reasons;
use crds::{Phase, Task, TaskStatus};
use k8s_openapi::api::core::v1::Pod;

use crate::fixtures::*;
use crate::status::*;

const POLICY_MESSAGE: &str =
    "Container worker for pod ns/t-abcde failed with exit code 42 matching FailJob rule at index 1";

struct Case {
    name: &'static str,
    task: Task,
    job: Option<JobFixture>,
    cm: Option<ResultFixture>,
    pods: Vec<PodFixture>,
    reason: &'static str,
    exit_code: Option<i32>,
    /// Words the message must hold.
    says: &'static [&'static str],
}

#[test]
fn fail_on_exit_codes_table() {
    let listed = || Task::test().retries(3).fail_on(&[3, 42]).running();
    let cases = vec![
        Case {
            name: "listed code, result read",
            task: listed(),
            job: Some(JobFixture::ours().failed("PodFailurePolicy")),
            cm: Some(ResultFixture::new("bad input").exit(3)),
            pods: vec![],
            reason: reasons::FAIL_ON_EXIT_CODE,
            exit_code: Some(3),
            says: &[
                "code 3",
                "spec.failOnExitCodes",
                "without retrying",
                "attempt 1;",
                "spec.retries: 3",
            ],
        },
        Case {
            name: "listed code, from the pod",
            task: listed(),
            job: Some(JobFixture::ours().failed("PodFailurePolicy")),
            cm: None,
            pods: vec![PodFixture::new("p1").exited(3)],
            reason: reasons::FAIL_ON_EXIT_CODE,
            exit_code: Some(3),
            says: &["code 3", "spec.failOnExitCodes"],
        },
        Case {
            name: "listed code, only the Job controller's message",
            task: listed(),
            job: Some(
                JobFixture::ours()
                    .failed("PodFailurePolicy")
                    .message(POLICY_MESSAGE),
            ),
            cm: None,
            pods: vec![],
            reason: reasons::FAIL_ON_EXIT_CODE,
            exit_code: Some(42),
            says: &["code 42", "spec.failOnExitCodes"],
        },
        Case {
            name: "another code runs out of retries",
            task: listed(),
            job: Some(
                JobFixture::ours()
                    .failed("BackoffLimitExceeded")
                    .failed_pods(4),
            ),
            cm: Some(ResultFixture::new("").exit(4)),
            pods: vec![],
            reason: reasons::BACKOFF_LIMIT_EXCEEDED,
            exit_code: Some(4),
            says: &["all 4 attempts", "spec.retries: 3"],
        },
        Case {
            name: "cancelled: SIGTERM's listed 143 is the cancel's",
            task: Task::test().fail_on(&[143]).cancelled().running(),
            job: Some(JobFixture::ours().failed("PodFailurePolicy").suspended()),
            cm: Some(ResultFixture::new("partial").exit(143)),
            pods: vec![],
            reason: reasons::CANCELLED,
            exit_code: Some(143),
            says: &["cancelled (spec.cancel)", "SIGTERM"],
        },
        Case {
            name: "no codes listed: a policy failure is the Job's",
            task: Task::test().running(),
            job: Some(JobFixture::ours().failed("PodFailurePolicy")),
            cm: None,
            pods: vec![],
            reason: reasons::JOB_FAILED,
            exit_code: None,
            says: &["PodFailurePolicy"],
        },
        Case {
            name: "Job gone (TTL), listed code in the result",
            task: listed(),
            job: None,
            cm: Some(ResultFixture::new("bad input").exit(42)),
            pods: vec![],
            reason: reasons::FAIL_ON_EXIT_CODE,
            exit_code: Some(42),
            says: &["code 42", "spec.failOnExitCodes"],
        },
        Case {
            name: "Job gone (TTL), another code",
            task: listed(),
            job: None,
            cm: Some(ResultFixture::new("").exit(5)),
            pods: vec![],
            reason: reasons::BACKOFF_LIMIT_EXCEEDED,
            exit_code: Some(5),
            says: &["last exit code 5"],
        },
    ];
    for c in cases {
        let job = c.job.map(JobFixture::build);
        let cm = c.cm.map(ResultFixture::build);
        let pods: Vec<Pod> = c.pods.into_iter().map(PodFixture::build).collect();
        let d = desired(&c.task, &obs(job.as_ref(), cm.as_ref(), &pods));
        let s = &d.status;
        let msg = s.message.clone().unwrap_or_default();
        assert_eq!(s.phase, Some(Phase::Failed), "{}: {msg}", c.name);
        assert_eq!(s.reason.as_deref(), Some(c.reason), "{}: {msg}", c.name);
        assert_eq!(s.exit_code, c.exit_code, "{}: {msg}", c.name);
        for w in c.says {
            assert!(msg.contains(w), "{}: {w:?} not in {msg:?}", c.name);
        }
    }
}

/// (name, previous status, pods now, job's active and failed counts,
/// disruptions, last disrupted pod, disrupted pod UIDs, attempts).
type DisruptionCase = (
    &'static str,
    TaskStatus,
    Vec<PodFixture>,
    (i32, i32),
    Option<i32>,
    Option<&'static str>,
    Vec<&'static str>,
    i32,
);

#[test]
fn disruptions_table() {
    let evicted = |name: &str, uid: &str, s: i64| {
        PodFixture::new(name)
            .uid(uid)
            .created_at(s - 50)
            .exited(143)
            .disrupted("EvictionByEvictionAPI", s)
    };
    let replacement = PodFixture::new("p9").uid("u9").created_at(300);
    let counted = |n: i32, pods: &[&str]| TaskStatus {
        disruptions: Some(n),
        disrupted_pods: pods.iter().map(|p| (*p).to_owned()).collect(),
        last_disruption: Some(crds::Disruption {
            pod: "p1".into(),
            reason: "EvictionByEvictionAPI".into(),
            message: "evicting".into(),
            at: Some(at(150)),
        }),
        ..running()
    };
    let cases: Vec<DisruptionCase> = vec![
        (
            "none",
            running(),
            vec![replacement.clone()],
            (1, 0),
            None,
            None,
            vec![],
            1,
        ),
        (
            "evicted, not yet replaced",
            running(),
            vec![evicted("p1", "u1", 150)],
            (0, 0),
            Some(1),
            Some("p1"),
            vec!["u1"],
            1,
        ),
        (
            "evicted and replaced: no new attempt",
            running(),
            vec![evicted("p1", "u1", 150), replacement.clone()],
            (1, 0),
            Some(1),
            Some("p1"),
            vec!["u1"],
            1,
        ),
        (
            "counted once",
            counted(1, &["u1"]),
            vec![evicted("p1", "u1", 150), replacement.clone()],
            (1, 0),
            Some(1),
            Some("p1"),
            vec!["u1"],
            1,
        ),
        (
            "the evicted pod is gone: the count stays",
            counted(1, &["u1"]),
            vec![replacement.clone()],
            (1, 0),
            Some(1),
            Some("p1"),
            vec![],
            1,
        ),
        (
            "a second eviction",
            counted(1, &[]),
            vec![evicted("p2", "u2", 250), replacement.clone()],
            (1, 0),
            Some(2),
            Some("p2"),
            vec!["u2"],
            1,
        ),
        (
            "two at once: the newest is named",
            running(),
            vec![evicted("p3", "u3", 260), evicted("p2", "u2", 250)],
            (0, 0),
            Some(2),
            Some("p3"),
            vec!["u2", "u3"],
            1,
        ),
        (
            "a real failure is an attempt, not a disruption",
            running(),
            vec![
                PodFixture::new("p1").uid("u1").exited(3),
                replacement.clone(),
            ],
            (1, 1),
            None,
            None,
            vec![],
            2,
        ),
    ];
    for (name, prev, pods, (active, failed), count, last, uids, attempts) in cases {
        let job = JobFixture::ours()
            .active(active)
            .failed_pods(failed)
            .build();
        let pods: Vec<Pod> = pods.into_iter().map(PodFixture::build).collect();
        let task = Task::test().status(prev.clone());
        let d = desired(&task, &obs(Some(&job), None, &pods));
        let s = &d.status;
        assert_eq!(s.phase, Some(Phase::Running), "{name}");
        assert_eq!(s.disruptions, count, "{name}");
        assert_eq!(
            s.last_disruption.as_ref().map(|l| l.pod.as_str()),
            last,
            "{name}"
        );
        assert_eq!(s.disrupted_pods, uids, "{name}");
        assert_eq!(s.attempts, Some(attempts), "{name}");
        // Level-based: looking again at the same cluster changes nothing.
        let again = desired(
            &Task::test().status(s.clone()),
            &obs(Some(&job), None, &pods),
        );
        assert_eq!(&again.status, s, "{name}: second pass");
        // The Event: once per new disruption, never for a pod counted before.
        let disrupted_events = events::transitions(Some(&prev), s)
            .into_iter()
            .filter(|n| n.reason == events::EventReason::Disrupted)
            .count();
        let new = count.unwrap_or(0) > prev.disruptions.unwrap_or(0);
        assert_eq!(disrupted_events, usize::from(new), "{name}: Event");
    }
}

/// The pod cache holds live pods only: a disrupted pod counted while it
/// ran and out of the cache once it failed is neither forgotten nor, when
/// the final read lists it again, counted twice.
#[test]
fn a_disrupted_pod_out_of_the_cache_is_counted_once() {
    let evicted = PodFixture::new("p1")
        .uid("u1")
        .created_at(100)
        .disrupted("EvictionByEvictionAPI", 150)
        .build();
    let replacement = PodFixture::new("p9").uid("u9").created_at(300).build();
    let job = JobFixture::ours().active(1).build();
    let live = |pods: &[Pod], prev: &TaskStatus| {
        let o = Observed {
            pods_live_only: true,
            ..obs(Some(&job), None, pods)
        };
        desired(&Task::test().status(prev.clone()), &o).status
    };
    // Seen disrupted while it still runs: counted.
    let first = live(std::slice::from_ref(&evicted), &running());
    assert_eq!(first.disruptions, Some(1));
    assert_eq!(first.disrupted_pods, ["u1"]);
    // It failed and left the cache; its replacement runs: still known.
    let later = live(std::slice::from_ref(&replacement), &first);
    assert_eq!(later.disruptions, Some(1));
    assert_eq!(later.disrupted_pods, ["u1"]);
    // The final read lists every pod, the failed one too: not new.
    let done = JobFixture::ours().complete().build();
    let failed = PodFixture::new("p1")
        .uid("u1")
        .created_at(100)
        .exited(143)
        .disrupted("EvictionByEvictionAPI", 150)
        .build();
    let all = [failed, replacement];
    let end = desired(
        &Task::test().status(later.clone()),
        &obs(Some(&done), None, &all),
    );
    assert_eq!(end.status.disruptions, Some(1));
    // Had the live read forgotten it, the final read would count it again.
    let forgot = TaskStatus {
        disrupted_pods: vec![],
        ..later
    };
    let twice = desired(&Task::test().status(forgot), &obs(Some(&done), None, &all));
    assert_eq!(twice.status.disruptions, Some(2));
}

/// The pod garbage collector marks a pod Failed with DisruptionTarget in
/// one write (its node was deleted): the pod cache sees it only leave, and
/// the read that follows finds it ended disrupted (`departed`). Counted
/// once, with the collector's reason, and for nothing else: the exit code
/// of the live pods' status stays.
#[test]
fn a_pod_that_left_disrupted_is_counted_once() {
    let gone = PodFixture::new("p1")
        .uid("u1")
        .created_at(100)
        .exited(137)
        .disrupted("DeletionByPodGC", 200)
        .build();
    let replacement = PodFixture::new("p9").uid("u9").created_at(300).build();
    let job = JobFixture::ours().active(1).build();
    let with = |departed: &[Pod], prev: &TaskStatus| {
        let live = [replacement.clone()];
        let o = Observed {
            pods_live_only: true,
            departed,
            ..obs(Some(&job), None, &live)
        };
        desired(&Task::test().status(prev.clone()), &o).status
    };
    let first = with(std::slice::from_ref(&gone), &running());
    assert_eq!(first.disruptions, Some(1));
    assert_eq!(first.disrupted_pods, ["u1"]);
    let last = first.last_disruption.clone().expect("last disruption");
    assert_eq!(
        (last.pod.as_str(), last.reason.as_str()),
        ("p1", "DeletionByPodGC")
    );
    assert_eq!(
        first.exit_code,
        running().exit_code,
        "a departed pod gives no exit code"
    );
    // Read again (a mark set twice): not new.
    let again = with(std::slice::from_ref(&gone), &first);
    assert_eq!(again.disruptions, Some(1));
    // Later reconciles without it keep it known.
    let later = with(&[], &again);
    assert_eq!(
        (later.disruptions, later.disrupted_pods.clone()),
        (Some(1), vec!["u1".to_owned()])
    );
}
