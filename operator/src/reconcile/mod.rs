//! The reconcile pipeline for one Task: validate → wait for its upstreams
//! (`upstreams`, deciding by the pure `after`) → find or start its Job
//! (`read`, deciding by the pure `read_plan`; the Job built by the pure `job`)
//! → read what the status needs → the pure `status::desired` → side
//! effects (`effects`) → the status write (`status_write`) → start queued
//! Tasks if it ended. It never waits for the work: it creates the Job and
//! returns. Its API calls are `api`'s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crds::{Task, TaskStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use tracing::{debug, instrument, warn};

pub mod accounts;
pub mod admit;
pub mod deletion;
pub mod downloads;
mod effects;
pub mod error;
pub mod outputs;
pub mod read;
pub mod read_plan;
pub mod result_trust;
pub mod shard_reads;
mod status_write;
#[cfg(test)]
mod tests;
pub mod upstreams;
pub mod validate;

pub use error::Error;

use crate::api;
use crate::api::call_error::Chain;
use crate::context::Context;
use crate::job::build;
use crate::status::{self, Next};
use read::Found;
use status_write::Written;

/// Safety-net retry after a status patch lost to a newer Task (whose watch
/// event reconciles it again at once).
const STALE_REQUEUE: Duration = Duration::from_secs(30);

/// Entry point for the controller.
#[instrument(skip(task, ctx), fields(namespace = %task.namespace().unwrap_or_default(), task = %task.name_any()))]
pub async fn reconcile(task: Arc<Task>, ctx: Arc<Context>) -> Result<Action, Error> {
    let start = Instant::now();
    let res = run(&task, &ctx).await;
    ctx.metrics
        .reconciled(start.elapsed(), res.as_ref().err().map(Error::category));
    if res.is_ok() {
        ctx.backoff.reset(&ObjectRef::from_obj(&*task));
    }
    res
}

/// Decides from the error: invalid objects wait for a change, the rest back off per object.
pub fn error_policy(task: Arc<Task>, err: &Error, ctx: Arc<Context>) -> Action {
    if err.waits_for_change() {
        warn!(namespace = %task.namespace().unwrap_or_default(), task = %task.name_any(), error = %Chain(err), "reconcile failed; waiting for a change");
        return Action::await_change();
    }
    let cfg = &ctx.config;
    let delay = ctx.backoff.next_delay(
        ObjectRef::from_obj(&*task),
        cfg.backoff_base,
        cfg.backoff_max,
    );
    warn!(namespace = %task.namespace().unwrap_or_default(), task = %task.name_any(), error = %Chain(err), retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// One Task, top to bottom: validate, find or start its Job, read what the
/// status needs, compute the status (pure), do the side effects it calls
/// for, write it, and start queued Tasks if this one just ended.
async fn run(task: &Task, ctx: &Arc<Context>) -> Result<Action, Error> {
    let now = Time(Timestamp::now());
    if task.is_terminal() {
        return settle(ctx, task, now).await;
    }
    let id = build::identity(task)?;
    let mut overtook = false;
    // The version of the result ConfigMap this reconcile read, if any.
    let mut result_read = None;
    let desired = match validate::validate(task) {
        Err(message) => status::invalid(task, message, now),
        // Waiting for its upstreams, or failed by them: no Job.
        Ok(()) if let Some(gated) = upstreams::gate(ctx, task, &id, &now)? => gated,
        Ok(()) => match read::job(ctx, task, &id).await? {
            Found::Wait(wait) => {
                overtook = wait.overtakes;
                status::queued(task, &wait, now)
            }
            // As for a spec `validate` refuses: Failed, once, no retry.
            Found::Refused(why) => status::refused(task, &why, now),
            Found::Job(job) => {
                let seen = read::cluster(ctx, task, &id, job).await?;
                result_read = seen
                    .result
                    .as_ref()
                    .and_then(|r| r.metadata.resource_version.clone());
                let mut desired = status::desired(task, &seen.observed(now));
                effects::before_write(ctx, task, &seen, &mut desired).await?;
                desired
            }
        },
    };
    let ended = desired.status.clone();
    let written = status_write::status(ctx, task, desired.status).await?;
    if overtook && written != Written::Stale {
        // Shown in the queue ahead of Tasks that show their place.
        ctx.queue.moved(id.namespace);
    }
    // The status now shows what that version of the result says.
    if let (Written::Patched { ended: false } | Written::Unchanged, Some(rv)) =
        (&written, result_read)
    {
        ctx.caches.result_shown(id.uid, rv);
    }
    if written == (Written::Patched { ended: true }) {
        ctx.caches.forget_result(id.uid);
        effects::after_end(ctx, task).await;
        let ended = Task {
            status: Some(ended),
            ..task.clone()
        };
        deletion::prune(ctx, &ended).await;
    }
    Ok(action(ctx, desired.next, written))
}

/// A terminal Task: nothing more happens to it, but its conditions always
/// follow its phase, so a hand-edited status cannot leave `kubectl wait`
/// hanging. The cache keeps a terminal Task's conditions only when they
/// disagree; then the whole Task is read to set them right.
async fn settle(ctx: &Context, task: &Task, now: Time) -> Result<Action, Error> {
    if !status::conditions_agree(task.status.as_ref().unwrap_or(&TaskStatus::default())) {
        let id = build::identity(task)?;
        if let Some(full) = api::get_task(ctx, id.namespace, id.name).await?
            && let Some(settled) = status::settled(&full, now.clone())
        {
            status_write::status(ctx, &full, settled).await?;
        }
    }
    // Retention: deleted now, or looked at again when its time comes.
    let wake = match deletion::finished(ctx, task, &now).await? {
        deletion::Kept::Deleted => return Ok(Action::await_change()),
        deletion::Kept::Until(wake) => wake,
    };
    // Its outputs' download URLs are signed again every six days.
    let renew = downloads::renew(ctx, task, now.0).await?;
    match wake.into_iter().chain(renew).min() {
        // A second late rather than early: the time has passed by then.
        Some(wake) => Ok(Action::requeue(wake + Duration::from_secs(1))),
        None => {
            debug!("terminal; nothing to do");
            Ok(Action::await_change())
        }
    }
}

fn action(ctx: &Context, next: Next, written: Written) -> Action {
    if written == Written::Stale {
        // The newer Task's watch event wakes us; this is only a safety net.
        return Action::requeue(STALE_REQUEUE);
    }
    match next {
        Next::Done => Action::await_change(),
        Next::Running => Action::requeue(ctx.config.running_requeue),
        Next::Blocked => Action::requeue(ctx.config.blocked_requeue),
        // A second late rather than early: the deadline has passed by then.
        Next::Wake(d) => {
            Action::requeue((d + Duration::from_secs(1)).min(ctx.config.running_requeue))
        }
        Next::Queued => Action::requeue(ctx.config.queued_requeue),
    }
}
