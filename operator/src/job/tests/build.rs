use crds::Task;
use crds::names::env;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Container;
use k8s_openapi::api::core::v1::{EnvVar, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::fixtures::TaskFixture;
use crate::job::build::*;

/// `ns/hello` (UID `uid-1`) runs `sh -c "echo hi"` with `A=1`; no timeout,
/// no retries.
fn hello() -> Task {
    Task::test()
        .named("hello")
        .uid("uid-1")
        .command(&["sh", "-c"])
        .args(&["echo hi"])
        .env(vec![EnvVar {
            name: "A".into(),
            value: Some("1".into()),
            ..EnvVar::default()
        }])
        .timeout(None)
        .retries(0)
}

fn container(job: &Job) -> &Container {
    &job.spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
}

fn env_value<'a>(c: &'a Container, name: &str) -> Option<&'a EnvVar> {
    c.env.as_ref().unwrap().iter().find(|e| e.name == name)
}

#[test]
fn job_carries_name_owner_and_labels() {
    let j = job(&hello(), "reg/longtask-worker:0.1.0").unwrap();
    assert_eq!(j.metadata.name.as_deref(), Some("hello"));
    assert_eq!(j.metadata.namespace.as_deref(), Some("ns"));
    let o = &j.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((o.kind.as_str(), o.uid.as_str()), ("Task", "uid-1"));
    assert_eq!(
        (o.controller, o.block_owner_deletion),
        (Some(true), Some(true))
    );
    let want = task_labels(&identity(&hello()).unwrap());
    assert_eq!(j.metadata.labels.as_ref(), Some(&want));
    let tmpl = &j.spec.as_ref().unwrap().template;
    assert_eq!(tmpl.metadata.as_ref().unwrap().labels.as_ref(), Some(&want));
}

#[test]
fn spec_maps_onto_the_job() {
    let cases: Vec<(Task, Option<i64>, i32, Option<i32>)> = vec![
        (hello(), None, 0, None),
        (hello().timeout(2), Some(2), 0, None),
        (hello().retries(3), None, 3, None),
        (hello().ttl(60), None, 0, Some(60)),
    ];
    for (i, (t, deadline, backoff, ttl)) in cases.into_iter().enumerate() {
        let s = job(&t, "w").unwrap().spec.unwrap();
        assert_eq!(s.active_deadline_seconds, deadline, "case {i}");
        assert_eq!(s.backoff_limit, Some(backoff), "case {i}");
        assert_eq!(s.ttl_seconds_after_finished, ttl, "case {i}");
        let pod = s.template.spec.unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(pod.service_account_name.as_deref(), Some("longtask-worker"));
    }
}

#[test]
fn container_runs_the_worker_with_the_program() {
    let res = ResourceRequirements {
        requests: Some([("cpu".to_owned(), Quantity("1".into()))].into()),
        ..ResourceRequirements::default()
    };
    let j = job(&hello().resources(res.clone()), "img").unwrap();
    let c = container(&j);
    assert_eq!(c.name, "worker");
    assert_eq!(c.image.as_deref(), Some("img"));
    assert_eq!(
        c.args.as_deref().unwrap(),
        ["run", "--", "sh", "-c", "echo hi"]
    );
    assert_eq!(c.resources.as_ref(), Some(&res));
    assert_eq!(
        env_value(c, "A").and_then(|e| e.value.as_deref()),
        Some("1")
    );
    assert_eq!(
        env_value(c, env::TASK_UID).and_then(|e| e.value.as_deref()),
        Some("uid-1")
    );
    let field = |n| {
        env_value(c, n)
            .and_then(|e| e.value_from.as_ref())
            .and_then(|v| v.field_ref.as_ref())
            .map(|f| f.field_path.clone())
    };
    assert_eq!(
        field(env::JOB_UID).as_deref(),
        Some("metadata.labels['batch.kubernetes.io/controller-uid']")
    );
    assert_eq!(field(env::POD_NAME).as_deref(), Some("metadata.name"));
    assert_eq!(field(env::NAMESPACE).as_deref(), Some("metadata.namespace"));
}

#[test]
fn pod_fits_the_restricted_standard() {
    let j = job(&hello(), "img").unwrap();
    let pod = j.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let psc = pod.security_context.as_ref().unwrap();
    assert_eq!(psc.run_as_non_root, Some(true));
    assert_eq!(
        psc.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
        Some("RuntimeDefault")
    );
    let sc = container(&j).security_context.as_ref().unwrap();
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(
        sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
        Some(vec!["ALL".to_owned()])
    );
}

#[test]
fn building_twice_gives_the_same_job() {
    let t = hello();
    assert_eq!(job(&t, "img").unwrap(), job(&t, "img").unwrap());
}

#[test]
fn task_without_uid_is_refused() {
    assert!(matches!(
        job(&hello().without_uid(), "img"),
        Err(IdentityError::MissingMetadata("uid"))
    ));
}

