//! CronTasks: a Task template run on a schedule, exactly once per
//! scheduled time (docs/cron.md). The decisions are pure (`decide.rs`);
//! here the controller reads a CronTask's runs from the Task cache, makes
//! the calls the plan asks for and writes the status.
//!
//! Exactly once: a run is named from its scheduled time, so a second
//! create of it (a reconcile whose status write was lost, a new leader) is
//! AlreadyExists; and `status.lastScheduleTime` moves past a time only
//! after its run was created.

pub mod decide;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use crds::Task;
use crds::cron::{CronTask, CronTaskStatus};
use crds::names;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{info, warn};

use crate::api;
use crate::api::call_error::{CallError, Chain};
use crate::api::error::ApiError;
use crate::context::Context;

use self::decide::{Note, Plan, Run};

/// Failures of a CronTask's reconcile, one per call.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Error {
    #[error("cannot create run {namespace}/{name}")]
    CreateRun {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot read {namespace}/{name}, which has the name of a run")]
    GetRun {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot cancel run {namespace}/{name}")]
    CancelRun {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot delete an old run")]
    DeleteRun(#[source] ApiError),
    #[error("cannot suspend CronTask {namespace}/{name}")]
    Suspend {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot write the status of CronTask {namespace}/{name}")]
    PatchStatus {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
}

/// How long after a failed reconcile a CronTask is looked at again.
const RETRY: Duration = Duration::from_secs(2);

/// The controller of CronTasks, woken by changes of their runs
/// (`wakes`, fed from the Task watch) and at their next scheduled time.
pub async fn run(
    client: Client,
    ctx: Arc<Context>,
    namespace: Option<String>,
    wakes: futures::channel::mpsc::UnboundedReceiver<ObjectRef<CronTask>>,
) {
    // Runs are read from the Task cache: start once it holds every Task,
    // so that no run looks missing and no count is made from a part. Asked
    // again every second, as `report_ready` does: a wait begun before the
    // cache is filled was seen never to wake.
    if let Some(store) = ctx.queue.tasks() {
        loop {
            match tokio::time::timeout(Duration::from_secs(1), store.wait_until_ready()).await {
                Ok(Ok(())) => break,
                Ok(Err(_)) => return,
                Err(_) => {}
            }
        }
    }
    info!("starting the CronTask controller");
    let crons: Api<CronTask> = match namespace.as_deref() {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    Controller::new(crons, watcher::Config::default().page_size(100))
        .reconcile_on(wakes)
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|res| async move {
            match res {
                Ok(_) | Err(controller::Error::ObjectNotFound(_)) => {}
                Err(e) => warn!(error = %e, "CronTask controller"),
            }
        })
        .await;
    info!("CronTask controller stopped");
}

/// The CronTask a Task is a run of (its controller owner), to wake.
pub fn owner_of(task: &Task) -> Option<ObjectRef<CronTask>> {
    let owner = crate::cache::cron_controller(task)?;
    Some(ObjectRef::new(&owner.name).within(&task.namespace()?))
}

/// A failed call is tried again after [`RETRY`]: the scheduled time it
/// was for stays due (the status moves past it only once it is done), and
/// catchUpSeconds decides how late it may still start.
pub fn error_policy(cron: Arc<CronTask>, err: &Error, _ctx: Arc<Context>) -> Action {
    let delay = RETRY;
    warn!(namespace = %cron.namespace().unwrap_or_default(), crontask = %cron.name_any(), error = %Chain(err), retry_in = ?delay, "CronTask reconcile failed");
    Action::requeue(delay)
}

/// One CronTask at this moment: its plan, carried out.
pub async fn reconcile(cron: Arc<CronTask>, ctx: Arc<Context>) -> Result<Action, Error> {
    let now = Timestamp::now();
    let runs = runs_of(&ctx, &cron);
    tracing::debug!(crontask = %cron.name_any(), runs = runs.len(), "reconcile");
    let plan = decide::plan_with(&cron, &runs, now, &limits(&ctx, &cron));
    carry_out(&ctx, &cron, &plan, now).await?;
    Ok(match plan.requeue {
        // A hair late rather than early: the time must have come.
        Some(wait) => Action::requeue(wait + Duration::from_millis(5)),
        None => Action::await_change(),
    })
}

/// The runs of `cron`: Tasks of its namespace it controls (a controller
/// owner reference of kind CronTask with its UID), found by the run index
/// (or, before it has synced, by a walk of the Task cache).
fn runs_of(ctx: &Context, cron: &CronTask) -> Vec<Run> {
    let (Some(store), Some(uid), Some(ns)) = (
        ctx.queue.tasks(),
        cron.metadata.uid.as_deref(),
        cron.metadata.namespace.as_deref(),
    ) else {
        return Vec::new();
    };
    let name = cron.name_any();
    let ours = |t: &Task| {
        t.metadata.namespace.as_deref() == Some(ns) && crate::cache::is_run_of(t, &name, uid)
    };
    let tasks: Vec<Arc<Task>> = match ctx.caches.runs_of(uid) {
        Some(keys) => keys.iter().filter_map(|k| store.get(k)).collect(),
        None => store.state(),
    };
    tasks
        .iter()
        .filter(|t| ours(t))
        .filter_map(|t| Run::of(t, &name))
        .collect()
}

/// The operator's bounds, and the active runs of `cron`'s namespace.
fn limits(ctx: &Context, cron: &CronTask) -> decide::Limits {
    let ns = cron.metadata.namespace.as_deref().unwrap_or_default();
    decide::Limits {
        min_interval: ctx
            .config
            .cron_min_interval
            .and_then(|d| SignedDuration::try_from(d).ok()),
        namespace_max: ctx.config.cron_max_active_per_namespace,
        namespace_active: ctx.caches.active_runs_in(ns).unwrap_or(0),
    }
}

/// The calls `plan` asks for, the status last (it records what was done).
async fn carry_out(
    ctx: &Context,
    cron: &CronTask,
    plan: &Plan,
    now: Timestamp,
) -> Result<(), Error> {
    let ns = cron.namespace().unwrap_or_default();
    let tasks: Api<Task> = Api::namespaced(ctx.client.clone(), &ns);
    if plan.suspend {
        suspend(ctx, cron).await?;
    }
    for name in &plan.cancel {
        let patch = serde_json::json!({"spec": {"cancel": true}});
        let pp = PatchParams::default();
        api::call(ctx, "patch", tasks.patch(name, &pp, &Patch::Merge(&patch)))
            .await
            .map(|_| ())
            .or_else(|e| {
                if e.code() == Some(404) {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .map_err(|source| Error::CancelRun {
                namespace: ns.clone(),
                name: name.clone(),
                source,
            })?;
    }
    let mut notes = plan.notes.clone();
    let mut status = plan.status.clone();
    create_runs(ctx, &tasks, cron, plan, now, &mut status, &mut notes).await?;
    for (name, uid) in &plan.delete {
        api::delete_task_fenced(ctx, &ns, name, Some(uid))
            .await
            .map_err(Error::DeleteRun)?;
    }
    ctx.metrics
        .cron_counts(&cron.status.clone().unwrap_or_default(), &status);
    write_status(ctx, cron, &status).await?;
    publish(ctx, cron, notes);
    Ok(())
}

/// Creates the runs `plan` asks for; a name another Task took is counted
/// in `status` and told in `notes`.
async fn create_runs(
    ctx: &Context,
    tasks: &Api<Task>,
    cron: &CronTask,
    plan: &Plan,
    now: Timestamp,
    status: &mut CronTaskStatus,
    notes: &mut Vec<Note>,
) -> Result<(), Error> {
    for at in &plan.create {
        match create_run(ctx, tasks, cron, *at).await? {
            Made::Now(note) | Made::Not(note) => notes.push(note),
            Made::Before => {}
            Made::Taken(name, note) => {
                // Told and counted in the same status write that moves
                // lastScheduleTime past `at`: a repeat counts it once.
                status.name_taken += 1;
                status.active.retain(|n| *n != name);
                status.active_count = i32::try_from(status.active.len()).unwrap_or(i32::MAX);
                notes.push(note);
                continue;
            }
        }
        let lag = now.duration_since(*at).as_secs_f64().max(0.0);
        ctx.metrics.cron_run_created(lag);
    }
    Ok(())
}

/// What became of a run to create.
enum Made {
    /// Created now.
    Now(Note),
    /// Made before (AlreadyExists, and controlled by this CronTask).
    Before,
    /// Another Task has its name (the run's name, and a Warning).
    Taken(String, Note),
    /// The API server refused it for what it carries.
    Not(Note),
}

/// Creates the run scheduled at `at`. AlreadyExists is the run made
/// before when this CronTask controls the Task of that name; otherwise
/// another Task took the name, and a Warning says what claims it.
async fn create_run(
    ctx: &Context,
    tasks: &Api<Task>,
    cron: &CronTask,
    at: Timestamp,
) -> Result<Made, Error> {
    let task = crds::cron::build_run(cron, at, false);
    let name = task.name_any();
    match api::call(ctx, "create", tasks.create(&PostParams::default(), &task)).await {
        Ok(_) => Ok(Made::Now(Note {
            warning: false,
            related: None,
            reason: "Created",
            message: format!("created run {name} for {at}"),
        })),
        Err(e) if e.code() == Some(409) => name_holder(ctx, tasks, cron, &name, at).await,
        Err(e) if e.refusal().is_some() => Ok(Made::Not(Note {
            warning: true,
            related: None,
            reason: "RunRefused",
            message: format!(
                "the API server refused run {name} for {at}: {}",
                e.refusal().unwrap_or_default()
            ),
        })),
        Err(source) => Err(Error::CreateRun {
            namespace: cron.namespace().unwrap_or_default(),
            name,
            source,
        }),
    }
}

/// The Task named `name` exists: the run made before, or a Task that took
/// the name of the run for `at`.
async fn name_holder(
    ctx: &Context,
    tasks: &Api<Task>,
    cron: &CronTask,
    name: &str,
    at: Timestamp,
) -> Result<Made, Error> {
    let held = api::call(ctx, "get", tasks.get(name))
        .await
        .map_err(|source| Error::GetRun {
            namespace: cron.namespace().unwrap_or_default(),
            name: name.to_owned(),
            source,
        })?;
    let uid = cron.metadata.uid.as_deref().unwrap_or_default();
    if crate::cache::is_run_of(&held, &cron.name_any(), uid) {
        return Ok(Made::Before);
    }
    let claim = match held.owner_references().first() {
        None => "it has no owner".to_owned(),
        Some(o) if o.kind == names::CRON_KIND => {
            format!(
                "it is owned by CronTask {} of UID {}, not {} of UID {uid}",
                o.name,
                o.uid,
                cron.name_any()
            )
        }
        Some(o) => format!("it is owned by {} {}", o.kind, o.name),
    };
    Ok(Made::Taken(
        name.to_owned(),
        Note {
            warning: true,
            related: Some(name.to_owned()),
            reason: "RunNameTaken",
            message: format!(
                "the run scheduled at {at} was not made: Task {name} already exists and \
                 was not made by this CronTask ({claim}); counted in status.nameTaken"
            ),
        },
    ))
}

/// Sets spec.suspend (stopAfterFailures reached): a merge patch of that
/// one field, which `kubectl longtask resume` (or an edit) sets back.
async fn suspend(ctx: &Context, cron: &CronTask) -> Result<(), Error> {
    let crons: Api<CronTask> =
        Api::namespaced(ctx.client.clone(), &cron.namespace().unwrap_or_default());
    let patch = serde_json::json!({"spec": {"suspend": true}});
    api::call(
        ctx,
        "patch",
        crons.patch(
            &cron.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        ),
    )
    .await
    .map(|_| ())
    .map_err(|source| Error::Suspend {
        namespace: cron.namespace().unwrap_or_default(),
        name: cron.name_any(),
        source,
    })
}

/// Writes `status` (server-side apply), unless it is the same.
async fn write_status(
    ctx: &Context,
    cron: &CronTask,
    status: &CronTaskStatus,
) -> Result<(), Error> {
    if cron.status.as_ref() == Some(status) {
        return Ok(());
    }
    let crons: Api<CronTask> =
        Api::namespaced(ctx.client.clone(), &cron.namespace().unwrap_or_default());
    let body = serde_json::json!({
        "apiVersion": names::API_VERSION,
        "kind": names::CRON_KIND,
        "status": status,
    });
    api::call(
        ctx,
        "patch",
        crons.patch_status(&cron.name_any(), &api::apply_params(), &Patch::Apply(&body)),
    )
    .await
    .map(|_| ())
    .map_err(|source| Error::PatchStatus {
        namespace: cron.namespace().unwrap_or_default(),
        name: cron.name_any(),
        source,
    })
}

/// Records `notes` as Events on `cron` (see `api::publish_on`).
fn publish(ctx: &Context, cron: &CronTask, notes: Vec<Note>) {
    let events = notes
        .into_iter()
        .map(|n| {
            let mut ev = api::event(n.warning, n.reason, &n.message, "Schedule");
            ev.secondary = n.related.map(|name| ObjectReference {
                api_version: Some(names::API_VERSION.to_owned()),
                kind: Some(names::KIND.to_owned()),
                namespace: cron.namespace(),
                name: Some(name),
                ..ObjectReference::default()
            });
            (n.reason, ev)
        })
        .collect();
    api::publish_on(ctx, cron.object_ref(&()), events);
}
