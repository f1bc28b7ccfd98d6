//! The reconcile pipeline: fetch → validate → build → apply → status.
//! It never waits for the work: it creates the Job and returns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crds::result::config_map_name;
use crds::{Task, TaskStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use tracing::{debug, instrument, warn};

use crate::admit::{self, Admission};
use crate::context::Context;
use crate::error::Error;
use crate::observe::{self, Ownership};
use crate::status::{self, Next, Observed};
use crate::{apply, build, events, samples, validate};

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
        warn!(namespace = %task.namespace().unwrap_or_default(), task = %task.name_any(), error = %err, "reconcile failed; waiting for a change");
        return Action::await_change();
    }
    let cfg = &ctx.config;
    let delay = ctx.backoff.next_delay(
        ObjectRef::from_obj(&*task),
        cfg.backoff_base,
        cfg.backoff_max,
    );
    warn!(namespace = %task.namespace().unwrap_or_default(), task = %task.name_any(), error = %err, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

async fn run(task: &Task, ctx: &Context) -> Result<Action, Error> {
    if task.is_terminal() {
        debug!("terminal; nothing to do");
        return Ok(Action::await_change());
    }
    let id = build::identity(task)?;
    let now = Time(Timestamp::now());
    if let Err(message) = validate::validate(task) {
        let desired = status::invalid(task, message, now);
        let written = write(ctx, task, desired.status).await?;
        return Ok(action(ctx, desired.next, written));
    }

    let recorded = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    // A Task that never had a Job and may start now: create it at once
    // (AlreadyExists returns the one there) rather than look first; under a
    // cap, or while another Task's Job holds the name, look first.
    let fresh = recorded.is_none() && !task.spec.cancel && !status::is_blocked(task);
    let mut job = if fresh && !admit::capped(ctx, id.namespace).await? {
        None
    } else {
        apply::get_job(ctx, id.namespace, id.name).await?
    };
    if job.is_none() && fresh {
        match admit::start(ctx, task).await? {
            Admission::Started(j) => job = Some(*j),
            Admission::Wait(w) => {
                let desired = status::queued(task, &w, now);
                let written = write(ctx, task, desired.status).await?;
                return Ok(action(ctx, desired.next, written));
            }
            Admission::Refused(why) => {
                // As for a spec `validate` refuses: Failed, once, no retry.
                let desired = status::refused(task, &why, now);
                let written = write(ctx, task, desired.status).await?;
                return Ok(action(ctx, desired.next, written));
            }
        }
    }

    let ours = job
        .as_ref()
        .filter(|j| observe::ownership(j, id.uid) == Ownership::Ours);
    // A Job the Job controller has not looked at yet (just created) has no
    // pods, and no worker has written progress for it.
    let untouched = ours.is_some_and(observe::untouched);
    let pods = match ours {
        Some(j) if !untouched => apply::list_pods(ctx, id.namespace, id.uid, j).await?,
        _ => Vec::new(),
    };
    let sharded = task.spec.is_sharded();
    let progress_only = !status::wants_final_result(task, job.as_ref());
    let result =
        if !sharded && status::wants_result(task, job.as_ref()) && !(untouched && progress_only) {
            apply::get_result(ctx, id.namespace, &config_map_name(id.name)).await?
        } else {
            None
        };
    if let (Some(cm), Some(j)) = (result.as_ref(), ours)
        && status::wants_final_result(task, job.as_ref())
        && let Some(why) =
            observe::foreign(cm, id.uid, j.metadata.uid.as_deref().unwrap_or_default())
    {
        // Forged or stale: never accepted; say so where people look.
        warn!(configmap = %cm.name_any(), %why, "ignoring a result that is not this Task's current Job's");
        let note = events::Note {
            warning: true,
            reason: events::reason::FOREIGN_RESULT,
            action: "ReadResult",
            message: why,
        };
        apply::publish(ctx, task, &note).await;
    }
    let shard_results = match ours {
        Some(j) if sharded && observe::finish(j).is_some() => {
            apply::list_shard_results(ctx, id.namespace, id.name, id.uid).await?
        }
        _ => Vec::new(),
    };
    let observed = Observed {
        job: job.as_ref(),
        result: result.as_ref(),
        pods: &pods,
        shard_results: &shard_results,
        now,
    };
    let desired = status::desired(task, &observed);
    // Stop the Job before a terminal status is written: once terminal, the
    // Task is never looked at again.
    if let Some(j) = job
        .as_ref()
        .filter(|j| status::wants_stop(task, Some(j), &desired.status))
    {
        apply::suspend_job(ctx, j).await?;
    }
    let written = write(ctx, task, desired.status).await?;
    Ok(action(ctx, desired.next, written))
}

/// Patches the status unless only timestamps would change, then publishes
/// the Events the transition deserves.
async fn write(ctx: &Context, task: &Task, next: TaskStatus) -> Result<Written, Error> {
    let prev = task.status.as_ref();
    if !status::needs_patch(prev, &next) {
        debug!("status unchanged");
        return Ok(Written::Unchanged);
    }
    match apply::patch_status(ctx, task, &next).await {
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
    ctx.metrics
        .record(&samples::from_transition(task, prev, &next, &now));
    if let Some(phase) = next.phase.filter(|p| p.is_terminal())
        && prev.and_then(|p| p.phase) != Some(phase)
    {
        // Its slot is free: start who waits for it now, not at their next look.
        if let Err(e) = admit::drain(ctx, task).await {
            warn!(error = %e, "cannot start queued Tasks; they retry on their own");
        }
    }
    for note in events::transitions(prev, &next) {
        apply::publish(ctx, task, &note).await;
    }
    Ok(Written::Patched)
}

/// What `write` did.
#[derive(PartialEq, Eq)]
enum Written {
    Unchanged,
    Patched,
    /// The cached Task was stale; look again shortly.
    Stale,
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
