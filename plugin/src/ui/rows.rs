//! Pure: what the page shows of a Task, trimmed on this side so that the
//! browser never gets a command, an env list, a pod template or a 32 KiB
//! result for every row of a list of thousands.

use std::collections::BTreeMap;

use crds::conditions::types;
use crds::{Phase, Task};
use kube::ResourceExt;
use serde::Serialize;

/// One row of the list (and of the timeline), as the page reads it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// "namespace/name": the row's identity on the page.
    pub key: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// RFC 3339.
    pub created: String,
    /// Empty until the operator wrote a status.
    pub phase: String,
    pub reason: String,
    pub message: String,
    /// The Waiting condition's reason and message, when it is True.
    pub waiting: String,
    pub waiting_message: String,
    /// Its place in its namespace's queue, while Queued for a slot.
    pub queue_position: Option<u32>,
    pub percent: Option<i32>,
    pub progress_message: String,
    pub eta: Option<String>,
    pub attempts: Option<i32>,
    pub started: Option<String>,
    pub completed: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// spec.cancel is set (being cancelled, or cancelled).
    pub cancel: bool,
    /// Its output files' count and total size ("3 files, 2.0Gi"), if any.
    pub outputs: String,
}

/// The row of `t`.
pub fn row(t: &Task) -> Row {
    let s = t.status.clone().unwrap_or_default();
    let namespace = t.namespace().unwrap_or_default();
    let name = t.name_any();
    let waiting = s
        .conditions
        .iter()
        .find(|c| c.type_ == types::WAITING && c.status == "True");
    let queue_position =
        crate::task::waiting::queue_position(t).and_then(|n| u32::try_from(n).ok());
    let progress = s.progress.as_ref();
    Row {
        key: format!("{namespace}/{name}"),
        uid: t.uid().unwrap_or_default(),
        created: t
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|c| c.0.to_string())
            .unwrap_or_default(),
        phase: s.phase.map(Phase::as_str).unwrap_or_default().to_owned(),
        reason: s.reason.clone().unwrap_or_default(),
        message: s.message.clone().unwrap_or_default(),
        waiting: waiting.map(|c| c.reason.clone()).unwrap_or_default(),
        waiting_message: waiting.map(|c| c.message.clone()).unwrap_or_default(),
        queue_position,
        percent: progress.map(|p| p.percent),
        progress_message: progress.and_then(|p| p.message.clone()).unwrap_or_default(),
        eta: progress
            .and_then(|p| p.eta.as_ref())
            .map(|t| t.0.to_string()),
        attempts: s.attempts,
        started: s.started_at.as_ref().map(|t| t.0.to_string()),
        completed: s.completed_at.as_ref().map(|t| t.0.to_string()),
        labels: t.labels().clone(),
        cancel: t.spec.cancel,
        outputs: crate::outputs::summary(s.outputs.as_ref()),
        namespace,
        name,
    }
}

/// What a Task's page shows besides its row: the status as it is (the
/// result included: at most 32 KiB, one Task) and the spec without its
/// env values (they may hold secrets typed in; their names stay).
pub fn detail(t: &Task) -> serde_json::Value {
    let mut spec = serde_json::to_value(&t.spec).unwrap_or_default();
    if let Some(env) = spec.get_mut("env").and_then(|e| e.as_array_mut()) {
        for e in env {
            if let Some(o) = e.as_object_mut() {
                o.retain(|k, _| k == "name");
            }
        }
    }
    serde_json::json!({
        "row": row(t),
        "spec": spec,
        "status": t.status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{NOW, task};
    use crds::conditions::reasons;

    #[test]
    fn a_row_holds_what_the_list_shows_and_no_more() {
        let mut t = task("train")
            .namespace("ml")
            .created(NOW - 100)
            .phase(Phase::Running)
            .attempts(2)
            .condition(
                types::WAITING,
                "True",
                "Unschedulable",
                "0/3 nodes are available",
            )
            .build();
        t.spec.command = vec!["python".into(), "secret-arg".into()];
        let r = row(&t);
        assert_eq!(r.key, "ml/train");
        assert_eq!((r.phase.as_str(), r.attempts), ("Running", Some(2)));
        assert_eq!(
            (r.waiting.as_str(), r.waiting_message.as_str()),
            ("Unschedulable", "0/3 nodes are available")
        );
        assert_eq!(r.queue_position, None);
        let json = serde_json::to_string(&r).expect("json");
        assert!(!json.contains("secret-arg"), "{json}");
        assert!(json.contains("\"waitingMessage\""), "{json}");
    }

    #[test]
    fn the_queue_position_is_read_from_the_status_field() {
        let t = task("q")
            .phase(Phase::Queued)
            .reason(
                reasons::QUEUE_FULL,
                "position 12 in the queue: namespace cap 2 reached",
            )
            .queue_position(12)
            .build();
        assert_eq!(row(&t).queue_position, Some(12));
        // The words alone are not read: an operator that does not write
        // the field shows no position.
        let words = task("w")
            .phase(Phase::Queued)
            .reason(reasons::QUEUE_FULL, "position 4 in the queue: …")
            .build();
        assert_eq!(row(&words).queue_position, None);
        let other = task("k")
            .phase(Phase::Queued)
            .reason("QuotaPending", "waiting for quota")
            .queue_position(3)
            .build();
        assert_eq!(
            row(&other).queue_position,
            None,
            "only a slot queue has positions"
        );
    }

    #[test]
    fn a_row_shows_the_outputs_size() {
        let t = task("o")
            .phase(Phase::Completed)
            .outputs(&[crate::fixtures::output("a.bin", &[1; 4096])])
            .build();
        assert_eq!(row(&t).outputs, "1 file, 4.0Ki");
        assert_eq!(row(&task("none").build()).outputs, "");
    }

    #[test]
    fn the_detail_keeps_env_names_not_values() {
        let mut t = task("e").build();
        t.spec.env = vec![k8s_openapi::api::core::v1::EnvVar {
            name: "TOKEN".into(),
            value: Some("hunter2".into()),
            ..Default::default()
        }];
        let d = detail(&t).to_string();
        assert!(d.contains("TOKEN") && !d.contains("hunter2"), "{d}");
    }
}
