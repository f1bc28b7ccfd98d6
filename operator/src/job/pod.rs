//! Pure: the pod template of a Task's Job. Without `spec.image` the worker
//! image runs the program; with it, an init container from the worker image
//! installs the static worker binary into a volume and the user's image
//! runs it. `spec.podTemplate`, `volumeMounts`, `workingDir` and
//! `securityContext` shape the pod; longtask's own parts (restartPolicy,
//! the volumes and init container it adds, the identity environment) win.

use std::collections::BTreeMap;

use crds::after::inputs;
use crds::names::{self, env, labels};
use crds::result::{config_map_name, keys};
use crds::{PodTemplate, Task};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapKeySelector, Container, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, SeccompProfile,
    SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::job::identity::Identity;
use crate::job::shape;

/// UID and GID the worker runs as (matches the worker image's `USER`), and
/// the default of a Task's pod.
pub const WORKER_UID: i64 = 65532;

/// The Job's pod template: the Task's link labels (over the user's pod
/// labels) and the pod.
pub fn template(
    task: &Task,
    id: &Identity<'_>,
    worker_image: &str,
    link: BTreeMap<String, String>,
) -> PodTemplateSpec {
    let user = *task.spec.pod_template.clone().unwrap_or_default();
    let meta = user.metadata.clone().unwrap_or_default();
    let mut pod_labels = meta.labels;
    pod_labels.extend(link);
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: (!meta.annotations.is_empty()).then_some(meta.annotations),
            ..ObjectMeta::default()
        }),
        spec: Some(pod(task, id, worker_image, user)),
    }
}

fn pod(task: &Task, id: &Identity<'_>, worker_image: &str, user: PodTemplate) -> PodSpec {
    let own_image = task.spec.image.is_some();
    let mut volumes = vec![empty_dir(names::WORK_VOLUME)];
    if own_image {
        volumes.push(empty_dir(names::BIN_VOLUME));
    }
    volumes.extend(user.volumes);
    PodSpec {
        restart_policy: Some("Never".to_owned()),
        service_account_name: Some(worker_account(task).to_owned()),
        // The worker needs its token even where the account opts out.
        automount_service_account_token: Some(true),
        enable_service_links: Some(false),
        security_context: Some(overlay(pod_security(), user.security_context.as_ref())),
        volumes: Some(volumes),
        init_containers: own_image.then(|| vec![installer(worker_image)]),
        containers: vec![program(task, id, worker_image)],
        node_selector: (!user.node_selector.is_empty()).then_some(user.node_selector),
        tolerations: (!user.tolerations.is_empty()).then_some(user.tolerations),
        affinity: user.affinity,
        topology_spread_constraints: (!user.topology_spread_constraints.is_empty())
            .then_some(user.topology_spread_constraints),
        priority_class_name: user.priority_class_name,
        runtime_class_name: user.runtime_class_name,
        image_pull_secrets: (!user.image_pull_secrets.is_empty())
            .then_some(user.image_pull_secrets),
        ..PodSpec::default()
    }
}

/// The ServiceAccount the Task's pods run as: `podTemplate`'s, or
/// longtask-worker.
pub fn worker_account(task: &Task) -> &str {
    task.spec
        .pod_template
        .as_ref()
        .and_then(|p| p.service_account_name.as_deref())
        .unwrap_or(names::WORKER_SERVICE_ACCOUNT)
}

fn empty_dir(name: &str) -> Volume {
    Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

/// The init container of an `image` Task: the worker image copies its own
/// binary into the bin volume, as the worker's uid whatever the pod says.
fn installer(worker_image: &str) -> Container {
    Container {
        name: names::INSTALL_CONTAINER.to_owned(),
        image: Some(worker_image.to_owned()),
        args: Some(vec!["install".to_owned(), names::BIN_DIR.to_owned()]),
        volume_mounts: Some(vec![mount(names::BIN_VOLUME, names::BIN_DIR, false)]),
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(WORKER_UID),
            run_as_group: Some(WORKER_UID),
            read_only_root_filesystem: Some(true),
            ..container_security()
        }),
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        ..Container::default()
    }
}

