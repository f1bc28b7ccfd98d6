//! What `logs` decides from what the cluster shows, without a client: which
//! pods are a Task's attempts, per shard and in order, whether a pod has
//! started or ended, and why a Task or pod still waits.

use std::collections::BTreeMap;

use crds::conditions::types;
use crds::names::annotations;
use crds::{Phase, Task};
use k8s_openapi::api::core::v1::Pod;

/// The pods of a Task's Job, by shard (0 for a Task that is not sharded),
/// each shard's oldest attempt first. Only pods the Job controller made
/// for the Job the Task names (status.jobUid) count: labels can be put on
/// any pod, a controller owner reference with the Job's UID only by the
/// Job controller (or by someone allowed to make pods run as the Job's).
/// Until the Task names its Job, it has no attempts.
pub fn attempts(task: &Task, pods: Vec<Pod>, only: Option<u32>) -> BTreeMap<u32, Vec<Pod>> {
    let job_uid = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    let mut by_shard: BTreeMap<u32, Vec<Pod>> = BTreeMap::new();
    for p in pods {
        if !job_uid.is_some_and(|uid| job_controls(&p, uid)) {
            continue;
        }
        let shard = shard_of(&p);
        if only.is_none_or(|s| s == shard) {
            by_shard.entry(shard).or_default().push(p);
        }
    }
    for list in by_shard.values_mut() {
        list.sort_by(|a, b| {
            let key = |p: &Pod| {
                (
                    p.metadata.creation_timestamp.clone().map(|t| t.0),
                    p.metadata.name.clone(),
                )
            };
            key(a).cmp(&key(b))
        });
    }
    by_shard
}

/// True when the pod's controller is the Job with UID `job_uid`.
fn job_controls(p: &Pod, job_uid: &str) -> bool {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.kind == "Job" && o.uid == job_uid)
}

/// The completion index of an Indexed Job's pod (annotation, or the label
/// newer Job controllers add too); 0 otherwise.
pub fn shard_of(p: &Pod) -> u32 {
    let m = &p.metadata;
    m.annotations
        .as_ref()
        .and_then(|a| a.get(annotations::JOB_COMPLETION_INDEX))
        .or_else(|| {
            m.labels
                .as_ref()
                .and_then(|l| l.get(annotations::JOB_COMPLETION_INDEX))
        })
        .and_then(|i| i.parse().ok())
        .unwrap_or(0)
}

/// True once the pod's container has run (so it has a log to read).
pub fn started(p: &Pod) -> bool {
    let Some(s) = p.status.as_ref() else {
        return false;
    };
    let ran = s.container_statuses.iter().flatten().any(|c| {
        c.state
            .as_ref()
            .is_some_and(|st| st.running.is_some() || st.terminated.is_some())
    });
    ran || s.phase.as_deref() == Some("Running")
}

/// True once the pod is over: Succeeded or Failed, or its container ended.
pub fn ended(p: &Pod) -> bool {
    let Some(s) = p.status.as_ref() else {
        return false;
    };
    matches!(s.phase.as_deref(), Some("Succeeded" | "Failed"))
        || s.container_statuses.iter().flatten().any(|c| {
            c.state
                .as_ref()
                .is_some_and(|st| st.terminated.is_some() && st.running.is_none())
        })
}

/// Why the Task as a whole waits: Queued (the status message holds the
/// queue position), or its Waiting condition (image, scheduling, config).
pub fn task_waits(t: &Task) -> Option<String> {
    let name = t.metadata.name.as_deref().unwrap_or_default();
    let s = t.status.as_ref()?;
    if s.phase == Some(Phase::Queued) {
        let why = s
            .message
            .as_deref()
            .or(s.reason.as_deref())
            .unwrap_or("waiting for a slot");
        return Some(format!("task {name} is Queued: {why}"));
    }
    let c = s
        .conditions
        .iter()
        .find(|c| c.type_ == types::WAITING && c.status == "True")?;
    Some(format!("task {name} waits: {}: {}", c.reason, c.message))
}

/// Why a pod that has not started waits: the scheduler's answer, else its
/// container's waiting reason (ContainerCreating, ImagePullBackOff…).
pub fn pod_waits(p: &Pod) -> String {
    let name = p.metadata.name.as_deref().unwrap_or_default();
    let s = p.status.clone().unwrap_or_default();
    let phase = s.phase.unwrap_or_else(|| "Pending".to_owned());
    let unscheduled = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    if let Some(c) = unscheduled {
        let reason = c.reason.as_deref().unwrap_or("Unschedulable");
        return match c.message.as_deref() {
            Some(m) => format!("pod {name} is {phase}: {reason}: {m}"),
            None => format!("pod {name} is {phase}: {reason}"),
        };
    }
    let waiting = s
        .container_statuses
        .iter()
        .flatten()
        .find_map(|c| c.state.as_ref().and_then(|st| st.waiting.clone()));
    match waiting {
        Some(w) => match (w.reason, w.message) {
            (Some(r), Some(m)) => format!("pod {name} is {phase}: {r}: {m}"),
            (Some(r), None) => format!("pod {name} is {phase}: {r}"),
            _ => format!("pod {name} is {phase}"),
        },
        None => format!("pod {name} is {phase}"),
    }
}

