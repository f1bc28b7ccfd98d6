//! Pure builders: the Job that runs a Task (with its outputs store and
//! upload grant when it has one), the Task's outputs Secret, and the
//! worker's ServiceAccount and RoleBinding. No client here.

use std::collections::{BTreeMap, BTreeSet};

use crds::Task;
use crds::names::{self, env, labels};
use crds::outputs::{UPLOAD_KEY, secret_name};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, Secret, SecretKeySelector, ServiceAccount};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

pub use crate::job::identity::{Identity, IdentityError, identity};
use crate::job::{pod, shape};

/// Annotation on a Task's Job naming the `OutputStore` its outputs go to,
/// set when the Job is made: the store the Task's status lists them in.
pub const STORE_ANNOTATION: &str = "longtask.dev/output-store";

/// Labels linking a Job and its pods back to their Task.
pub fn task_labels(id: &Identity<'_>) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::TASK_NAME.to_owned(), id.name.to_owned()),
        (labels::TASK_UID.to_owned(), id.uid.to_owned()),
    ])
}

/// The controller owner reference from a Job to its Task.
pub fn controller_ref(id: &Identity<'_>) -> OwnerReference {
    OwnerReference {
        api_version: Task::api_version(&()).into_owned(),
        kind: Task::kind(&()).into_owned(),
        name: id.name.to_owned(),
        uid: id.uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The Job that runs `task` with the worker image `worker_image`.
pub fn job(task: &Task, worker_image: &str) -> Result<Job, IdentityError> {
    let id = identity(task)?;
    let spec = &task.spec;
    let lbls = task_labels(&id);
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(id.name.to_owned()),
            namespace: Some(id.namespace.to_owned()),
            labels: Some(shape::job_labels(task, &lbls)),
            annotations: shape::job_annotations(task),
            owner_references: Some(vec![controller_ref(&id)]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            active_deadline_seconds: spec.timeout_seconds,
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished,
            template: pod::template(task, &id, worker_image, lbls),
            ..shape::job_spec(spec)
        }),
        status: None,
    })
}

/// The Job that runs `task`, uploading its outputs to the store named
/// `store` when it has one: the Job records the store (annotation
/// `longtask.dev/output-store`), and the worker gets the upload grant
/// from the Task's outputs Secret (`$LONGTASK_UPLOAD_GRANT`, a
/// `secretKeyRef`: the grant is never in the Job's spec).
pub fn job_with_outputs(
    task: &Task,
    worker_image: &str,
    store: Option<&str>,
) -> Result<Job, IdentityError> {
    let mut job = job(task, worker_image)?;
    let Some(store) = store else {
        return Ok(job);
    };
    let id = identity(task)?;
    job.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(STORE_ANNOTATION.to_owned(), store.to_owned());
    let grant = EnvVar {
        name: env::UPLOAD_GRANT.to_owned(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret_name(id.name),
                key: UPLOAD_KEY.to_owned(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    };
    let containers = job
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .map(|p| p.containers.iter_mut())
        .into_iter()
        .flatten();
    for c in containers.filter(|c| c.name == names::WORKER_CONTAINER) {
        c.env.get_or_insert_with(Vec::new).push(grant.clone());
    }
    Ok(job)
}

/// The Task's outputs Secret (`<task>-outputs`) holding `data` (the
/// upload grant, later the download grant, as JSON), owned by the Task
/// and labelled like its Job.
pub fn outputs_secret(id: &Identity<'_>, data: BTreeMap<String, Vec<u8>>) -> Secret {
    let mut lbls = task_labels(id);
    lbls.insert(
        labels::MANAGED_BY.to_owned(),
        labels::MANAGED_BY_VALUE.to_owned(),
    );
    Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(id.name)),
            namespace: Some(id.namespace.to_owned()),
            labels: Some(lbls),
            owner_references: Some(vec![controller_ref(id)]),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(data.into_iter().map(|(k, v)| (k, ByteString(v))).collect()),
        ..Secret::default()
    }
}

fn managed_meta(name: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(BTreeMap::from([(
            labels::MANAGED_BY.to_owned(),
            labels::MANAGED_BY_VALUE.to_owned(),
        )])),
        ..ObjectMeta::default()
    }
}

/// The ServiceAccount worker pods run as, in `namespace`.
pub fn worker_service_account(namespace: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: managed_meta(names::WORKER_SERVICE_ACCOUNT, namespace),
        ..ServiceAccount::default()
    }
}

/// The RoleBinding `longtask-worker` giving the worker ClusterRole in
/// `namespace` to longtask-worker and to every account in `accounts` (those
/// the namespace's Tasks name), in name order.
pub fn worker_role_binding<'a>(
    namespace: &str,
    accounts: impl IntoIterator<Item = &'a str>,
) -> RoleBinding {
    let mut names: BTreeSet<&str> = accounts.into_iter().collect();
    names.insert(names::WORKER_SERVICE_ACCOUNT);
    RoleBinding {
        metadata: managed_meta(names::WORKER_ROLE_BINDING, namespace),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_owned()),
            kind: "ClusterRole".to_owned(),
            name: names::WORKER_CLUSTER_ROLE.to_owned(),
        },
        subjects: Some(
            names
                .into_iter()
                .map(|account| Subject {
                    kind: "ServiceAccount".to_owned(),
                    name: account.to_owned(),
                    namespace: Some(namespace.to_owned()),
                    ..Subject::default()
                })
                .collect(),
        ),
    }
}
