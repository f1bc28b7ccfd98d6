use std::collections::BTreeMap;

use crds::names;
use crds::{PodMetadata, PodTemplate, PullPolicy, Task};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, EnvVar, PodSecurityContext, PodSpec, SecurityContext, Toleration,
    Volume, VolumeMount,
};

use crate::fixtures::TaskFixture;
use crate::job::build::job;

fn task() -> Task {
    Task::test()
        .named("py")
        .uid("uid-1")
        .command(&["python3", "-c"])
        .args(&["print(1)"])
}

fn pod(t: &Task) -> PodSpec {
    job(t, "reg/longtask-worker:1")
        .unwrap()
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
}

#[test]
fn without_image_the_worker_image_runs_the_program() {
    let p = pod(&task());
    assert!(p.init_containers.is_none());
    let c = &p.containers[0];
    assert_eq!(c.image.as_deref(), Some("reg/longtask-worker:1"));
    assert_eq!(c.command, None, "the worker image's entrypoint runs");
    let vols: Vec<&str> = p
        .volumes
        .iter()
        .flatten()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(vols, [names::WORK_VOLUME]);
}

#[test]
fn own_image_runs_the_injected_worker() {
    let mut t = task();
    t.spec.image = Some("python:3.12".into());
    t.spec.image_pull_policy = Some(PullPolicy::Never);
    let p = pod(&t);
    let init = &p.init_containers.as_ref().unwrap()[0];
    assert_eq!(init.name, names::INSTALL_CONTAINER);
    assert_eq!(init.image.as_deref(), Some("reg/longtask-worker:1"));
    assert_eq!(init.args.as_deref().unwrap(), ["install", names::BIN_DIR]);
    let isc = init.security_context.as_ref().unwrap();
    assert_eq!(
        (isc.run_as_user, isc.run_as_group),
        (Some(65532), Some(65532))
    );
    let c = &p.containers[0];
    assert_eq!(c.image.as_deref(), Some("python:3.12"));
    assert_eq!(c.image_pull_policy.as_deref(), Some("Never"));
    assert_eq!(
        c.command.as_deref().unwrap(),
        ["/longtask-bin/longtask-worker"]
    );
    assert_eq!(
        c.args.as_deref().unwrap(),
        ["run", "--", "python3", "-c", "print(1)"]
    );
    let bin = c
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == names::BIN_VOLUME)
        .unwrap();
    assert_eq!(
        (bin.mount_path.as_str(), bin.read_only),
        (names::BIN_DIR, Some(true))
    );
    let home = c.env.iter().flatten().find(|e| e.name == "HOME").unwrap();
    assert_eq!(home.value.as_deref(), Some(names::WORK_DIR));
}

#[test]
fn users_home_wins() {
    let mut t = task().env(vec![EnvVar {
        name: "HOME".into(),
        value: Some("/home/app".into()),
        ..EnvVar::default()
    }]);
    t.spec.image = Some("python:3.12".into());
    let p = pod(&t);
    let homes: Vec<_> = p.containers[0]
        .env
        .iter()
        .flatten()
        .filter(|e| e.name == "HOME")
        .collect();
    assert_eq!(homes.len(), 1);
    assert_eq!(homes[0].value.as_deref(), Some("/home/app"));
}

#[test]
fn pod_template_shapes_the_pod_and_longtask_keeps_its_parts() {
    let mut t = task();
    t.spec.pod_template = Some(Box::new(PodTemplate {
        metadata: Some(PodMetadata {
            labels: BTreeMap::from([("team".into(), "ml".into())]),
            annotations: BTreeMap::from([("note".into(), "x".into())]),
        }),
        node_selector: BTreeMap::from([("pool".into(), "gpu".into())]),
        tolerations: vec![Toleration {
            key: Some("gpu".into()),
            operator: Some("Exists".into()),
            ..Toleration::default()
        }],
        priority_class_name: Some("high".into()),
        service_account_name: Some("analytics".into()),
        volumes: vec![Volume {
            name: "data".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: "cfg".into(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        }],
        security_context: Some(PodSecurityContext {
            run_as_user: Some(1000),
            ..PodSecurityContext::default()
        }),
        ..PodTemplate::default()
    }));
    t.spec.volume_mounts = vec![VolumeMount {
        name: "data".into(),
        mount_path: "/data".into(),
        ..VolumeMount::default()
    }];
    t.spec.working_dir = Some("/data".into());
    t.spec.security_context = Some(Box::new(SecurityContext {
        read_only_root_filesystem: Some(true),
        ..SecurityContext::default()
    }));
    let j = job(&t, "w").unwrap();
    let tmpl = j.spec.unwrap().template;
    let meta = tmpl.metadata.unwrap();
    let labels = meta.labels.unwrap();
    assert_eq!(labels.get("team").map(String::as_str), Some("ml"));
    assert_eq!(
        labels.get(names::labels::TASK_UID).map(String::as_str),
        Some("uid-1")
    );
    assert_eq!(
        meta.annotations.unwrap().get("note").map(String::as_str),
        Some("x")
    );
    let p = tmpl.spec.unwrap();
    assert_eq!(p.restart_policy.as_deref(), Some("Never"));
    assert_eq!(p.service_account_name.as_deref(), Some("analytics"));
    assert_eq!(p.automount_service_account_token, Some(true));
    assert_eq!(p.priority_class_name.as_deref(), Some("high"));
    assert_eq!(
        p.node_selector.unwrap().get("pool").map(String::as_str),
        Some("gpu")
    );
    assert_eq!(p.tolerations.unwrap().len(), 1);
    let vols: Vec<String> = p.volumes.unwrap().into_iter().map(|v| v.name).collect();
    assert_eq!(vols, [names::WORK_VOLUME, "data"]);
    // The user's uid, over longtask's other defaults.
    let psc = p.security_context.unwrap();
    assert_eq!(psc.run_as_user, Some(1000));
    assert_eq!(psc.run_as_group, Some(65532));
    assert_eq!(psc.run_as_non_root, Some(true));
    let c = &p.containers[0];
    assert_eq!(c.working_dir.as_deref(), Some("/data"));
    let mounts: Vec<&str> = c
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.as_str())
        .collect();
    assert_eq!(mounts, [names::WORK_DIR, "/data"]);
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
}
