//! The API layer: every call to the API server the reconcilers make, each
//! bounded by the configured timeout and counted in the metrics, and their
//! errors. Thin: decisions live in `status/`, `queue/`, `cron::decide`.
//! - here: the calls, and `call`, which runs one (the reconcilers' own
//!   calls in `reconcile::accounts`, `cron` and `collector` go through it);
//! - [`error`]: `ApiError`, one variant per call, naming its object;
//! - [`call_error`]: why one call failed (`CallError`), shared with the
//!   elector, and how an error chain is printed;
//! - [`apply_json`]: the body of a server-side apply as JSON YAML accepts.

use std::future::Future;
use std::time::Duration;

use crds::names::{self, API_VERSION, KIND, OPERATOR_FIELD_MANAGER, labels};
use crds::{Task, TaskStatus};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams, Preconditions,
};
use kube::runtime::events::{Event, EventType};
use kube::{Api, Resource, ResourceExt};
use tracing::{info, warn};

pub mod apply_json;
pub mod call_error;
pub mod error;

use crate::api::apply_json::apply_json;
use crate::api::call_error::CallError;
use crate::api::error::ApiError;
use crate::context::Context;
use crate::status::events::{Note, reason};
use crate::status::{kueue, observe};
use crate::telemetry::metrics::Metrics;

/// Runs one API call with the timeout, recording its outcome.
pub(crate) async fn call<T>(
    ctx: &Context,
    verb: &'static str,
    fut: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, CallError> {
    bounded(&ctx.metrics, ctx.config.api_timeout, verb, fut).await
}

/// `fut` bounded by `limit`, its outcome counted under `verb`.
async fn bounded<T>(
    metrics: &Metrics,
    limit: Duration,
    verb: &'static str,
    fut: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, CallError> {
    let res = match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(CallError::from),
        Err(_) => Err(CallError::Timeout(limit)),
    };
    metrics.api_request(verb, call_error::outcome(&res));
    res
}

pub(crate) fn apply_params() -> PatchParams {
    PatchParams::apply(OPERATOR_FIELD_MANAGER).force()
}

/// The Job named `name`, if it exists.
pub async fn get_job(ctx: &Context, namespace: &str, name: &str) -> Result<Option<Job>, ApiError> {
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), namespace);
    call(ctx, "get", api.get_opt(name))
        .await
        .map_err(|source| ApiError::GetJob {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })
}

/// Creates the Job, or returns the one already there (AlreadyExists is
/// expected after a restart or a stale read; its owner is checked later).
pub async fn create_job(ctx: &Context, job: &Job) -> Result<Job, ApiError> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let err = |source| ApiError::CreateJob {
        namespace: namespace.clone(),
        name: name.clone(),
        source,
    };
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    match call(ctx, "create", api.create(&PostParams::default(), job)).await {
        Ok(created) => {
            info!(job = %name, "created Job");
            ctx.metrics.job_created();
            Ok(created)
        }
        Err(CallError::Kube(kube::Error::Api(s))) if s.is_already_exists() => {
            info!(job = %name, "Job already exists; reading it");
            match get_job(ctx, &namespace, &name).await? {
                Some(j) => Ok(j),
                None => Err(err(CallError::Kube(kube::Error::Api(s)))),
            }
        }
        Err(e) => {
            if let Some(why) = e.refusal() {
                warn!(namespace = %namespace, job = %name, refusal = %why, "the API server refused the Job");
            } else {
                // Perhaps the namespace was made again: apply its RBAC next time.
                ctx.rbac.forget(&namespace);
            }
            Err(err(e))
        }
    }
}

/// Deletes the finished Task `task` (fenced by UID: never a Task made
/// again under its name) in the background: the garbage collector then
/// removes its Job, pods and result ConfigMaps, which it owns. A Task
/// already gone, or replaced, is no error.
pub async fn delete_task(
    ctx: &Context,
    task: &Task,
    rule: &'static str,
    why: &str,
) -> Result<(), ApiError> {
    let namespace = task.namespace().unwrap_or_default();
    let name = task.name_any();
    if delete_task_fenced(ctx, &namespace, &name, task.metadata.uid.as_deref()).await? {
        info!(namespace = %namespace, task = %name, why, "deleted finished Task");
        ctx.metrics.task_deleted(rule);
        // Said where its owner looks (`kubectl get events`), not only in
        // our log: the Events outlive the Task by the API server's TTL.
        let reason = reason::DELETED.as_str();
        let ev = event(false, reason, &format!("deleted: {why}"), "Delete");
        publish_on(ctx, task.object_ref(&()), vec![(reason, ev)]);
    }
    Ok(())
}

