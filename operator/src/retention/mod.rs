//! Pure: which finished Tasks to delete, and when. A finished Task is
//! deleted (with its Job, pods and result ConfigMaps, through owner
//! references) once `spec.deleteAfterSeconds` has passed since it finished
//! (default: the namespace annotation longtask.dev/delete-finished-after,
//! else `--delete-finished-after`), and only the newest N finished Tasks of
//! a namespace are kept when the namespace annotation
//! longtask.dev/keep-finished (else `--keep-finished`) says N. Without
//! any of them, every Task is kept.
//!
//! Level-based: every decision is made from the Tasks and namespaces as the
//! caches show them, and a time still to come is a requeue.

use std::collections::BTreeMap;
use std::time::Duration;

use crds::Task;
use crds::names::{SYSTEM_NAMESPACES, annotations};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

#[cfg(test)]
mod tests;

/// The operator's defaults, from its flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Defaults {
    /// `--delete-finished-after`, in seconds.
    pub delete_after: Option<u64>,
    /// `--keep-finished`.
    pub keep: Option<u32>,
}

/// What applies to the Tasks of one namespace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Seconds after finishing before a Task without `spec.deleteAfterSeconds` goes.
    pub delete_after: Option<u64>,
    /// Finished Tasks kept, newest first.
    pub keep: Option<u32>,
}

/// The policy of `namespace`: its annotations (`None` when unknown, e.g.
/// a namespaced install reads no Namespace) over the operator's defaults.
/// An annotation that is not a number is ignored (the default applies).
/// None in the system namespaces, where the operator deletes nothing (the
/// admission policy longtask-operator-system-namespaces refuses it there,
/// and a Task there only ever fails InvalidSpec).
pub fn policy(
    namespace: &str,
    ns_annotations: Option<&BTreeMap<String, String>>,
    defaults: Defaults,
) -> Policy {
    if SYSTEM_NAMESPACES.contains(&namespace) {
        return Policy::default();
    }
    let get = |key: &str| {
        ns_annotations
            .and_then(|a| a.get(key))
            .map(|v| v.trim().to_owned())
    };
    Policy {
        delete_after: get(annotations::DELETE_FINISHED_AFTER)
            .and_then(|v| v.parse().ok())
            .or(defaults.delete_after),
        keep: get(annotations::KEEP_FINISHED)
            .and_then(|v| v.parse().ok())
            .or(defaults.keep),
    }
}

/// When a finished Task is due for deletion by time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// No time applies: it stays (unless keep-N removes it).
    Never,
    /// Its time has passed.
    Now,
    /// Its time comes in this long.
    In(Duration),
}

/// The seconds after finishing that apply to `task`: its own, else the
/// namespace's.
pub fn delete_after(task: &Task, policy: Policy) -> Option<u64> {
    match task.spec.delete_after_seconds {
        Some(s) => Some(u64::try_from(s).unwrap_or(0)),
        None => policy.delete_after,
    }
}

/// Whether the finished `task` is due at `now`. A Task not (or not yet
/// recorded as) finished is never due.
pub fn due(task: &Task, policy: Policy, now: &Time) -> Due {
    let Some(after) = delete_after(task, policy) else {
        return Due::Never;
    };
    let Some(done) = finished_at(task) else {
        return Due::Never;
    };
    let age = now.0.as_second().saturating_sub(done.0.as_second());
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    match after.saturating_sub(age) {
        left if left <= 0 => Due::Now,
        left => Due::In(Duration::from_secs(left.unsigned_abs())),
    }
}

/// When a terminal Task finished: `status.completedAt`.
fn finished_at(task: &Task) -> Option<&Time> {
    if !task.is_terminal() || task.metadata.deletion_timestamp.is_some() {
        return None;
    }
    task.status.as_ref()?.completed_at.as_ref()
}

/// The finished Tasks among `tasks` (one namespace's) beyond the newest
/// `keep`, newest first: by finish time, then creation time, then name.
/// Tasks being deleted count no more.
pub fn excess<'a>(tasks: impl IntoIterator<Item = &'a Task>, keep: u32) -> Vec<&'a Task> {
    let mut done: Vec<(&Time, &'a Task)> = tasks
        .into_iter()
        .filter_map(|t| Some((finished_at(t)?, t)))
        .collect();
    done.sort_by(|(a, ta), (b, tb)| {
        let key = |t: &'a Task| (&t.metadata.creation_timestamp, &t.metadata.name);
        (b, key(tb)).cmp(&(a, key(ta)))
    });
    let keep = usize::try_from(keep).unwrap_or(usize::MAX);
    done.into_iter().skip(keep).map(|(_, t)| t).collect()
}

/// Why a Task is deleted, for the log.
pub fn why_due(task: &Task, policy: Policy) -> String {
    match (task.spec.delete_after_seconds, delete_after(task, policy)) {
        (Some(s), _) => format!("spec.deleteAfterSeconds ({s}s) passed since it finished"),
        (None, Some(s)) => format!(
            "{s}s passed since it finished (annotation {} or --delete-finished-after)",
            annotations::DELETE_FINISHED_AFTER
        ),
        (None, None) => "its time passed".to_owned(),
    }
}