/// The program's container: the worker (the image's entrypoint, or the
/// installed binary in the user's image) runs `command` and `args`, with
/// the identity and shard env before the Task's own.
fn program(task: &Task, id: &Identity<'_>, worker_image: &str) -> Container {
    let spec = &task.spec;
    let mut args = vec!["run".to_owned(), "--".to_owned()];
    args.extend(spec.command.iter().cloned());
    args.extend(spec.args.iter().cloned());
    let mut env_vars = identity_env(id);
    env_vars.extend(shape::shard_env(spec.shards));
    env_vars.extend(inputs_env(task));
    let mut mounts = vec![mount(names::WORK_VOLUME, names::WORK_DIR, false)];
    let (image, command) = match &spec.image {
        Some(image) => {
            mounts.push(mount(names::BIN_VOLUME, names::BIN_DIR, true));
            // Images that default to root run as 65532, whose home the
            // image does not have: give it the work directory.
            if !spec.env.iter().any(|e| e.name == "HOME") {
                env_vars.push(plain("HOME", names::WORK_DIR));
            }
            let bin = format!("{}/{}", names::BIN_DIR, names::WORKER_BINARY);
            (image.clone(), Some(vec![bin]))
        }
        None => (worker_image.to_owned(), None),
    };
    env_vars.extend(spec.env.iter().cloned());
    mounts.extend(spec.volume_mounts.iter().cloned());
    Container {
        name: names::WORKER_CONTAINER.to_owned(),
        image: Some(image),
        image_pull_policy: spec.image_pull_policy.map(|p| p.as_str().to_owned()),
        command,
        args: Some(args),
        env: Some(env_vars),
        resources: spec.resources.as_deref().cloned(),
        volume_mounts: Some(mounts),
        working_dir: spec.working_dir.clone(),
        security_context: Some(overlay(
            container_security(),
            spec.security_context.as_deref(),
        )),
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        ..Container::default()
    }
}

fn plain(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        ..EnvVar::default()
    }
}

/// The upstreams' results and exit codes (`spec.after`), read by the
/// kubelet from their result ConfigMaps (`<upstream>-result`) as the pod
/// starts, for the worker to hand to the program as files under
/// `$LONGTASK_INPUTS`. Each is optional: an upstream that left no result,
/// or whose result is stored compressed (over 900 KiB, or not UTF-8),
/// gives no file rather than a pod that cannot start.
fn inputs_env(task: &Task) -> Vec<EnvVar> {
    let after = &task.spec.after;
    if after.is_empty() {
        return Vec::new();
    }
    let names: Vec<&str> = after.iter().map(|u| u.name.as_str()).collect();
    let mut out = vec![plain(inputs::NAMES, &names.join(","))];
    for (i, up) in after.iter().enumerate() {
        let cm = config_map_name(&up.name);
        out.push(from_config_map(&inputs::result_var(i), &cm, keys::RESULT));
        out.push(from_config_map(
            &inputs::exit_code_var(i),
            &cm,
            keys::EXIT_CODE,
        ));
    }
    out
}

/// `name` from key `key` of ConfigMap `cm`, unset when either is missing.
fn from_config_map(name: &str, cm: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: cm.to_owned(),
                key: key.to_owned(),
                optional: Some(true),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

fn identity_env(id: &Identity<'_>) -> Vec<EnvVar> {
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

/// `ours` with every field the user set replaced by the user's: the
/// defaults hold where the user says nothing.
fn overlay<T: Serialize + DeserializeOwned>(ours: T, user: Option<&T>) -> T {
    let Some(user) = user else {
        return ours;
    };
    let (Ok(serde_json::Value::Object(mut base)), Ok(serde_json::Value::Object(top))) =
        (serde_json::to_value(&ours), serde_json::to_value(user))
    else {
        return ours;
    };
    for (k, v) in top {
        if !v.is_null() {
            base.insert(k, v);
        }
    }
    serde_json::from_value(serde_json::Value::Object(base)).unwrap_or(ours)
}

fn seccomp() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".to_owned(),
        ..SeccompProfile::default()
    }
}

/// Pod-level defaults: the `restricted` Pod Security Standard, as 65532.
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

/// Container-level defaults of the `restricted` Pod Security Standard
/// (runAsNonRoot is the pod's, so that a user's pod-level choice holds).
fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            ..Capabilities::default()
        }),
        seccomp_profile: Some(seccomp()),
        ..SecurityContext::default()
    }
}
