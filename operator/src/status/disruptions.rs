//! Pure: the pods of a Task stopped by a disruption (preemption, eviction,
//! node drain), as their DisruptionTarget condition says, counted once each.
//! The Job's podFailurePolicy ignores those failures, so they use no retry;
//! the status counts them and names the newest.
//!
//! Level-based: `status.disruptedPods` holds the UIDs of the disrupted pods
//! seen at the last write, so a pod is counted the first time it is seen
//! and never again, and the list forgets a pod once a read of every pod
//! (the API server's, at the end) no longer shows it. A read of the live
//! pods only (the pod cache holds no finished pod) forgets none: a
//! disrupted pod that has since failed is out of sight, not gone.

use crds::{Disruption, TaskStatus};
use k8s_openapi::api::core::v1::{Pod, PodCondition};

/// The condition the API server (Eviction API, preemption) or the kubelet
/// sets on a pod it is about to stop for reasons not the pod's own.
pub const CONDITION: &str = "DisruptionTarget";

/// What the status says of disruptions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// `status.disruptions`: `None` until the first.
    pub count: Option<i32>,
    pub last: Option<Disruption>,
    /// `status.disruptedPods`: UIDs, sorted.
    pub pods: Vec<String>,
}

/// The tally recorded in `prev`.
pub fn carried(prev: &TaskStatus) -> Tally {
    Tally {
        count: prev.disruptions,
        last: prev.last_disruption.clone(),
        pods: prev.disrupted_pods.clone(),
    }
}

/// The pod's DisruptionTarget condition, when True.
pub fn condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == CONDITION && c.status == "True")
}

/// `prev`'s tally plus the disrupted pods among `pods` it has not counted.
/// `live_only`: `pods` are the live ones only, so the ones `prev` counted
/// and `pods` lack are kept.
pub fn tally(prev: &TaskStatus, pods: &[Pod], live_only: bool) -> Tally {
    let mut disrupted: Vec<(&Pod, &PodCondition)> = pods
        .iter()
        .filter_map(|p| Some((p, condition(p)?)))
        .collect();
    // Oldest first, so the last new one is the newest disruption.
    disrupted.sort_by(|(a, ca), (b, cb)| {
        (&ca.last_transition_time, &a.metadata.name)
            .cmp(&(&cb.last_transition_time, &b.metadata.name))
    });
    let uid = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
    let new: Vec<&(&Pod, &PodCondition)> = disrupted
        .iter()
        .filter(|(p, _)| !prev.disrupted_pods.contains(&uid(p)))
        .collect();
    let added = i32::try_from(new.len()).unwrap_or(i32::MAX);
    let count = match (prev.disruptions, added) {
        (c, 0) => c,
        (c, n) => Some(c.unwrap_or(0).saturating_add(n)),
    };
    let last = new
        .last()
        .map(|(p, c)| Disruption {
            pod: p.metadata.name.clone().unwrap_or_default(),
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
            at: c.last_transition_time.clone(),
        })
        .or_else(|| prev.last_disruption.clone());
    let mut pods: Vec<String> = disrupted.iter().map(|(p, _)| uid(p)).collect();
    if live_only {
        pods.extend(prev.disrupted_pods.iter().cloned());
    }
    pods.sort();
    pods.dedup();
    Tally { count, last, pods }
}

/// How a disruption reads in an Event: "pod p was evicted (reason: message)".
pub fn describe(d: &Disruption) -> String {
    let how = match d.reason.as_str() {
        "EvictionByEvictionAPI" => "was evicted",
        "PreemptionByScheduler" => "was preempted",
        "DeletionByTaintManager" => "was deleted from a tainted node",
        "TerminationByKubelet" => "was stopped by its node's kubelet",
        "DeletionByPodGC" => "was deleted by the pod garbage collector",
        _ => "was disrupted",
    };
    let mut s = format!("pod {} {how}", d.pod);
    match (d.reason.is_empty(), d.message.is_empty()) {
        (false, false) => s.push_str(&format!(" ({}: {})", d.reason, d.message)),
        (false, true) => s.push_str(&format!(" ({})", d.reason)),
        _ => {}
    }
    s
}
