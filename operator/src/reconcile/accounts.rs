//! Which ServiceAccounts are worker accounts (docs/security.md, "Worker
//! accounts"). A worker account may write results, and the admission
//! policies confine its ConfigMap writes to them, so an account becomes
//! one only where someone who may update the namespace's ServiceAccounts
//! opted it in (annotation `longtask.dev/worker: "true"`), only while none
//! of its pods was made by anything but a Job, and only while a Task of the
//! namespace needs it: it leaves the RoleBinding `longtask-worker` when
//! the last Task naming it ends. `longtask-worker` itself is always one.

use std::collections::BTreeSet;
use std::time::Duration;

use crds::Task;
use crds::names::{self, annotations};
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, ResourceAttributes, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ListParams, Patch, PostParams};
use kube::{Api, ResourceExt};

use crate::api;
use crate::api::error::ApiError;
use crate::context::{Context, WorkerRbac};
use crate::job::{build, pod};

/// Binds `account` in `namespace` as a worker account for a Task about to
/// start, unless it was lately. `Ok(Err(why))` when it may not be one:
/// not opted in, or it has pods no Job made (such a pod could write
/// results with the rights the binding gives).
pub async fn admit(
    ctx: &Context,
    namespace: &str,
    account: &str,
) -> Result<Result<(), String>, ApiError> {
    let ns_uid = ctx.queue.namespace_uid(namespace);
    let key = WorkerRbac::key(namespace, account);
    if ctx.rbac.fresh(&key, ns_uid.as_deref()) {
        return Ok(Ok(()));
    }
    let _one_at_a_time = ctx.rbac.applying().await;
    if ctx.rbac.fresh(&key, ns_uid.as_deref()) {
        return Ok(Ok(()));
    }
    let own = account == names::WORKER_SERVICE_ACCOUNT;
    if !own && let Err(why) = opted_in(ctx, namespace, account).await? {
        return Ok(Err(why));
    }
    let default_key = WorkerRbac::key(namespace, names::WORKER_SERVICE_ACCOUNT);
    if !ctx.rbac.fresh(&default_key, ns_uid.as_deref()) {
        apply_service_account(ctx, namespace).await?;
    }
    let mut accounts = needed(ctx, namespace, None);
    accounts.insert(account.to_owned());
    apply_binding(ctx, namespace, &accounts).await?;
    // After the binding, and once the API server's authorizer holds it, so
    // that a pod made before it is seen: the policy longtask-worker-pods
    // (which asks that authorizer) refuses any made after.
    if !own {
        bound_in_authorizer(ctx, namespace, account).await?;
    }
    if !own && let Some(why) = foreign_pods(ctx, namespace, account).await? {
        accounts.remove(account);
        apply_binding(ctx, namespace, &accounts).await?;
        ctx.rbac.bound_now(namespace, ns_uid, &accounts, None);
        return Ok(Err(why));
    }
    ctx.rbac
        .bound_now(namespace, ns_uid, &accounts, Some(account));
    Ok(Ok(()))
}

/// After `ended` ended: the RoleBinding keeps only the accounts Tasks of
/// its namespace still need. Returns true when an account was kept only
/// because it was admitted moments ago (look again later).
pub async fn release(ctx: &Context, ended: &Task) -> Result<bool, ApiError> {
    let namespace = ended.namespace().unwrap_or_default();
    let ns_uid = ctx.queue.namespace_uid(&namespace);
    let _one_at_a_time = ctx.rbac.applying().await;
    let Some(before) = ctx.rbac.applied(&namespace, ns_uid.as_deref()) else {
        // Nothing applied by this process: a later admission applies the
        // whole set anyway.
        return Ok(false);
    };
    let accounts = needed(ctx, &namespace, ended.metadata.uid.as_deref());
    let recent = ctx.rbac.recent(&namespace, ns_uid.as_deref());
    if accounts != before {
        apply_binding(ctx, &namespace, &accounts).await?;
        ctx.rbac.bound_now(&namespace, ns_uid, &accounts, None);
    }
    Ok(accounts.iter().any(|a| recent.contains(a)))
}

/// The accounts `namespace`'s Tasks need (but `except`): longtask-worker,
/// those of unfinished Tasks that have a Job (admitted when it was made,
/// by this process or an earlier one), and those admitted moments ago
/// (their Task's status may not show its Job yet).
fn needed(ctx: &Context, namespace: &str, except: Option<&str>) -> BTreeSet<String> {
    let ns_uid = ctx.queue.namespace_uid(namespace);
    let mut out = ctx.rbac.recent(namespace, ns_uid.as_deref());
    out.insert(names::WORKER_SERVICE_ACCOUNT.to_owned());
    let Some(store) = ctx.queue.tasks() else {
        return out;
    };
    for t in store.state() {
        let started = t.status.as_ref().is_some_and(|s| s.job_uid.is_some());
        let mine = t.metadata.namespace.as_deref() == Some(namespace);
        let excepted = except.is_some() && t.metadata.uid.as_deref() == except;
        if mine && started && !excepted && !t.is_terminal() {
            out.insert(pod::worker_account(&t).to_owned());
        }
    }
    out
}

