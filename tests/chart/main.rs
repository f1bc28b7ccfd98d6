//! The Helm chart (charts/longtask) without a cluster: rendered with its
//! default values it is `kubectl kustomize manifests/`, object by object
//! (and the namespaced mode is the manifests/namespaced overlay); it passes
//! `helm lint --strict`; its schema refuses misspelt keys; values reach the
//! objects they name. Needs `tools/helm/build` (helm) and kubectl.

#![allow(clippy::unwrap_used)]

mod compare;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use compare::{Objects, diff};

use longtask_e2e::root;

fn helm_bin() -> PathBuf {
    let helm = root().join("tools/helm/bin/helm");
    assert!(
        helm.exists(),
        "{} is missing: run tools/helm/build",
        helm.display()
    );
    helm
}

/// `helm ARGS...` in the repository root: Ok(stdout) or Err(stderr).
fn helm(args: &[&str]) -> Result<String, String> {
    let out = Command::new(helm_bin())
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(format!(
            "helm {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ))
    }
}

/// The chart rendered into namespace `ns` with extra `helm template` args.
fn render(ns: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["template", "longtask", "charts/longtask", "--namespace", ns];
    args.extend_from_slice(extra);
    parse(&helm(&args).unwrap())
}

fn parse(yaml: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap();
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn kustomize(dir: &str) -> Vec<Value> {
    let out = Command::new("kubectl")
        .args(["kustomize", dir])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse(&String::from_utf8(out.stdout).unwrap())
}

fn find<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objs.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn deployment(objs: &[Value]) -> &Value {
    find(objs, "Deployment", "longtask-operator")
}

/// Asserts two normalised renders are the same objects with the same content.
fn assert_same(chart: Objects, kustomize: Objects) {
    let only_chart: Vec<_> = chart
        .keys()
        .filter(|k| !kustomize.contains_key(*k))
        .collect();
    let only_kustomize: Vec<_> = kustomize
        .keys()
        .filter(|k| !chart.contains_key(*k))
        .collect();
    assert!(
        only_chart.is_empty() && only_kustomize.is_empty(),
        "objects only in the chart: {only_chart:?}; only in kustomize: {only_kustomize:?}"
    );
    let mut diffs = Vec::new();
    for (key, c) in &chart {
        diff(&format!("{key:?}"), c, &kustomize[key], &mut diffs);
    }
    assert!(
        diffs.is_empty(),
        "chart != kustomize:\n{}",
        diffs.join("\n")
    );
}

#[test]
fn default_render_is_kustomize_manifests() {
    let chart = render("longtask-system", &[]);
    let kust = kustomize("manifests");
    assert_eq!(chart.len(), 27, "objects rendered");
    assert_same(
        compare::chart(chart, "longtask-system", true),
        compare::kustomize(kust, true),
    );
}

#[test]
fn namespaced_render_is_kustomize_namespaced_overlay() {
    // An overlay as manifests/namespaced/kustomization.yaml describes it,
    // into namespace team-a.
    let dir = root()
        .join("target")
        .join(format!("chart-overlay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
         namespace: team-a\nresources: [../../manifests]\ncomponents: [../../manifests/namespaced]\n",
    )
    .unwrap();
    let kust = kustomize(dir.to_str().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let chart = render("team-a", &["--set", "namespaced=true"]);
    assert!(
        chart.iter().all(|o| o["metadata"]["namespace"] == "team-a"),
        "a namespaced install renders only objects of its namespace"
    );
    assert_same(
        compare::chart(chart, "team-a", false),
        compare::kustomize(kust, false),
    );
}

#[test]
fn comparison_catches_a_difference() {
    // The comparison itself can fail: one changed field is reported.
    let mut chart = render("longtask-system", &[]);
    let d = chart
        .iter_mut()
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    d["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("changed");
    let chart = compare::chart(chart, "longtask-system", true);
    let kust = compare::kustomize(kustomize("manifests"), true);
    let mut diffs = Vec::new();
    for (key, c) in &chart {
        diff(&format!("{key:?}"), c, &kust[key], &mut diffs);
    }
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert!(diffs[0].contains("/spec/template/spec/containers/0/env/0/value"));
}

#[test]
fn lint_strict() {
    for set in [
        vec![],
        vec!["--set", "namespaced=true"],
        vec!["--set", "metrics.serviceMonitor.enabled=true"],
        vec!["--set", "networkPolicy.enabled=true"],
        vec!["--set", "crds.enabled=false,crds.keep=false,replicaCount=3"],
    ] {
        let mut args = vec!["lint", "--strict", "charts/longtask"];
        args.extend_from_slice(&set);
        let out = helm(&args).unwrap();
        assert!(out.contains("0 chart(s) failed"), "{out}");
    }
}

#[test]
fn schema_refuses_misspelt_keys_and_wrong_types() {
    for (set, want) in [
        ("replicaCont=3", "additional properties 'replicaCont'"),
        (
            "operator.concurency=8",
            "additional properties 'concurency'",
        ),
        ("crds.keeep=false", "additional properties 'keeep'"),
        ("images.worker.tags=1.0", "additional properties 'tags'"),
        (
            "metrics.serviceMonitor.enabeld=true",
            "additional properties 'enabeld'",
        ),
        (
            "metrics.dashbord.enabled=true",
            "additional properties 'dashbord'",
        ),
        (
            "networkPolicy.enabeld=true",
            "additional properties 'enabeld'",
        ),
        (
            "networkPolicy.metricsFrom[0].podSelectr.x=y",
            "additional properties 'podSelectr'",
        ),
        ("replicaCount=two", "replicaCount"),
        ("operator.logFormat=xml", "logFormat"),
        ("operator.concurrency=-1", "concurrency"),
        ("images.operator.pullPolicy=Sometimes", "pullPolicy"),
    ] {
        let err = helm(&["template", "x", "charts/longtask", "--set", set])
            .expect_err(&format!("--set {set} rendered"));
        assert!(err.contains("schema"), "--set {set}: {err}");
        assert!(err.contains(want), "--set {set}: want {want:?} in {err}");
    }
}

#[test]
fn values_reach_the_deployment() {
    let objs = render(
        "ops",
        &[
            "--set",
            "images.operator.registry=registry.example/acme,images.operator.tag=1.2.3,\
             images.operator.pullPolicy=Always,images.worker.registry=registry.example/acme/,\
             images.worker.repository=lt-worker,replicaCount=3,operator.concurrency=8,\
             operator.maxActiveTasks=100,operator.deleteFinishedAfter=86400,\
             operator.keepFinished=50,operator.apiTimeoutSeconds=20,operator.logFormat=text,\
             priorityClassName=system-cluster-critical,nodeSelector.pool=ops,\
             tolerations[0].key=dedicated,tolerations[0].operator=Exists,\
             resources.limits.memory=512Mi,podLabels.team=ops,operator.extraArgs[0]=--metrics-addr=off",
        ],
    );
    let d = deployment(&objs);
    let pod = &d["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(c["image"], "registry.example/acme/longtask-operator:1.2.3");
    assert_eq!(c["imagePullPolicy"], "Always");
    let env = c["env"].as_array().unwrap();
    let worker = env
        .iter()
        .find(|e| e["name"] == "LONGTASK_WORKER_IMAGE")
        .unwrap();
    assert_eq!(worker["value"], "registry.example/acme/lt-worker:0.1.0");
    assert_eq!(
        c["args"],
        json!([
            "--log-format=text",
            "--concurrency=8",
            "--max-active-tasks=100",
            "--delete-finished-after=86400",
            "--keep-finished=50",
            "--api-timeout-seconds=20",
            "--metrics-addr=off"
        ])
    );
    assert_eq!(pod["priorityClassName"], "system-cluster-critical");
    assert_eq!(pod["nodeSelector"], json!({"pool": "ops"}));
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "dedicated", "operator": "Exists"}])
    );
    assert_eq!(c["resources"]["limits"]["memory"], "512Mi");
    assert_eq!(c["resources"]["requests"]["cpu"], "50m");
    let labels = &d["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["team"], "ops");
    // The selector never changes with the values: an upgrade could not
    // change it (it is immutable).
    assert_eq!(
        d["spec"]["selector"],
        json!({"matchLabels": {"app.kubernetes.io/name": "longtask-operator"}})
    );
    // Every subject and namespaced object follows the release namespace.
    let crb = find(&objs, "ClusterRoleBinding", "longtask-operator");
    assert_eq!(crb["subjects"][0]["namespace"], "ops");
    assert_eq!(
        find(&objs, "RoleBinding", "longtask-operator-lease")["subjects"][0]["namespace"],
        "ops"
    );
}

#[test]
fn crds_enabled_and_keep() {
    let crds = |objs: &[Value]| -> Vec<Value> {
        objs.iter()
            .filter(|o| o["kind"] == "CustomResourceDefinition")
            .cloned()
            .collect()
    };
    let keep = crds(&render("longtask-system", &[]));
    assert_eq!(keep.len(), 3);
    for c in &keep {
        assert_eq!(
            c["metadata"]["annotations"]["helm.sh/resource-policy"], "keep",
            "{}",
            c["metadata"]["name"]
        );
    }
    let no_keep = crds(&render("longtask-system", &["--set", "crds.keep=false"]));
    assert_eq!(no_keep.len(), 3);
    assert!(
        no_keep
            .iter()
            .all(|c| c["metadata"].get("annotations").is_none())
    );
    assert!(crds(&render("longtask-system", &["--set", "crds.enabled=false"])).is_empty());
}

#[test]
fn network_policy_guards_the_ports() {
    let plain = render("longtask-system", &[]);
    assert!(
        !plain.iter().any(|o| o["kind"] == "NetworkPolicy"),
        "off by default"
    );
    // Enabled alone: the operator's pods selected, and no rule, so no pod
    // reaches either port (the node's probes always do).
    let objs = render("np", &["--set", "networkPolicy.enabled=true"]);
    let np = find(&objs, "NetworkPolicy", "longtask-operator");
    assert_eq!(np["metadata"]["namespace"], "np");
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(np["spec"]["ingress"], json!(null), "{np}");
    let d = deployment(&objs);
    let pod_labels = d["spec"]["template"]["metadata"]["labels"]
        .as_object()
        .unwrap();
    let selector = np["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .unwrap();
    assert!(!selector.is_empty());
    for (k, v) in selector {
        assert_eq!(pod_labels.get(k), Some(v), "podSelector {k}");
    }
    // With peers: one rule per port, each naming a port of the container.
    let prom = json!({
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}
    });
    let checker = json!({"ipBlock": {"cidr": "10.9.0.0/16"}});
    let objs = render(
        "np",
        &[
            "--set",
            "networkPolicy.enabled=true",
            "--set-json",
            &format!("networkPolicy.metricsFrom=[{prom}]"),
            "--set-json",
            &format!("networkPolicy.healthFrom=[{checker}]"),
        ],
    );
    let np = find(&objs, "NetworkPolicy", "longtask-operator");
    let rules = np["spec"]["ingress"].as_array().unwrap();
    assert_eq!(rules.len(), 2, "{np}");
    let ports = deployment(&objs)["spec"]["template"]["spec"]["containers"][0]["ports"]
        .as_array()
        .unwrap()
        .clone();
    for (rule, port, peer) in [
        (&rules[0], "metrics", &prom),
        (&rules[1], "health", &checker),
    ] {
        assert_eq!(rule["from"], json!([peer]), "{rule}");
        assert_eq!(
            rule["ports"],
            json!([{"port": port, "protocol": "TCP"}]),
            "{rule}"
        );
        assert!(ports.iter().any(|p| p["name"] == port), "no {port} port");
    }
}

#[test]
fn service_monitor_selects_the_metrics_port() {
    let plain = render("longtask-system", &[]);
    assert!(
        !plain
            .iter()
            .any(|o| o["kind"] == "ServiceMonitor" || o["kind"] == "Service"),
        "off by default"
    );
    let objs = render(
        "mon",
        &[
            "--set",
            "metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.interval=30s,\
             metrics.serviceMonitor.labels.release=prom",
        ],
    );
    let svc = find(&objs, "Service", "longtask-operator-metrics");
    let sm = find(&objs, "ServiceMonitor", "longtask-operator");
    let d = deployment(&objs);
    let pod_labels = d["spec"]["template"]["metadata"]["labels"]
        .as_object()
        .unwrap();
    for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
        assert_eq!(pod_labels.get(k), Some(v), "Service selector {k}");
    }
    let svc_labels = svc["metadata"]["labels"].as_object().unwrap();
    for (k, v) in sm["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(svc_labels.get(k), Some(v), "ServiceMonitor selector {k}");
    }
    let port = &svc["spec"]["ports"][0];
    assert_eq!(port["name"], sm["spec"]["endpoints"][0]["port"]);
    let container_ports = d["spec"]["template"]["spec"]["containers"][0]["ports"]
        .as_array()
        .unwrap();
    assert!(
        container_ports
            .iter()
            .any(|p| p["name"] == port["targetPort"] && p["containerPort"] == port["port"])
    );
    assert_eq!(sm["spec"]["endpoints"][0]["interval"], "30s");
    assert_eq!(sm["metadata"]["labels"]["release"], "prom");
    assert_eq!(
        sm["spec"]["namespaceSelector"]["matchNames"],
        json!(["mon"])
    );
}

#[test]
fn chart_files_are_links_to_manifests() {
    // The chart carries no copy of a manifest that could drift: each
    // manifest it renders is a symlink into manifests/.
    let files = root().join("charts/longtask/files");
    for (name, target) in [
        ("crd.yaml", "crd.yaml"),
        ("rbac.yaml", "rbac.yaml"),
        (
            "output-store-credentials.yaml",
            "output-store-credentials.yaml",
        ),
        ("worker-role.yaml", "worker-role.yaml"),
        ("serviceaccount.yaml", "serviceaccount.yaml"),
        ("worker-policy.yaml", "worker-policy.yaml"),
        ("operator-policy.yaml", "operator-policy.yaml"),
        ("cron-run-policy.yaml", "cron-run-policy.yaml"),
        ("namespaced-rbac.yaml", "namespaced/rbac.yaml"),
    ] {
        let path = files.join(name);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(
            meta.file_type().is_symlink(),
            "{} is a copy",
            path.display()
        );
        assert_eq!(
            std::fs::canonicalize(&path).unwrap(),
            std::fs::canonicalize(root().join("manifests").join(target)).unwrap(),
            "{}",
            path.display()
        );
    }
    // The chart's appVersion is the images' tag the manifests set.
    let chart = std::fs::read_to_string(root().join("charts/longtask/Chart.yaml")).unwrap();
    assert!(
        chart.contains(&format!("appVersion: \"{}\"", env!("CARGO_PKG_VERSION"))),
        "Chart.yaml appVersion is not {}",
        env!("CARGO_PKG_VERSION")
    );
}
