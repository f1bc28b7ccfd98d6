//! Pure: where a Kueue-managed Job stands, in Kueue's terms, read from the
//! Workload Kueue made for it (`workloads.kueue.x-k8s.io`, labelled with the
//! Job's UID): waiting for quota, admitted, preempted, evicted, deactivated.

use std::time::Duration;

use crds::conditions::Reason;
use crds::names::labels;
use k8s_openapi::api::batch::v1::Job;
use serde_json::Value;

/// How soon to look again at a Task whose Job Kueue holds: Kueue's
/// admission and preemption change the Job (its watch wakes the Task);
/// only a new pending message does not.
pub const PENDING_LOOK: Duration = Duration::from_secs(10);
/// How soon to look again while Kueue has not made the Workload yet.
pub const NO_WORKLOAD_LOOK: Duration = Duration::from_secs(2);

/// The parts of a Kueue Workload the status reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    pub name: String,
    /// `spec.active` (absent means true); false once deactivated.
    pub active: bool,
    /// `spec.queueName`: the LocalQueue.
    pub queue: String,
    /// `status.admission.clusterQueue`, while it holds quota.
    pub cluster_queue: Option<String>,
    /// `status.conditions`: type, status, reason, message.
    pub conditions: Vec<WlCondition>,
}

/// One condition of a Workload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WlCondition {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// What the reconcile found of Kueue for a Kueue-managed Job (Kueue
/// installed: its Workload API is served).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Kueue has not made the Job's Workload (yet).
    NoWorkload,
    Workload(Workload),
}

impl Workload {
    /// Reads a Workload (as JSON); missing fields read as empty.
    pub fn from_value(v: &Value) -> Workload {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Workload {
            name: s(&v["metadata"]["name"]),
            active: v["spec"]["active"].as_bool().unwrap_or(true),
            queue: s(&v["spec"]["queueName"]),
            cluster_queue: v["status"]["admission"]["clusterQueue"]
                .as_str()
                .map(str::to_owned),
            conditions: v["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| WlCondition {
                    type_: s(&c["type"]),
                    status: s(&c["status"]),
                    reason: s(&c["reason"]),
                    message: s(&c["message"]),
                })
                .collect(),
        }
    }

    /// The condition of type `t` if it is True.
    fn is(&self, t: &str) -> Option<&WlCondition> {
        self.conditions
            .iter()
            .find(|c| c.type_ == t && c.status == "True")
    }

    /// The condition of type `t`, whatever its status.
    fn any(&self, t: &str) -> Option<&WlCondition> {
        self.conditions.iter().find(|c| c.type_ == t)
    }
}

/// True when Kueue manages the Job: it carries `kueue.x-k8s.io/queue-name`.
pub fn manages(job: &Job) -> bool {
    job.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(labels::KUEUE_QUEUE_NAME))
}

/// The LocalQueue the Job names.
fn local_queue(job: &Job) -> &str {
    job.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::KUEUE_QUEUE_NAME))
        .map_or("", String::as_str)
}

/// Where the suspended Job stands in Kueue: the reason, Kueue's message
/// (with the LocalQueue, ClusterQueue and Workload), and when to look again.
pub fn standing(job: &Job, seen: &Seen) -> (Reason, String, Duration) {
    let wl = match seen {
        Seen::NoWorkload => {
            return (
                Reason::QuotaPending,
                format!(
                    "waiting for Kueue to create the Job's Workload (LocalQueue {})",
                    local_queue(job)
                ),
                NO_WORKLOAD_LOOK,
            );
        }
        Seen::Workload(w) => w,
    };
    let queue = if wl.queue.is_empty() {
        local_queue(job)
    } else {
        &wl.queue
    };
    let at = format!("Kueue Workload {} in LocalQueue {queue}", wl.name);
    // Why it still holds no quota (Kueue's "couldn't assign flavors ...").
    let pending = wl
        .any("QuotaReserved")
        .filter(|c| c.status != "True" && !c.message.is_empty())
        .map(|c| c.message.as_str());
    let (reason, message) = if !wl.active {
        (
            Reason::Evicted,
            format!(
                "{at} is deactivated (spec.active: false): Kueue keeps the Job suspended until \
                 it is reactivated"
            ),
        )
    } else if let Some(ev) = wl.is("Evicted") {
        evicted(&at, &ev.reason, &ev.message, pending)
    } else if let Some(adm) = wl.is("Admitted") {
        admitted(&at, wl.cluster_queue.as_deref(), &adm.message)
    } else if let Some(p) = wl.is("Preempted") {
        evicted(&at, "Preempted", &p.message, pending)
    } else if wl.is("QuotaReserved").is_some() {
        let cq = wl.cluster_queue.as_deref().unwrap_or("?");
        (
            Reason::QuotaPending,
            format!("{at} holds quota in ClusterQueue {cq} and waits for its admission checks"),
        )
    } else {
        (
            Reason::QuotaPending,
            format!(
                "{at} waits for quota: {}",
                pending.unwrap_or("Kueue has not considered it yet")
            ),
        )
    };
    (reason, message, PENDING_LOOK)
}

/// An admitted Workload, by ClusterQueue `cq`, with Kueue's message.
fn admitted(at: &str, cq: Option<&str>, message: &str) -> (Reason, String) {
    let cq = cq.unwrap_or("?");
    let msg = if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    };
    (
        Reason::Admitted,
        format!("{at} was admitted by ClusterQueue {cq}{msg}; Kueue is resuming the Job"),
    )
}

/// An evicted Workload: Preempted when Kueue preempted it, else Evicted
/// with Kueue's reason; and why it waits now, if Kueue says.
fn evicted(at: &str, why: &str, message: &str, pending: Option<&str>) -> (Reason, String) {
    let reason = if why == "Preempted" {
        Reason::Preempted
    } else {
        Reason::Evicted
    };
    let mut m = format!("{at} was evicted by Kueue ({why}): {message}");
    match pending {
        Some(p) if p != message => m.push_str(&format!("; waits for quota again: {p}")),
        _ => m.push_str("; waits for quota again"),
    }
    (reason, m)
}

/// How a Task's unfinished Job is stopped for good (cancel, start timeout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Suspend it: the Job controller deletes its pods (SIGTERM).
    Suspend,
    /// Deactivate its Kueue Workload (`spec.active: false`): Kueue evicts it
    /// and suspends the Job, and never admits it again. Suspending the Job
    /// ourselves would not do: Kueue resumes a suspended Job whose Workload
    /// is admitted.
    Deactivate(String),
}

/// How to stop a Job that is still running (`None`: it is stopped, or
/// Kueue is stopping it): `kueue` is what was read of Kueue for it (`None`
/// when Kueue does not manage it or is not installed).
pub fn stop(job: &Job, kueue: Option<&Seen>) -> Option<Stop> {
    let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    match kueue {
        Some(Seen::Workload(w)) if w.active => Some(Stop::Deactivate(w.name.clone())),
        Some(Seen::Workload(_)) => None,
        _ if suspended => None,
        _ => Some(Stop::Suspend),
    }
}

/// True when a stop is complete as far as Kueue goes: Kueue does not
/// manage the Job, or its Workload is deactivated (so Kueue never resumes it).
pub fn stopped_for_good(kueue: Option<&Seen>) -> bool {
    match kueue {
        None => true,
        Some(Seen::NoWorkload) => false,
        Some(Seen::Workload(w)) => !w.active,
    }
}