/// `Err(why)` unless ServiceAccount `account` exists and opted in.
async fn opted_in(
    ctx: &Context,
    namespace: &str,
    account: &str,
) -> Result<Result<(), String>, ApiError> {
    let sas: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), namespace);
    let sa = api::call(ctx, "get", sas.get_metadata_opt(account))
        .await
        .map_err(|source| ApiError::GetServiceAccount {
            namespace: namespace.to_owned(),
            name: account.to_owned(),
            source,
        })?;
    let Some(sa) = sa else {
        return Ok(Err(format!(
            "spec.podTemplate.serviceAccountName: ServiceAccount {account} does not exist"
        )));
    };
    if sa
        .annotations()
        .get(annotations::WORKER_ACCOUNT)
        .map(String::as_str)
        == Some("true")
    {
        return Ok(Ok(()));
    }
    Ok(Err(format!(
        "spec.podTemplate.serviceAccountName: ServiceAccount {account} is not a longtask worker \
         account: someone who may update ServiceAccounts in this namespace opts it in with the \
         annotation {}=true",
        annotations::WORKER_ACCOUNT
    )))
}

/// Waits (up to 5 s) until the API server's authorizer answers that
/// `account` holds the worker role's marker permission, i.e. until the
/// policy longtask-worker-pods refuses the account's pods. RBAC's cache
/// follows a new RoleBinding a moment later: a pod created in that moment
/// passes the policy, and a list made before it is stored misses it. After
/// 5 s the check goes on and says so in the log.
async fn bound_in_authorizer(
    ctx: &Context,
    namespace: &str,
    account: &str,
) -> Result<(), ApiError> {
    let reviews: Api<LocalSubjectAccessReview> = Api::namespaced(ctx.client.clone(), namespace);
    let review = LocalSubjectAccessReview {
        metadata: ObjectMeta {
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        spec: SubjectAccessReviewSpec {
            user: Some(format!("system:serviceaccount:{namespace}:{account}")),
            groups: Some(vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
            ]),
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_owned()),
                group: Some(names::GROUP.to_owned()),
                resource: Some("workers".to_owned()),
                verb: Some("write-results".to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        status: None,
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let answer = api::call(
            ctx,
            "create",
            reviews.create(&PostParams::default(), &review),
        )
        .await
        .map_err(|source| ApiError::ReviewAccount {
            namespace: namespace.to_owned(),
            name: account.to_owned(),
            source,
        })?;
        if answer.status.is_some_and(|s| s.allowed) {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(
                namespace,
                account,
                "the authorizer did not show the worker binding within 5 s"
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Why `account` cannot be a worker account if it runs pods that no Job
/// controls (naming a few), else `None`.
async fn foreign_pods(
    ctx: &Context,
    namespace: &str,
    account: &str,
) -> Result<Option<String>, ApiError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let mut lp = ListParams::default()
        .fields(&format!("spec.serviceAccountName={account}"))
        .limit(200);
    let mut foreign = Vec::new();
    loop {
        let page = api::call(ctx, "list", pods.list_metadata(&lp))
            .await
            .map_err(|source| ApiError::ListAccountPods {
                namespace: namespace.to_owned(),
                name: account.to_owned(),
                source,
            })?;
        foreign.extend(
            page.items
                .iter()
                .filter(|p| !made_by_a_job(&p.metadata))
                .filter_map(|p| p.metadata.name.clone())
                .take(3usize.saturating_sub(foreign.len())),
        );
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) if foreign.len() < 3 => lp = lp.continue_token(&token),
            _ => break,
        }
    }
    Ok((!foreign.is_empty()).then(|| {
        format!(
            "spec.podTemplate.serviceAccountName: ServiceAccount {account} runs pods that no Job \
             made ({}), which could write this namespace's Task results if it became a worker \
             account; run Tasks under an account of their own",
            foreign.join(", ")
        )
    }))
}

/// True when a Job controls the pod `meta` describes (the admission
/// policy longtask-worker-pods lets only the Job controller make one so).
pub fn made_by_a_job(meta: &ObjectMeta) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.kind == "Job" && o.api_version == "batch/v1")
}

/// Server-side applies the namespace's own worker ServiceAccount.
async fn apply_service_account(ctx: &Context, namespace: &str) -> Result<(), ApiError> {
    let sa = build::worker_service_account(namespace);
    let name = sa.name_any();
    let sas: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), namespace);
    api::call(
        ctx,
        "apply",
        sas.patch(&name, &api::apply_params(), &Patch::Apply(&sa)),
    )
    .await
    .map(|_| ())
    .map_err(|source| ApiError::ApplyServiceAccount {
        namespace: namespace.to_owned(),
        name,
        source,
    })
}

/// Server-side applies the RoleBinding longtask-worker with exactly `accounts`.
async fn apply_binding(
    ctx: &Context,
    namespace: &str,
    accounts: &BTreeSet<String>,
) -> Result<(), ApiError> {
    let rb = build::worker_role_binding(namespace, accounts.iter().map(String::as_str));
    let name = rb.name_any();
    let rbs: Api<RoleBinding> = Api::namespaced(ctx.client.clone(), namespace);
    api::call(
        ctx,
        "apply",
        rbs.patch(&name, &api::apply_params(), &Patch::Apply(&rb)),
    )
    .await
    .map(|_| ())
    .map_err(|source| ApiError::ApplyRoleBinding {
        namespace: namespace.to_owned(),
        name,
        source,
    })
}
