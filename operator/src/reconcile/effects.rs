//! The side effects a reconcile has besides its status write, in one
//! place: the ones done before the write (a Warning Event for a result
//! not accepted, the download URLs of a Task that ends with outputs,
//! suspending a Job the new status ends) and the ones after
//! it (a Task that ended frees its slot for the queued ones, and its
//! worker account if no other Task needs it).

use std::sync::Arc;

use crds::Task;
use tracing::warn;

use crate::api;
use crate::api::call_error::Chain;
use crate::context::{ADMITTED_GRACE, Context};
use crate::reconcile::error::Error;
use crate::reconcile::read::Seen;
use crate::reconcile::{accounts, admit, downloads};
use crate::status::kueue::Stop;
use crate::status::{self, Desired, events};

/// Done before the status is written: once terminal, the Task is never
/// looked at again.
pub async fn before_write(
    ctx: &Context,
    task: &Task,
    seen: &Seen,
    desired: &mut Desired,
) -> Result<(), Error> {
    if let Some(note) = foreign_results(&seen.refusals) {
        api::publish(ctx, task, vec![note]);
    }
    // The URLs first, so that the status write shows their Secret.
    downloads::at_end(ctx, task, seen, desired).await?;
    let Some(j) = seen.job.as_ref() else {
        return Ok(());
    };
    // The ending goes onto the Job with the stop: once the pods are gone,
    // nothing else would show it if this status write were lost.
    let ended = status::ending(&desired.status);
    match status::stop(task, Some(j), &desired.status, seen.kueue.as_ref()) {
        Some(Stop::Suspend) => api::suspend_job(ctx, j, ended.as_ref()).await?,
        Some(Stop::Deactivate(workload)) => {
            if let Some(e) = &ended {
                api::mark_ended(ctx, j, e).await?;
            }
            api::deactivate_workload(ctx, j, &workload).await?;
        }
        None => {}
    }
    Ok(())
}

/// Forged or stale results are never accepted; say so where people look.
fn foreign_results(refusals: &[String]) -> Option<events::Note> {
    let first = refusals.first()?;
    warn!(refused = refusals.len(), why = %first, "ignoring results that are not this Task's current Job's");
    let more = match refusals.len() {
        1 => String::new(),
        n => format!(" (and {} more result ConfigMaps)", n - 1),
    };
    Some(events::Note {
        warning: true,
        reason: events::reason::FOREIGN_RESULT,
        action: "ReadResult",
        message: format!("{first}{more}"),
    })
}

/// After `task` became terminal: start the Tasks its slot lets start now,
/// not at their next look, and unbind the worker account no Task needs
/// any more. A failure is theirs to retry, not this Task's.
pub async fn after_end(ctx: &Arc<Context>, task: &Task) {
    if let Err(e) = admit::drain(ctx, task).await {
        warn!(error = %Chain(&e), "cannot start queued Tasks; they retry on their own");
    }
    release(ctx.clone(), task.clone()).await;
}

/// `accounts::release`, and once more after `ADMITTED_GRACE` when an
/// account admitted moments before was kept (its Task may not show its
/// Job yet), in a spawned task: nothing waits for it.
async fn release(ctx: Arc<Context>, task: Task) {
    match accounts::release(&ctx, &task).await {
        Ok(false) => {}
        Ok(true) => {
            tokio::spawn(async move {
                tokio::time::sleep(ADMITTED_GRACE).await;
                if let Err(e) = accounts::release(&ctx, &task).await {
                    warn!(error = %Chain(&e), "cannot unbind worker accounts; the next Task's end does");
                }
            });
        }
        Err(e) => {
            warn!(error = %Chain(&e), "cannot unbind worker accounts; the next Task's end does")
        }
    }
}
