//! The status write, the pipeline's last step: a server-side apply of the
//! whole status, skipped when only timestamps would change, fenced by the
//! Task's resourceVersion; then the metrics of the transition, and its
//! Events (sent off the reconcile's path).

use crds::{Task, TaskStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use tracing::debug;

use crate::api;
use crate::context::Context;
use crate::reconcile::error::Error;
use crate::status::{self, events};
use crate::telemetry::transitions;

/// What `status` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    Unchanged,
    /// Patched; `ended` when the Task became terminal with it.
    Patched {
        ended: bool,
    },
    /// The cached Task was stale; look again shortly.
    Stale,
}

/// Writes `next` as the status of `task` unless nothing but timestamps
/// would change, then records the transition and publishes its Events.
pub async fn status(ctx: &Context, task: &Task, next: TaskStatus) -> Result<Written, Error> {
    let prev = task.status.as_ref();
    if !status::needs_patch(prev, &next) {
        debug!("status unchanged");
        return Ok(Written::Unchanged);
    }
    match api::patch_status(ctx, task, &next).await {
        Ok(()) => {}
        Err(e) if e.is_conflict() => {
            // Our cached Task is older than the server's: the watch brings
            // the newer one and reconciles again; nothing was written. The
            // guard stays: without it a stale cache would write its Events
            // (Started, Completed) and condition times a second time.
            debug!("status patch conflicted with a newer Task; waiting for it");
            return Ok(Written::Stale);
        }
        Err(e) => return Err(e.into()),
    }
    let now = Time(Timestamp::now());
    let samples = transitions::from_transition(task, prev, &next, &now);
    ctx.metrics.record(
        task.metadata.namespace.as_deref().unwrap_or_default(),
        &samples,
    );
    // Off the reconcile's path: the next Task waits for no Event.
    api::publish(ctx, task, events::transitions(prev, &next));
    let ended =
        next.phase.is_some_and(|p| p.is_terminal()) && prev.and_then(|p| p.phase) != next.phase;
    Ok(Written::Patched { ended })
}