/// Deletes Task `name` only if its UID is still `uid` (when given), in the background
/// (the garbage collector then removes what it owns). True when it was
/// deleted; a Task already gone, or replaced, is no error (false).
pub async fn delete_task_fenced(
    ctx: &Context,
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> Result<bool, ApiError> {
    let api: Api<Task> = Api::namespaced(ctx.client.clone(), namespace);
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: uid.map(str::to_owned),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match call(ctx, "delete", api.delete(name, &dp)).await {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.code(), Some(404 | 409)) => Ok(false),
        Err(source) => Err(ApiError::DeleteTask {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        }),
    }
}

/// Suspends the Job: the Job controller deletes its pods (SIGTERM, then
/// SIGKILL after the grace period) and starts no new ones.
pub async fn suspend_job(
    ctx: &Context,
    job: &Job,
    ended: Option<&serde_json::Value>,
) -> Result<(), ApiError> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    // Fenced by UID: never suspend a Job that replaced ours meanwhile.
    let mut body = serde_json::json!({
        "metadata": { "uid": job.metadata.uid },
        "spec": { "suspend": true },
    });
    if let Some(e) = ended {
        body["metadata"]["annotations"] =
            serde_json::json!({ names::annotations::ENDED: e.to_string() });
    }
    call(
        ctx,
        "patch",
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&body)),
    )
    .await
    .map(|_| info!(job = %name, "suspended Job"))
    .map_err(|source| ApiError::SuspendJob {
        namespace,
        name,
        source,
    })
}

/// Kueue's Workload API (`workloads.kueue.x-k8s.io`, the version Kueue
/// v0.17 stores).
fn workloads(ctx: &Context, namespace: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "workloads");
    Api::namespaced_with(ctx.client.clone(), namespace, &ar)
}

/// The Kueue Workload of `job` (found by Kueue's label with the Job's
/// UID); `None` when Kueue is not installed (the API answers 404), so a
/// cluster without Kueue sees no error.
pub async fn job_workload(
    ctx: &Context,
    namespace: &str,
    job: &Job,
) -> Result<Option<kueue::Seen>, ApiError> {
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    let lp = ListParams::default().labels(&format!("{}={uid}", labels::KUEUE_JOB_UID));
    match call(ctx, "list", workloads(ctx, namespace).list(&lp)).await {
        Ok(list) => {
            // Kueue keeps one Workload per Job; the newest is the live one.
            let newest = list
                .items
                .iter()
                .max_by_key(|w| w.metadata.creation_timestamp.as_ref().map(|t| t.0));
            Ok(Some(match newest {
                Some(w) => kueue::Seen::Workload(kueue::Workload::from_value(
                    &serde_json::to_value(w).unwrap_or_default(),
                )),
                None => kueue::Seen::NoWorkload,
            }))
        }
        Err(e) if e.code() == Some(404) => Ok(None),
        Err(source) => Err(ApiError::ListWorkloads {
            namespace: namespace.to_owned(),
            name: job.name_any(),
            source,
        }),
    }
}

/// Records on the Job how its Task ended (annotation `longtask.dev/ended`),
/// fenced by the Job's UID.
pub async fn mark_ended(
    ctx: &Context,
    job: &Job,
    ended: &serde_json::Value,
) -> Result<(), ApiError> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let body = serde_json::json!({
        "metadata": {
            "uid": job.metadata.uid,
            "annotations": { names::annotations::ENDED: ended.to_string() },
        },
    });
    call(
        ctx,
        "patch",
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&body)),
    )
    .await
    .map(|_| ())
    .map_err(|source| ApiError::MarkJobEnded {
        namespace,
        name,
        source,
    })
}

/// Deactivates Kueue Workload `name` of `job` (`spec.active: false`):
/// Kueue evicts it, suspends the Job (its pods get SIGTERM) and never
/// admits it again.
pub async fn deactivate_workload(ctx: &Context, job: &Job, name: &str) -> Result<(), ApiError> {
    let namespace = job.namespace().unwrap_or_default();
    let body = serde_json::json!({ "spec": { "active": false } });
    call(
        ctx,
        "patch",
        workloads(ctx, &namespace).patch(name, &PatchParams::default(), &Patch::Merge(&body)),
    )
    .await
    .map(|_| info!(workload = %name, job = %job.name_any(), "deactivated Kueue Workload"))
    .map_err(|source| ApiError::DeactivateWorkload {
        namespace,
        name: name.to_owned(),
        source,
    })
}