#[test]
fn worker_rbac_binds_the_cluster_role() {
    let rb = worker_role_binding("ns", []);
    assert_eq!(rb.metadata.name.as_deref(), Some("longtask-worker"));
    assert_eq!(rb.role_ref.name, "longtask-worker");
    assert_eq!(rb.role_ref.kind, "ClusterRole");
    let s = &rb.subjects.unwrap()[0];
    assert_eq!(
        (s.name.as_str(), s.namespace.as_deref()),
        ("longtask-worker", Some("ns"))
    );
    assert_eq!(
        worker_service_account("ns").metadata.name.as_deref(),
        Some("longtask-worker")
    );
    let own = worker_role_binding("ns", ["reporting", "analytics", "analytics"]);
    assert_eq!(own.metadata.name.as_deref(), Some("longtask-worker"));
    let subjects: Vec<String> = own.subjects.unwrap().into_iter().map(|s| s.name).collect();
    assert_eq!(subjects, ["analytics", "longtask-worker", "reporting"]);
}

#[test]
fn a_task_with_a_store_gets_its_grant_from_its_secret() {
    let t = hello().with(|t| t.spec.image = Some("python:3.12".into()));
    let plain = job(&t, "w").unwrap();
    assert_eq!(
        job_with_outputs(&t, "w", None).unwrap(),
        plain,
        "no store: as before"
    );
    let j = job_with_outputs(&t, "w", Some("s3")).unwrap();
    let a = j.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        a.get("longtask.dev/output-store").map(String::as_str),
        Some("s3")
    );
    let c = container(&j);
    let grant = env_value(c, env::UPLOAD_GRANT).expect("the grant's env");
    assert_eq!(grant.value, None, "never the grant itself in the Job");
    let r = grant
        .value_from
        .as_ref()
        .unwrap()
        .secret_key_ref
        .as_ref()
        .unwrap();
    assert_eq!(
        (r.name.as_str(), r.key.as_str(), r.optional),
        ("hello-outputs", "upload.json", Some(false))
    );
    // Only the worker's container, and nothing else changes.
    let pod = j.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    for init in pod.init_containers.iter().flatten() {
        assert!(
            init.env
                .iter()
                .flatten()
                .all(|e| e.name != env::UPLOAD_GRANT)
        );
    }
    let mut undone = j.clone();
    undone.metadata.annotations = plain.metadata.annotations.clone();
    let env = undone
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0]
        .env
        .as_mut()
        .unwrap();
    env.retain(|e| e.name != env::UPLOAD_GRANT);
    assert_eq!(undone, plain);
    // Kueue's annotations stay beside ours.
    let kueue = t.with(|t| {
        t.metadata.annotations = Some(
            [(
                "kueue.x-k8s.io/job-min-parallelism".to_owned(),
                "1".to_owned(),
            )]
            .into(),
        );
    });
    let a = job_with_outputs(&kueue, "w", Some("s3"))
        .unwrap()
        .metadata
        .annotations
        .unwrap();
    assert_eq!(a.len(), 2);
}

#[test]
fn the_outputs_secret_is_the_tasks() {
    let t = hello();
    let id = identity(&t).unwrap();
    let s = outputs_secret(&id, [("upload.json".to_owned(), b"{}".to_vec())].into());
    assert_eq!(s.metadata.name.as_deref(), Some("hello-outputs"));
    assert_eq!(s.metadata.namespace.as_deref(), Some("ns"));
    let owner = &s.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("Task", "uid-1", Some(true))
    );
    let l = s.metadata.labels.as_ref().unwrap();
    assert_eq!(
        l.get("longtask.dev/task-uid").map(String::as_str),
        Some("uid-1")
    );
    assert_eq!(
        l.get("longtask.dev/task-name").map(String::as_str),
        Some("hello")
    );
    assert_eq!(
        l.get("app.kubernetes.io/managed-by").map(String::as_str),
        Some("longtask-operator")
    );
    let data = s.data.as_ref().unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["upload.json"]);
    assert_eq!(data["upload.json"].0, b"{}");
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
}

/// A Task with upstreams gets each one's result and exit code from its
/// result ConfigMap (optional: none left gives no file, not a pod that
/// cannot start), and their names in order; one without gets nothing.
#[test]
fn upstream_results_come_from_their_config_maps() {
    use crds::after::inputs;
    let j = job(&hello().after(&["prep", "fetch.b"]), "w").unwrap();
    let c = container(&j);
    let names = env_value(c, inputs::NAMES).and_then(|e| e.value.as_deref());
    assert_eq!(names, Some("prep,fetch.b"));
    for (i, up) in ["prep", "fetch.b"].iter().enumerate() {
        for (var, key) in [
            (inputs::result_var(i), "result"),
            (inputs::exit_code_var(i), "exitCode"),
        ] {
            let r = env_value(c, &var)
                .and_then(|e| e.value_from.as_ref())
                .and_then(|v| v.config_map_key_ref.as_ref())
                .unwrap_or_else(|| panic!("{var}"));
            assert_eq!(r.name, format!("{up}-result"));
            assert_eq!(r.key, key);
            assert_eq!(r.optional, Some(true));
        }
    }
    let plain = job(&hello(), "w").unwrap();
    let c = container(&plain);
    assert!(env_value(c, inputs::NAMES).is_none());
    assert!(env_value(c, &inputs::result_var(0)).is_none());
}
