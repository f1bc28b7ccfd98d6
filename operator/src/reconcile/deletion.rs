//! The deletion of finished Tasks, the pure `retention` policy applied:
//! delete one when its time has come or when its namespace keeps only
//! newer ones, and after a Task ends, the ones it pushed past the
//! namespace's keep-N limit.

use std::time::Duration;

use crds::Task;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use tracing::warn;

use crate::api;
use crate::api::call_error::Chain;
use crate::context::Context;
use crate::reconcile::error::Error;
use crate::retention::{self, Due, Policy};

/// The retention policy of `namespace`: its annotations (when the
/// operator watches namespaces) over the flags.
pub fn policy(ctx: &Context, namespace: &str) -> Policy {
    let ns = ctx
        .queue
        .namespaces()
        .and_then(|s| s.get(&ObjectRef::new(namespace)));
    retention::policy(
        namespace,
        ns.as_ref().and_then(|n| n.metadata.annotations.as_ref()),
        ctx.config.retention,
    )
}

/// What retention did with a finished Task.
#[derive(Debug, PartialEq, Eq)]
pub enum Kept {
    /// It was deleted (or was already gone).
    Deleted,
    /// It stays; look again after this long, when its time comes (`None`:
    /// no time applies).
    Until(Option<Duration>),
}

/// Deletes the finished `task` if retention says so at `now`.
pub async fn finished(ctx: &Context, task: &Task, now: &Time) -> Result<Kept, Error> {
    let namespace = task.namespace().unwrap_or_default();
    let policy = policy(ctx, &namespace);
    let wake = match retention::due(task, policy, now) {
        Due::Now => {
            api::delete_task(ctx, task, "after", &retention::why_due(task, policy)).await?;
            return Ok(Kept::Deleted);
        }
        Due::In(d) => Some(d),
        Due::Never => None,
    };
    if let Some(keep) = policy.keep
        && let Some(store) = ctx.queue.tasks()
    {
        let all = store.state();
        let mine = all
            .iter()
            .filter(|t| t.namespace().as_deref() == Some(namespace.as_str()));
        let uid = task.metadata.uid.as_deref();
        if retention::excess(mine.map(|t| &**t), keep)
            .iter()
            .any(|t| t.metadata.uid.as_deref() == uid)
        {
            api::delete_task(ctx, task, "keep", &kept_why(keep)).await?;
            return Ok(Kept::Deleted);
        }
    }
    Ok(Kept::Until(wake))
}

fn kept_why(keep: u32) -> String {
    format!(
        "its namespace keeps only the newest {keep} finished Tasks (annotation longtask.dev/keep-finished or --keep-finished)"
    )
}

/// After `ended` (as just written) finished: deletes the finished Tasks of
/// its namespace beyond the keep-N limit. A failure is logged: each of
/// those Tasks checks its own rank when it is next reconciled.
pub async fn prune(ctx: &Context, ended: &Task) {
    let namespace = ended.namespace().unwrap_or_default();
    let Some(keep) = policy(ctx, &namespace).keep else {
        return;
    };
    let Some(store) = ctx.queue.tasks() else {
        return;
    };
    let all = store.state();
    // The cache may not show `ended` as finished yet: take it as written.
    let mine = all
        .iter()
        .filter(|t| t.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|t| t.metadata.uid != ended.metadata.uid)
        .map(|t| &**t)
        .chain(std::iter::once(ended));
    for t in retention::excess(mine, keep) {
        if let Err(e) = api::delete_task(ctx, t, "keep", &kept_why(keep)).await {
            warn!(error = %Chain(&e), "cannot delete a finished Task past the keep-finished limit; it retries on its own");
        }
    }
}