/// Task UIDs (from the label) of every Job the operator made in `namespace`
/// (`None`: all namespaces), read live from the API server.
pub async fn list_job_task_uids(
    ctx: &Context,
    namespace: Option<&str>,
) -> Result<Vec<(String, String)>, ApiError> {
    let api: Api<Job> = match namespace {
        Some(ns) => Api::namespaced(ctx.client.clone(), ns),
        None => Api::all(ctx.client.clone()),
    };
    let lp = ListParams::default().labels(labels::TASK_UID);
    let list = call(ctx, "list", api.list_metadata(&lp))
        .await
        .map_err(|source| ApiError::ListJobs {
            namespace: namespace.unwrap_or("all namespaces").to_owned(),
            source,
        })?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|j| {
            let ns = j.metadata.namespace.clone()?;
            let uid = j.metadata.labels.as_ref()?.get(labels::TASK_UID)?.clone();
            Some((ns, uid))
        })
        .collect())
}

/// The metadata of namespace `name` (absent namespace: none), read for
/// `why` (its annotations hold its Task limit, its labels its output store).
pub async fn namespace_metadata(
    ctx: &Context,
    name: &str,
    why: &'static str,
) -> Result<Option<ObjectMeta>, ApiError> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    call(ctx, "get", api.get_metadata_opt(name))
        .await
        .map(|ns| ns.map(|n| n.metadata))
        .map_err(|source| ApiError::GetNamespace {
            name: name.to_owned(),
            why,
            source,
        })
}

/// The data of the Secret `namespace/name` (an output store's
/// credentials, in the operator's namespace); `None` when it is absent.
pub async fn secret_data(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<std::collections::BTreeMap<String, ByteString>>, ApiError> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
    call(ctx, "get", api.get_opt(name))
        .await
        .map(|s| s.map(|s| s.data.unwrap_or_default()))
        .map_err(|source| ApiError::GetCredentials {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })
}

/// Creates the outputs Secret `secret` of the Task with UID `task_uid`,
/// or, when it exists, replaces its data with `secret`'s, by a JSON patch
/// whose first operation tests that its controller is that Task: the
/// operator may not read Secrets, and never changes one that is not the
/// Task's own. `Ok(Err(why))` when a Secret of that name is someone
/// else's.
pub async fn put_outputs_secret(
    ctx: &Context,
    secret: &Secret,
    task_uid: &str,
) -> Result<Result<(), String>, ApiError> {
    let namespace = secret.namespace().unwrap_or_default();
    let name = secret.name_any();
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    match call(ctx, "create", api.create(&PostParams::default(), secret)).await {
        Ok(_) => Ok(Ok(())),
        Err(e) if e.code() == Some(409) => replace_outputs_data(ctx, &api, secret, task_uid).await,
        Err(source) => Err(ApiError::CreateOutputsSecret {
            namespace,
            name,
            source,
        }),
    }
}

/// The second half of [`put_outputs_secret`]: the Secret exists.
async fn replace_outputs_data(
    ctx: &Context,
    api: &Api<Secret>,
    secret: &Secret,
    task_uid: &str,
) -> Result<Result<(), String>, ApiError> {
    let namespace = secret.namespace().unwrap_or_default();
    let name = secret.name_any();
    let err = |source| ApiError::PatchOutputsSecret {
        namespace: namespace.clone(),
        name: name.clone(),
        source,
    };
    let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
        { "op": "test", "path": "/metadata/ownerReferences/0/uid", "value": task_uid },
        { "op": "test", "path": "/metadata/ownerReferences/0/controller", "value": true },
        { "op": "replace", "path": "/data", "value": secret.data },
    ]))
    .map_err(|e| err(CallError::Kube(kube::Error::SerdeError(e))))?;
    let params = PatchParams::default();
    let patch = Patch::<()>::Json(patch);
    match call(ctx, "patch", api.patch(&name, &params, &patch)).await {
        Ok(_) => Ok(Ok(())),
        // A failed test (or no owner at all): not this Task's Secret.
        Err(e) if e.code() == Some(422) => Ok(Err(format!(
            "a Secret {namespace}/{name} exists and is not this Task's; delete it, and \
             create the Task again"
        ))),
        Err(source) => Err(err(source)),
    }
}

