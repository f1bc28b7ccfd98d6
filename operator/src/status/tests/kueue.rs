//! A Kueue-managed Job: where its Workload stands becomes the Task's
//! reason and message (`kueue::standing`), and a stop deactivates the
//! Workload rather than suspending the Job (`kueue::stop`).

use crds::conditions::{Reason, reasons, types};
use crds::{Phase, Task};
use serde_json::json;

use crate::fixtures::*;
use crate::status::kueue::{self, NO_WORKLOAD_LOOK, PENDING_LOOK, Seen, Stop, Workload};
use crate::status::{Next, Observed, desired, stop};

const FLAVORS: &str = "couldn't assign flavors to pod set main: insufficient unused quota for \
                       cpu in flavor default, 1 more needed";
const PREEMPTED: &str = "Preempted to accommodate a workload (UID: u2, JobUID: j2) due to \
                         prioritization in the ClusterQueue";

/// A Workload `job-t-1` in LocalQueue `lq` with `conditions` (type,
/// status, reason, message), admitted to ClusterQueue `cq` when `admitted`.
fn workload(active: bool, admitted: bool, conditions: &[(&str, &str, &str, &str)]) -> Workload {
    let conds: Vec<_> = conditions
        .iter()
        .map(|(t, s, r, m)| json!({"type": t, "status": s, "reason": r, "message": m}))
        .collect();
    let mut v = json!({
        "metadata": {"name": "job-t-1"},
        "spec": {"queueName": "lq", "active": active},
        "status": {"conditions": conds},
    });
    if admitted {
        v["status"]["admission"] = json!({"clusterQueue": "cq"});
    }
    Workload::from_value(&v)
}

#[test]
fn workload_conditions_map_to_reason_and_message() {
    struct Case {
        name: &'static str,
        seen: Seen,
        reason: Reason,
        says: &'static [&'static str],
        look: std::time::Duration,
    }
    let pending = ("QuotaReserved", "False", "Pending", FLAVORS);
    let cases = [
        Case {
            name: "no Workload yet",
            seen: Seen::NoWorkload,
            reason: Reason::QuotaPending,
            says: &["create the Job's Workload", "LocalQueue lq"],
            look: NO_WORKLOAD_LOOK,
        },
        Case {
            name: "not looked at yet",
            seen: Seen::Workload(workload(true, false, &[])),
            reason: Reason::QuotaPending,
            says: &["Workload job-t-1 in LocalQueue lq", "not considered"],
            look: PENDING_LOOK,
        },
        Case {
            name: "waits for quota",
            seen: Seen::Workload(workload(true, false, &[pending])),
            reason: Reason::QuotaPending,
            says: &["LocalQueue lq waits for quota", FLAVORS],
            look: PENDING_LOOK,
        },
        Case {
            name: "quota reserved, checks pending",
            seen: Seen::Workload(workload(
                true,
                true,
                &[("QuotaReserved", "True", "QuotaReserved", "")],
            )),
            reason: Reason::QuotaPending,
            says: &["holds quota in ClusterQueue cq", "admission checks"],
            look: PENDING_LOOK,
        },
        Case {
            name: "admitted, not resumed yet",
            seen: Seen::Workload(workload(
                true,
                true,
                &[
                    (
                        "QuotaReserved",
                        "True",
                        "QuotaReserved",
                        "Quota reserved in ClusterQueue cq",
                    ),
                    ("Admitted", "True", "Admitted", "The workload is admitted"),
                ],
            )),
            reason: Reason::Admitted,
            says: &["admitted by ClusterQueue cq", "resuming the Job"],
            look: PENDING_LOOK,
        },
        Case {
            name: "preempted, waiting again",
            seen: Seen::Workload(workload(
                true,
                false,
                &[
                    ("Evicted", "True", "Preempted", PREEMPTED),
                    ("Preempted", "True", "InClusterQueue", PREEMPTED),
                    ("QuotaReserved", "False", "Pending", FLAVORS),
                    (
                        "Admitted",
                        "False",
                        "NoReservation",
                        "The workload has no reservation",
                    ),
                ],
            )),
            reason: Reason::Preempted,
            says: &["evicted by Kueue (Preempted)", PREEMPTED, FLAVORS],
            look: PENDING_LOOK,
        },
        Case {
            name: "preempted condition alone",
            seen: Seen::Workload(workload(
                true,
                false,
                &[("Preempted", "True", "InClusterQueue", PREEMPTED), pending],
            )),
            reason: Reason::Preempted,
            says: &[PREEMPTED],
            look: PENDING_LOOK,
        },
        Case {
            name: "evicted for another reason",
            seen: Seen::Workload(workload(
                true,
                false,
                &[(
                    "Evicted",
                    "True",
                    "ClusterQueueStopped",
                    "The ClusterQueue is stopped",
                )],
            )),
            reason: Reason::Evicted,
            says: &["(ClusterQueueStopped)", "The ClusterQueue is stopped"],
            look: PENDING_LOOK,
        },
        Case {
            name: "deactivated",
            seen: Seen::Workload(workload(
                false,
                false,
                &[(
                    "Evicted",
                    "True",
                    "Deactivated",
                    "The workload is deactivated",
                )],
            )),
            reason: Reason::Evicted,
            says: &["deactivated (spec.active: false)"],
            look: PENDING_LOOK,
        },
    ];
    let job = JobFixture::ours().queued_in("lq").suspended().build();
    for c in cases {
        let (reason, message, look) = kueue::standing(&job, &c.seen);
        assert_eq!(reason, c.reason, "{}: {message}", c.name);
        for s in c.says {
            assert!(message.contains(s), "{}: {message:?} lacks {s:?}", c.name);
        }
        assert_eq!(look, c.look, "{}", c.name);
    }
}

