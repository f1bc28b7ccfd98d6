//! Pure builders: the Job that runs a Task, and the worker's ServiceAccount
//! and RoleBinding. No client here.

use std::collections::BTreeMap;

use crds::Task;
use crds::names::{self, env, labels};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, ObjectFieldSelector,
    PodSecurityContext, PodSpec, PodTemplateSpec, SeccompProfile, SecurityContext, ServiceAccount,
    Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::reconcile::shape;

/// UID and GID the worker runs as (matches the worker image's `USER`).
pub const WORKER_UID: i64 = 65532;

/// The Task's name, namespace and UID, which everything else hangs on.
pub struct Identity<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
}

/// Reads the identity of a Task as stored by the API server.
pub fn identity(task: &Task) -> Result<Identity<'_>, BuildError> {
    let m = &task.metadata;
    Ok(Identity {
        name: m
            .name
            .as_deref()
            .ok_or(BuildError::MissingMetadata("name"))?,
        namespace: m
            .namespace
            .as_deref()
            .ok_or(BuildError::MissingMetadata("namespace"))?,
        uid: m.uid.as_deref().ok_or(BuildError::MissingMetadata("uid"))?,
    })
}

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
pub fn job(task: &Task, worker_image: &str) -> Result<Job, BuildError> {
    let id = identity(task)?;
    let spec = &task.spec;
    let lbls = task_labels(&id);
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(id.name.to_owned()),
            namespace: Some(id.namespace.to_owned()),
            labels: Some(shape::job_labels(task, &lbls)),
            owner_references: Some(vec![controller_ref(&id)]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            active_deadline_seconds: spec.timeout_seconds,
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(lbls),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod(worker(task, &id, worker_image))),
            },
            ..shape::job_spec(spec)
        }),
        status: None,
    })
}

/// The pod around the worker container: never restarted in place (the
/// Job retries), the worker's ServiceAccount, the work directory.
fn pod(worker: Container) -> PodSpec {
    PodSpec {
        restart_policy: Some("Never".to_owned()),
        service_account_name: Some(names::WORKER_SERVICE_ACCOUNT.to_owned()),
        enable_service_links: Some(false),
        security_context: Some(pod_security()),
        volumes: Some(vec![Volume {
            name: names::WORK_VOLUME.to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        }]),
        containers: vec![worker],
        ..PodSpec::default()
    }
}

/// The worker container: `run -- <command> <args>`, the identity and
/// shard env before the Task's own, the work directory mounted.
fn worker(task: &Task, id: &Identity<'_>, image: &str) -> Container {
    let spec = &task.spec;
    let mut args = vec!["run".to_owned(), "--".to_owned()];
    args.extend(spec.command.iter().cloned());
    args.extend(spec.args.iter().cloned());
    let mut env_vars = identity_env(id);
    env_vars.extend(shape::shard_env(spec.shards));
    env_vars.extend(spec.env.iter().cloned());
    Container {
        name: names::WORKER_CONTAINER.to_owned(),
        image: Some(image.to_owned()),
        args: Some(args),
        env: Some(env_vars),
        resources: spec.resources.clone(),
        volume_mounts: Some(vec![VolumeMount {
            name: names::WORK_VOLUME.to_owned(),
            mount_path: names::WORK_DIR.to_owned(),
            ..VolumeMount::default()
        }]),
        security_context: Some(container_security()),
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        ..Container::default()
    }
}

fn identity_env(id: &Identity<'_>) -> Vec<EnvVar> {
    let plain = |name: &str, value: &str| EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        ..EnvVar::default()
    };
    let field = |name: &str, path: String| EnvVar {
        name: name.to_owned(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path,
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    };
    vec![
        plain(env::TASK_NAME, id.name),
        plain(env::TASK_UID, id.uid),
        field(env::NAMESPACE, "metadata.namespace".to_owned()),
        field(env::POD_NAME, "metadata.name".to_owned()),
        field(env::POD_UID, "metadata.uid".to_owned()),
        field(
            env::JOB_UID,
            format!("metadata.labels['{}']", labels::JOB_CONTROLLER_UID),
        ),
        plain(env::WORK_DIR, names::WORK_DIR),
    ]
}

fn seccomp() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".to_owned(),
        ..SeccompProfile::default()
    }
}

/// Pod-level settings of the `restricted` Pod Security Standard.
fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(WORKER_UID),
        run_as_group: Some(WORKER_UID),
        fs_group: Some(WORKER_UID),
        seccomp_profile: Some(seccomp()),
        ..PodSecurityContext::default()
    }
}

/// Container-level settings of the `restricted` Pod Security Standard.
fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            ..Capabilities::default()
        }),
        run_as_non_root: Some(true),
        seccomp_profile: Some(seccomp()),
        ..SecurityContext::default()
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

/// The RoleBinding giving that account the worker ClusterRole in `namespace`.
pub fn worker_role_binding(namespace: &str) -> RoleBinding {
    RoleBinding {
        metadata: managed_meta(names::WORKER_ROLE_BINDING, namespace),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_owned()),
            kind: "ClusterRole".to_owned(),
            name: names::WORKER_CLUSTER_ROLE.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: names::WORKER_SERVICE_ACCOUNT.to_owned(),
            namespace: Some(namespace.to_owned()),
            ..Subject::default()
        }]),
    }
}

/// Failures of the pure Job builder .
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("Task has no metadata.{0} (not read from the API server?)")]
    MissingMetadata(&'static str),
}
