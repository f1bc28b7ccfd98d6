//! The reconcile pipeline: fetch → validate → build → apply → status.
//! It never waits for the work: it creates the Job and returns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crds::result::config_map_name;
use crds::{Task, TaskStatus};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use tracing::{debug, instrument, warn};

pub mod admit;
pub mod api;
pub mod build;
pub mod error;
pub mod plan;
pub mod shape;
#[cfg(test)]
mod tests;
pub mod validate;
pub mod writers;

pub use error::Error;

use crate::call::Chain;
use crate::context::Context;
use crate::status::observe::{self, Ownership};
use crate::status::{self, Next, Observed, events};
use crate::telemetry::transitions;
use admit::Admission;

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

async fn run(task: &Task, ctx: &Context) -> Result<Action, Error> {
    let now = Time(Timestamp::now());
    if task.is_terminal() {
        // Nothing more happens to it, but its conditions always follow its
        // phase: a hand-edited status must not leave `kubectl wait` hanging.
        // The cache keeps a terminal Task's conditions only when they
        // disagree; the whole Task is read to set them right.
        if !status::conditions_agree(task.status.as_ref().unwrap_or(&TaskStatus::default())) {
            let id = build::identity(task)?;
            if let Some(full) = api::get_task(ctx, id.namespace, id.name).await?
                && let Some(settled) = status::settled(&full, now)
            {
                write(ctx, &full, settled).await?;
            }
        }
        debug!("terminal; nothing to do");
        return Ok(Action::await_change());
    }
    let id = build::identity(task)?;
    if let Err(message) = validate::validate(task) {
        let desired = status::invalid(task, message, now);
        let written = write(ctx, task, desired.status).await?;
        return Ok(action(ctx, desired.next, written));
    }

    let recorded = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    // A Task that never had a Job may start; one whose name another
    // Task's Job held starts once that Job is gone.
    let startable = recorded.is_none() && !task.spec.cancel;
    // A Task that never had a Job and may start now: create it at once
    // (AlreadyExists returns the one there) rather than look first; under a
    // cap, or while another Task's Job holds the name, look first.
    let fresh = startable && !status::is_blocked(task);
    let mut job = if fresh && !admit::capped(ctx, id.namespace).await? {
        None
    } else {
        api::get_job(ctx, id.namespace, id.name).await?
    };
    if job.is_none() && startable {
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
        Some(j) if !untouched => api::list_pods(ctx, id.namespace, id.uid, j).await?,
        _ => Vec::new(),
    };
    let results = read_results(ctx, task, &id, job.as_ref(), ours, untouched, &pods).await?;
    let observed = Observed {
        job: job.as_ref(),
        result: results.result.as_ref(),
        refused: results.refused.clone(),
        pods: &pods,
        shard_results: &results.shards,
        now,
    };
    let desired = status::desired(task, &observed);
    // Stop the Job before a terminal status is written: once terminal, the
    // Task is never looked at again.
    if let Some(j) = job
        .as_ref()
        .filter(|j| status::wants_stop(task, Some(j), &desired.status))
    {
        api::suspend_job(ctx, j).await?;
    }
    let written = write(ctx, task, desired.status).await?;
    Ok(action(ctx, desired.next, written))
}

/// The result ConfigMaps read for one reconcile, those not to be trusted
/// already set apart.
struct Results {
    /// `<task>-result`: for progress while the Job runs, for the result
    /// once it ended (then only if its writer checked out).
    result: Option<ConfigMap>,
    /// Why `<task>-result` was not accepted as this Job's result.
    refused: Option<String>,
    /// The shards' results that checked out (sharded Tasks whose Job ended
    /// or vanished).
    shards: Vec<ConfigMap>,
}

/// Reads what the status needs of the result ConfigMaps, and checks that a
/// final result was written by a pod of the Task's Job (its current one,
/// or the one recorded when it vanished). A result that fails the check is
/// never accepted; a Warning Event says why.
async fn read_results(
    ctx: &Context,
    task: &Task,
    id: &build::Identity<'_>,
    job: Option<&Job>,
    ours: Option<&Job>,
    untouched: bool,
    pods: &[Pod],
) -> Result<Results, Error> {
    let mut out = Results {
        result: None,
        refused: None,
        shards: Vec::new(),
    };
    let sharded = task.spec.is_sharded();
    let final_read = status::wants_final_result(task, job);
    let recorded = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    // The Job whose pods may have written the final result.
    let fence_uid = match ours {
        Some(j) => j.metadata.uid.as_deref(),
        None => recorded,
    };
    if !sharded && status::wants_result(task, job) && (final_read || !untouched) {
        out.result = api::get_result(ctx, id.namespace, &config_map_name(id.name)).await?;
    }
    let ended = ours.is_none_or(|j| observe::finish(j).is_some());
    let want_shards = sharded && fence_uid.is_some() && (ended && final_read);
    let shard_cms = if want_shards {
        api::list_shard_results(ctx, id.namespace, id.name, id.uid).await?
    } else {
        Vec::new()
    };
    let (Some(job_uid), true) = (fence_uid, final_read) else {
        return Ok(out);
    };
    let fence = writers::Fence {
        namespace: id.namespace,
        job: id.name,
        task_uid: id.uid,
        job_uid,
        pods,
    };
    let mut refusals = Vec::new();
    if let Some(cm) = out.result.as_ref()
        && let Err(why) = writers::vet(ctx, &fence, cm, None).await?
    {
        refusals.push(why.clone());
        out.refused = Some(why);
    }
    if !shard_cms.is_empty() {
        let (kept, refused) = writers::vet_shards(ctx, &fence, shard_cms).await?;
        out.shards = kept;
        refusals.extend(refused);
    }
    if let Some(first) = refusals.first() {
        // Forged or stale: never accepted; say so where people look.
        warn!(refused = refusals.len(), why = %first, "ignoring results that are not this Task's current Job's");
        let more = match refusals.len() {
            1 => String::new(),
            n => format!(" (and {} more result ConfigMaps)", n - 1),
        };
        let note = events::Note {
            warning: true,
            reason: events::reason::FOREIGN_RESULT,
            action: "ReadResult",
            message: format!("{first}{more}"),
        };
        api::publish(ctx, task, &note).await;
    }
    Ok(out)
}

/// Patches the status unless only timestamps would change, then publishes
/// the Events the transition deserves.
async fn write(ctx: &Context, task: &Task, next: TaskStatus) -> Result<Written, Error> {
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
    ctx.metrics
        .record(&transitions::from_transition(task, prev, &next, &now));
    if let Some(phase) = next.phase.filter(|p| p.is_terminal())
        && prev.and_then(|p| p.phase) != Some(phase)
    {
        // Its slot is free: start who waits for it now, not at their next look.
        if let Err(e) = admit::drain(ctx, task).await {
            warn!(error = %Chain(&e), "cannot start queued Tasks; they retry on their own");
        }
    }
    for note in events::transitions(prev, &next) {
        api::publish(ctx, task, &note).await;
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
