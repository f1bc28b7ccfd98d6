//! Results by reference, the calls of a reconcile (decisions in the pure
//! `outputs`): before a Task's Job is made, which store it uses and its
//! upload grant in the Secret `<task>-outputs`; when its result is read as
//! final, where its objects are (`target`). The download grant of a
//! finished Task is `downloads`'.

use std::collections::BTreeMap;
use std::sync::Arc;

use crds::Task;
use crds::outputs::{DEFAULT_MAX_FILES, MAX_OBJECT_BYTES, OutputStore, UPLOAD_KEY, object_prefix};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use longtask_store::{Bucket, Credentials, upload_grant};

use crate::api;
use crate::api::error::ApiError;
use crate::context::Context;
use crate::job::build::{self, Identity, STORE_ANNOTATION};
use crate::outputs::grant;
use crate::outputs::report::Target;
use crate::outputs::resolve::{self, Named, Resolution};
use crate::reconcile::error::Error;
use crate::status::observe::{self, Ownership};

/// What a Task about to get its Job uploads to.
#[derive(Debug, PartialEq, Eq)]
pub enum Prepared {
    /// No store: the Job is made as before.
    None,
    /// The store of this name: the Task's outputs Secret holds its grant.
    Store(String),
    /// The Task fails before it runs (`OutputStoreUnavailable`): why.
    Unavailable(String),
}

/// Resolves the store of `task` and, when there is one, writes its upload
/// grant into the Task's outputs Secret, so that the Job can be made.
pub async fn prepare(ctx: &Context, task: &Task) -> Result<Prepared, Error> {
    let id = build::identity(task)?;
    let resolution = match resolution(ctx, task, &id).await? {
        Ok(r) => r,
        Err(why) => return Ok(Prepared::Unavailable(why)),
    };
    let store = match resolution {
        Resolution::None => return Ok(Prepared::None),
        Resolution::Unavailable(why) => return Ok(Prepared::Unavailable(why)),
        Resolution::Use(store) => store,
    };
    let (bucket, creds) = match signer(ctx, &store).await? {
        Ok(s) => s,
        Err(why) => return Ok(Prepared::Unavailable(why)),
    };
    let prefix = object_prefix(store.spec.s3.prefix(), id.namespace, id.name, id.uid);
    let now = Timestamp::now();
    let expires = grant::upload_expiry(now, task.spec.timeout_seconds);
    let max_bytes = store.spec.max_file_bytes.unwrap_or(MAX_OBJECT_BYTES);
    let max_files = store.spec.max_files.unwrap_or(DEFAULT_MAX_FILES);
    let g = upload_grant(
        &bucket,
        &creds,
        &prefix,
        u64::try_from(max_bytes).unwrap_or(0),
        u32::try_from(max_files).unwrap_or(0),
        now,
        expires,
    );
    let json = serde_json::to_vec(&g).unwrap_or_default();
    let secret = build::outputs_secret(&id, BTreeMap::from([(UPLOAD_KEY.to_owned(), json)]));
    Ok(match api::put_outputs_secret(ctx, &secret, id.uid).await? {
        Ok(()) => Prepared::Store(store.name_any()),
        Err(why) => Prepared::Unavailable(why),
    })
}

/// Which store applies to `task`, from the caches (a namespace the cache
/// does not hold yet is read). `Err(why)` where no store can be read at
/// all but the Task names one.
async fn resolution(
    ctx: &Context,
    task: &Task,
    id: &Identity<'_>,
) -> Result<Result<Resolution, String>, Error> {
    if !ctx.caches.reads_output_stores() {
        // One namespace watched: no OutputStore (cluster-scoped) is read.
        return Ok(match resolve::wanted(task, None) {
            Some((name, Named::Task)) => Err(format!(
                "spec.outputs.store names the OutputStore {name}, but this operator watches \
                 only namespace {} and reads no OutputStore",
                id.namespace
            )),
            _ => Ok(Resolution::None),
        });
    }
    let stores = ctx.caches.output_stores().ok_or(Error::StoresNotReady)?;
    let labels = namespace_labels(ctx, id.namespace).await?;
    let lookup = |name: &str| stores.get(&ObjectRef::new(name));
    Ok(Ok(resolve::resolve(task, labels.as_ref(), lookup)))
}

/// The labels of `namespace`: the cache's, else read.
async fn namespace_labels(
    ctx: &Context,
    namespace: &str,
) -> Result<Option<BTreeMap<String, String>>, Error> {
    let cached = ctx
        .queue
        .namespaces()
        .and_then(|s| s.get(&ObjectRef::new(namespace)));
    match cached {
        Some(ns) => Ok(Some(ns.metadata.labels.clone().unwrap_or_default())),
        None => Ok(
            api::namespace_metadata(ctx, namespace, "its output store label")
                .await?
                .map(|m| m.labels.unwrap_or_default()),
        ),
    }
}

/// The bucket of `store` and the keys that sign for it, read from its
/// credentials Secret in the operator's namespace; `Ok(Err(why))` when
/// they cannot be had (no namespace known, the Secret missing or
/// incomplete, the endpoint invalid).
pub async fn signer(
    ctx: &Context,
    store: &OutputStore,
) -> Result<Result<(Bucket, Credentials), String>, ApiError> {
    let name = store.name_any();
    let s3 = &store.spec.s3;
    let bucket = match Bucket::new(s3) {
        Ok(b) => b,
        Err(e) => return Ok(Err(format!("OutputStore {name}: {e}"))),
    };
    let Some(namespace) = ctx.config.operator_namespace.as_deref() else {
        return Ok(Err(format!(
            "the operator does not know its namespace (POD_NAMESPACE), where the credentials \
             Secret {} of OutputStore {name} is",
            s3.credentials_secret
        )));
    };
    let data = api::secret_data(ctx, namespace, &s3.credentials_secret).await?;
    let creds = resolve::credentials(&name, &s3.credentials_secret, namespace, data.as_ref());
    Ok(creds.map(|c| (bucket, c)))
}

/// Where the objects of `task` are, its Job being `job` (`None`: gone):
/// the store its Job names, else (no Job to tell) the one that applies to
/// it now; with the bucket and the Task's prefix as that store says
/// today. `None` when no store is known, which refuses any report.
pub fn target(ctx: &Context, task: &Task, job: Option<&Job>) -> Option<Target> {
    let id = build::identity(task).ok()?;
    let stores = ctx.caches.output_stores()?;
    let name = match job {
        Some(j) => {
            let ours = observe::ownership(j, id.uid) == Ownership::Ours;
            let named = j.annotations().get(STORE_ANNOTATION).filter(|_| ours);
            named?.clone()
        }
        None => {
            let labels = ctx
                .queue
                .namespaces()
                .and_then(|s| s.get(&ObjectRef::new(id.namespace)))
                .map(|ns| ns.metadata.labels.clone().unwrap_or_default());
            resolve::wanted(task, labels.as_ref())?.0
        }
    };
    let store: Arc<OutputStore> = stores.get(&ObjectRef::new(&name))?;
    Some(Target {
        store: name,
        bucket: store.spec.s3.bucket.clone(),
        prefix: object_prefix(store.spec.s3.prefix(), id.namespace, id.name, id.uid),
    })
}