/// The line saying why following waits: the Task's own reason first, then
/// the pod's, else that the pod does not exist yet.
pub fn why_waiting(t: &Task, pod: Option<&Pod>) -> String {
    if let Some(why) = task_waits(t) {
        return why;
    }
    match pod {
        Some(p) => pod_waits(p),
        None => format!(
            "task {} has no pod yet",
            t.metadata.name.as_deref().unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::names::labels;
    use serde_json::{Value, json};

    fn task(status: Value) -> Task {
        serde_json::from_value(json!({
            "apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
            "metadata": {"name": "t", "uid": "u1"},
            "spec": {"command": ["true"]},
            "status": status,
        }))
        .expect("task")
    }

    fn pod(name: &str, created: &str, meta: Value, status: Value) -> Pod {
        let mut m = json!({"name": name, "creationTimestamp": created});
        if let (Some(m), Some(extra)) = (m.as_object_mut(), meta.as_object()) {
            m.extend(extra.clone());
        }
        serde_json::from_value(json!({"metadata": m, "status": status})).expect("pod")
    }

    fn running() -> Value {
        json!({"phase": "Running", "containerStatuses": [{"name": "worker", "image": "i",
            "imageID": "", "ready": true, "restartCount": 0,
            "state": {"running": {}}}]})
    }

    fn failed() -> Value {
        json!({"phase": "Failed", "containerStatuses": [{"name": "worker", "image": "i",
            "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 1}}}]})
    }

    fn pulling() -> Value {
        json!({"phase": "Pending", "containerStatuses": [{"name": "worker", "image": "i",
            "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}]})
    }

    #[test]
    fn attempts_in_order_per_shard() {
        let t = task(json!({"jobUid": "j1"}));
        let idx = |i: &str| {
            json!({"annotations": {annotations::JOB_COMPLETION_INDEX: i},
            "labels": {labels::JOB_CONTROLLER_UID: "j1"},
            "ownerReferences": [owner("j1", true)]})
        };
        let pods = vec![
            pod("b", "2026-01-01T00:00:02Z", idx("1"), running()),
            pod("c", "2026-01-01T00:00:03Z", idx("0"), running()),
            pod("a", "2026-01-01T00:00:01Z", idx("0"), failed()),
            pod(
                "other",
                "2026-01-01T00:00:00Z",
                json!({"labels": {labels::JOB_CONTROLLER_UID: "j0"},
                    "ownerReferences": [owner("j0", true)]}),
                failed(),
            ),
            // Hand-made look-alikes: the Job's labels, no or a weak owner reference.
            pod(
                "labels-only",
                "2026-01-01T00:00:00Z",
                json!({"labels": {labels::JOB_CONTROLLER_UID: "j1"}}),
                running(),
            ),
            pod(
                "not-controller",
                "2026-01-01T00:00:00Z",
                json!({"labels": {labels::JOB_CONTROLLER_UID: "j1"},
                    "ownerReferences": [owner("j1", false)]}),
                running(),
            ),
        ];
        let by = attempts(&t, pods.clone(), None);
        let names = |v: &Vec<Pod>| {
            v.iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        assert_eq!(by.len(), 2);
        assert_eq!(
            names(&by[&0]),
            ["a", "c"],
            "oldest first, other Job and look-alikes left out"
        );
        assert_eq!(names(&by[&1]), ["b"]);
        let one = attempts(&t, pods.clone(), Some(1));
        assert_eq!(one.keys().copied().collect::<Vec<_>>(), [1]);
        let unnamed = task(json!({"phase": "Running"}));
        assert!(
            attempts(&unnamed, pods, None).is_empty(),
            "no Job named yet"
        );
    }

    fn owner(uid: &str, controller: bool) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "name": "t", "uid": uid,
            "controller": controller})
    }

    #[test]
    fn started_and_ended() {
        let p = |s| pod("p", "2026-01-01T00:00:00Z", json!({}), s);
        assert!(started(&p(running())) && !ended(&p(running())));
        assert!(started(&p(failed())) && ended(&p(failed())));
        assert!(!started(&p(pulling())) && !ended(&p(pulling())));
        assert!(!started(&p(json!({}))));
    }

    #[test]
    fn why_it_waits() {
        let queued = task(json!({"phase": "Queued", "reason": "QueueFull",
            "message": "position 2 in the queue: waiting for a slot"}));
        assert_eq!(
            why_waiting(&queued, None),
            "task t is Queued: position 2 in the queue: waiting for a slot"
        );
        let cond = task(
            json!({"phase": "Running", "conditions": [{"type": "Waiting",
            "status": "True", "reason": "Unschedulable", "message": "0/2 nodes fit",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        );
        assert_eq!(
            why_waiting(&cond, None),
            "task t waits: Unschedulable: 0/2 nodes fit"
        );
        let plain = task(json!({"phase": "Running"}));
        assert_eq!(why_waiting(&plain, None), "task t has no pod yet");
        let p = pod("p", "2026-01-01T00:00:00Z", json!({}), pulling());
        assert_eq!(
            why_waiting(&plain, Some(&p)),
            "pod p is Pending: ImagePullBackOff: no such image"
        );
        let unsched = pod(
            "p",
            "2026-01-01T00:00:00Z",
            json!({}),
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
                "status": "False", "reason": "Unschedulable", "message": "no node"}]}),
        );
        assert_eq!(
            pod_waits(&unsched),
            "pod p is Pending: Unschedulable: no node"
        );
    }
}