/// Pods controlled by `job` (found by the Task UID label, fenced by Job UID).
pub async fn list_pods(
    ctx: &Context,
    namespace: &str,
    task_uid: &str,
    job: &Job,
) -> Result<Vec<Pod>, ApiError> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let lp = ListParams::default().labels(&format!("{}={task_uid}", labels::TASK_UID));
    let list = call(ctx, "list", api.list(&lp))
        .await
        .map_err(|source| ApiError::ListPods {
            namespace: namespace.to_owned(),
            name: job.name_any(),
            source,
        })?;
    let job_uid = job.metadata.uid.as_deref();
    Ok(list
        .items
        .into_iter()
        .filter(|p| job_uid.is_some_and(|uid| observe::controlled_by(&p.metadata, uid)))
        .collect())
}

/// The Task `name` as stored (the cache holds terminal Tasks slimmed).
pub async fn get_task(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<Task>, ApiError> {
    let api: Api<Task> = Api::namespaced(ctx.client.clone(), namespace);
    call(ctx, "get", api.get_opt(name))
        .await
        .map_err(|source| ApiError::GetTask {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })
}

/// The pod `name`, if it exists.
pub async fn get_pod(ctx: &Context, namespace: &str, name: &str) -> Result<Option<Pod>, ApiError> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    call(ctx, "get", api.get_opt(name))
        .await
        .map_err(|source| ApiError::GetPod {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })
}

/// The result ConfigMap `name`, if it exists.
pub async fn get_result(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<ConfigMap>, ApiError> {
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
    call(ctx, "get", api.get_opt(name))
        .await
        .map_err(|source| ApiError::GetResult {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })
}

/// Server-side applies the whole status, fenced by the Task's
/// resourceVersion so a reconcile from a stale cache gets a conflict
/// instead of overwriting newer status.
pub async fn patch_status(ctx: &Context, task: &Task, status: &TaskStatus) -> Result<(), ApiError> {
    let namespace = task.namespace().unwrap_or_default();
    let name = task.name_any();
    let body = serde_json::json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": { "name": name, "resourceVersion": task.resource_version() },
        "status": status,
    });
    let body = apply_json(&body).map_err(|e| ApiError::PatchStatus {
        namespace: namespace.clone(),
        name: name.clone(),
        source: CallError::Kube(kube::Error::SerdeError(e)),
    })?;
    let api: Api<Task> = Api::namespaced(ctx.client.clone(), &namespace);
    call(
        ctx,
        "patch_status",
        api.patch_status(&name, &apply_params(), &Patch::Apply(&body)),
    )
    .await
    .map(|_| ())
    .map_err(|source| ApiError::PatchStatus {
        namespace,
        name,
        source,
    })
}

/// Publishes `notes` as Events on the Task (see [`publish_on`]).
pub fn publish(ctx: &Context, task: &Task, notes: Vec<Note>) {
    let events = notes
        .into_iter()
        .map(|n| {
            let reason = n.reason.as_str();
            (reason, event(n.warning, reason, &n.message, n.action))
        })
        .collect();
    publish_on(ctx, task.object_ref(&()), events);
}

/// An Event of `reason`, its message cut to 1,000 bytes.
pub fn event(warning: bool, reason: &str, message: &str, action: &str) -> Event {
    Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.to_owned(),
        note: Some(crds::result::truncate_utf8(message, 1000).to_owned()),
        action: action.to_owned(),
        secondary: None,
    }
}

/// Publishes `events` (each with its reason as a metric label) on the
/// object `reference` names, in order, without the reconcile waiting for
/// them: a spawned task makes the calls, each bounded by the API timeout.
/// Events are best effort: a failure is logged and counted, and Events not
/// yet sent when the process stops are lost.
pub fn publish_on(
    ctx: &Context,
    reference: k8s_openapi::api::core::v1::ObjectReference,
    events: Vec<(&'static str, Event)>,
) {
    if events.is_empty() {
        return;
    }
    let recorder = ctx.recorder.clone();
    let metrics = ctx.metrics.clone();
    let limit = ctx.config.api_timeout;
    tokio::spawn(async move {
        for (reason, ev) in events {
            let sent = recorder.publish(&ev, &reference);
            match bounded(&metrics, limit, "create_event", sent).await {
                Ok(()) => metrics.event_published(reason),
                Err(e) => warn!(reason, error = %e, "cannot publish Event"),
            }
        }
    });
}