/// The Job of `Task::test()` in LocalQueue `lq`, suspended, no pod.
fn held() -> k8s_openapi::api::batch::v1::Job {
    JobFixture::ours()
        .queued_in("lq")
        .active(0)
        .suspended()
        .build()
}

fn seen_obs<'a>(job: &'a k8s_openapi::api::batch::v1::Job, seen: &'a Seen) -> Observed<'a> {
    Observed {
        kueue: Some(seen),
        ..obs(Some(job), None, &[])
    }
}

#[test]
fn a_job_kueue_holds_is_queued_with_kueues_words() {
    // Pending, and preempted after a run (the Job controller deleted the
    // pod without counting it failed: no attempt charged).
    let cases = [
        (
            ("QuotaReserved", "False", "Pending", FLAVORS),
            reasons::QUOTA_PENDING,
        ),
        (
            ("Evicted", "True", "Preempted", PREEMPTED),
            reasons::PREEMPTED,
        ),
    ];
    let t = Task::test().running();
    let j = held();
    for (condition, reason) in cases {
        let seen = Seen::Workload(workload(true, false, &[condition]));
        let d = desired(&t, &seen_obs(&j, &seen));
        assert_eq!(d.status.phase, Some(Phase::Queued), "{reason}");
        assert_eq!(d.status.reason.as_deref(), Some(reason));
        assert!(d.status.message.as_deref().unwrap().contains(condition.3));
        let w = cond(&d.status, types::WAITING).unwrap();
        assert_eq!((w.status.as_str(), w.reason.as_str()), ("True", reason));
        assert_eq!(d.status.attempts, Some(1), "{reason}");
        assert_eq!(d.next, Next::Wake(PENDING_LOOK));
    }
    // Without Kueue's word (not installed): Suspended, as before.
    let d = desired(&t, &obs(Some(&j), None, &[]));
    assert_eq!(d.status.reason.as_deref(), Some(reasons::SUSPENDED));
}

#[test]
fn a_cancel_under_kueue_deactivates_the_workload() {
    let t = Task::test().running().cancelled();
    let running = JobFixture::ours().queued_in("lq").build();
    let admitted = Seen::Workload(workload(
        true,
        true,
        &[("Admitted", "True", "Admitted", "")],
    ));
    let d = desired(&t, &seen_obs(&running, &admitted));
    assert_eq!(d.status.phase, Some(Phase::Running));
    assert_eq!(
        stop(&t, Some(&running), &d.status, Some(&admitted)),
        Some(Stop::Deactivate("job-t-1".to_owned())),
        "suspending the Job would not do: Kueue resumes it while admitted"
    );
    // Kueue suspended the Job and its pod is gone, but Kueue has not seen
    // the deactivation yet: still cancelling, no second stop.
    let suspended = held();
    let d = desired(&t, &seen_obs(&suspended, &admitted));
    assert_eq!(d.status.phase, Some(Phase::Running));
    let inactive = Seen::Workload(workload(
        false,
        false,
        &[(
            "Evicted",
            "True",
            "Deactivated",
            "The workload is deactivated",
        )],
    ));
    assert_eq!(stop(&t, Some(&running), &d.status, Some(&inactive)), None);
    // Deactivated, suspended, no pods: Cancelled for good.
    let d = desired(&t, &seen_obs(&suspended, &inactive));
    assert_eq!(d.status.phase, Some(Phase::Failed));
    assert_eq!(d.status.reason.as_deref(), Some(reasons::CANCELLED));
    // Kueue has made no Workload yet: wait for it, never end the cancel
    // with a Job Kueue could still admit.
    let d = desired(&t, &seen_obs(&suspended, &Seen::NoWorkload));
    assert_eq!(d.status.phase, Some(Phase::Running));
    assert!(
        d.status
            .message
            .as_deref()
            .unwrap()
            .contains("waiting for Kueue's Workload")
    );
    assert_eq!(
        stop(&t, Some(&suspended), &d.status, Some(&Seen::NoWorkload)),
        None
    );
}

#[test]
fn only_a_kueue_job_that_is_held_or_stopping_reads_its_workload() {
    use crate::reconcile::read_plan::reads;
    let t = Task::test().running();
    let held = JobFixture::ours().queued_in("lq").suspended().build();
    assert!(reads(&t, Some(&held)).workload);
    let running = JobFixture::ours().queued_in("lq").build();
    assert!(!reads(&t, Some(&running)).workload);
    assert!(reads(&t.clone().cancelled(), Some(&running)).workload);
    let done = JobFixture::ours().queued_in("lq").complete().build();
    assert!(!reads(&t.clone().cancelled(), Some(&done)).workload);
    let plain = JobFixture::ours().suspended().build();
    assert!(!reads(&t, Some(&plain)).workload);
}
