//! The chart's life cycle: install (done by the runner), upgrade, uninstall.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, ListParams};
use serde_json::Value;

use longtask_e2e::{
    Cluster, HELM_RELEASE, SYSTEM_NS, TestNs, openmetrics, operator, sh_task, tasks, wait,
};

const MINUTE: Duration = Duration::from_secs(60);

/// `helm status` of the release, as JSON.
fn release(c: &Cluster) -> Result<Value> {
    let out = c.helm(&[
        "status",
        HELM_RELEASE,
        "--namespace",
        SYSTEM_NS,
        "-o",
        "json",
    ])?;
    Ok(serde_json::from_str(&out)?)
}

async fn wait_phase(ns: &TestNs, name: &str, phase: &str, within: Duration) -> Result<Value> {
    wait::until(within, &format!("Task {name} {phase}"), || async {
        Ok(ns.status(name).await?["phase"] == phase)
    })
    .await?;
    ns.status(name).await
}

/// The operator Deployment as the chart left it, and what its pods run.
async fn deployment(c: &Cluster) -> Result<Deployment> {
    let api: Api<Deployment> = Api::namespaced(c.client.clone(), SYSTEM_NS);
    Ok(api.get("longtask-operator").await?)
}

pub async fn chart_install_runs_a_task(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let rel = release(&c)?;
    ensure!(
        rel["info"]["status"] == "deployed",
        "release: {}",
        rel["info"]
    );
    ensure!(rel["version"] == 1, "revision {}", rel["version"]);
    // The objects are the chart's: Helm's labels on the Deployment, and
    // the default two replicas, both ready.
    let d = deployment(&c).await?;
    let labels = d.metadata.labels.clone().unwrap_or_default();
    ensure!(
        labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str)
            == Some("Helm"),
        "Deployment labels {labels:?}"
    );
    // The CRDs belong to the release (so helm upgrade upgrades them).
    for crd in ["tasks.longtask.dev", "crontasks.longtask.dev"] {
        let owner = c.kubectl.run(&[
            "get",
            "crd",
            crd,
            "-o",
            r#"jsonpath={.metadata.annotations.meta\.helm\.sh/release-name}/{.metadata.labels.app\.kubernetes\.io/managed-by}"#,
        ])?;
        ensure!(
            owner == "longtask/Helm",
            "CRD {crd}: release/manager {owner:?}"
        );
    }
    let status = d.status.unwrap_or_default();
    ensure!(
        status.ready_replicas == Some(2),
        "ready replicas {:?}",
        status.ready_replicas
    );

    ns.apply(&sh_task(
        "hello",
        "echo computing; echo 42 > \"$LONGTASK_RESULT\"",
        "  timeoutSeconds: 120\n",
    ))?;
    let st = wait_phase(&ns, "hello", "Completed", 2 * MINUTE).await?;
    ensure!(
        st["result"].as_str().map(str::trim) == Some("42"),
        "result {}",
        st["result"]
    );
    Ok(())
}

pub async fn upgrade_keeps_running_task(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    // The program runs on this host (process nodes) and finishes only when
    // the case says so: the upgrade happens while it certainly runs.
    let go = c.dir.join(format!("go-{}", ns.name));
    let script = format!(
        "echo waiting; while [ ! -e {} ]; do sleep 0.2; done; echo done > \"$LONGTASK_RESULT\"",
        go.display()
    );
    ns.apply(&sh_task("long", &script, "  timeoutSeconds: 600\n"))?;
    wait_phase(&ns, "long", "Running", MINUTE).await?;
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), &ns.name);
    let job_uid = jobs
        .get("long")
        .await?
        .metadata
        .uid
        .context("Job without uid")?;
    let old_pods: Vec<String> = operator::pods(&c.client)
        .await?
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();

    let chart = longtask_e2e::root().join("charts/longtask");
    c.helm(&[
        "upgrade",
        HELM_RELEASE,
        chart.to_str().unwrap(),
        "--namespace",
        SYSTEM_NS,
        "--reuse-values",
        "--set",
        "replicaCount=3,operator.concurrency=8",
        "--wait=watcher",
        "--timeout=3m",
    ])?;
    c.wait_operator("120s")?;
    let rel = release(&c)?;
    ensure!(
        rel["info"]["status"] == "deployed" && rel["version"] == 2,
        "release after upgrade: version {} {}",
        rel["version"],
        rel["info"]
    );

    // Three replicas, every one a new pod with the new flag.
    let d = deployment(&c).await?;
    ensure!(d.spec.replicas == Some(3), "replicas");
    ensure!(
        d.status.unwrap_or_default().ready_replicas == Some(3),
        "3 ready replicas"
    );
    let pods = operator::pods(&c.client).await?;
    ensure!(pods.len() == 3, "{} operator pods", pods.len());
    let mut names = Vec::new();
    for p in &pods {
        let name = p.metadata.name.clone().unwrap_or_default();
        ensure!(!old_pods.contains(&name), "pod {name} was not replaced");
        let args = p
            .spec
            .as_ref()
            .map(|s| s.containers[0].args.clone().unwrap_or_default())
            .unwrap_or_default();
        ensure!(
            args.iter().any(|a| a == "--concurrency=8"),
            "pod {name} args {args:?}"
        );
        names.push(name);
    }

    // Exactly one leader: the Lease names one of the three, and only that
    // one says so in its metrics.
    wait::until(MINUTE, "one of the new pods leading, alone", || {
        let (c, names) = (c.clone(), names.clone());
        async move {
            let Some(h) = operator::leader(&c.client).await?.0 else {
                return Ok(false);
            };
            if !names.contains(&h) {
                return Ok(false);
            }
            let mut leaders = Vec::new();
            for n in &names {
                let families = operator::scrape(&c, n).await?;
                if openmetrics::value(&families, "longtask_leader", &[]) == 1.0 {
                    leaders.push(n.clone());
                }
            }
            Ok(leaders == vec![h])
        }
    })
    .await?;

    let holder = operator::leader(&c.client).await?.0.unwrap_or_default();

    // The Task was running all along, with the same Job; now it finishes.
    let st = ns.status("long").await?;
    ensure!(
        st["phase"] == "Running",
        "Task long after the upgrade: {st}"
    );
    std::fs::write(&go, "")?;
    let st = wait_phase(&ns, "long", "Completed", 2 * MINUTE).await?;
    ensure!(
        st["result"].as_str().map(str::trim) == Some("done"),
        "result {}",
        st["result"]
    );
    let list = jobs.list(&ListParams::default()).await?;
    ensure!(
        list.items.len() == 1 && list.items[0].metadata.uid.as_deref() == Some(job_uid.as_str()),
        "Jobs after the upgrade: {:?}",
        list.items
            .iter()
            .map(|j| &j.metadata.uid)
            .collect::<Vec<_>>()
    );
    println!("upgrade_keeps_running_task: leader {holder} of 3 after the upgrade");
    Ok(())
}

pub async fn uninstall_keeps_crds_and_tasks(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task(
        "kept",
        "echo 7 > \"$LONGTASK_RESULT\"",
        "  timeoutSeconds: 120\n",
    ))?;
    wait_phase(&ns, "kept", "Completed", 2 * MINUTE).await?;

    c.helm(&[
        "uninstall",
        HELM_RELEASE,
        "--namespace",
        SYSTEM_NS,
        "--wait",
        "--timeout=2m",
    ])?;
    let list = c.helm(&["list", "--namespace", SYSTEM_NS, "-q"])?;
    ensure!(list.trim().is_empty(), "releases left: {list}");
    // What the release made is gone...
    for (what, args) in [
        (
            "Deployment",
            vec!["-n", SYSTEM_NS, "get", "deployment", "longtask-operator"],
        ),
        (
            "ServiceAccount",
            vec![
                "-n",
                SYSTEM_NS,
                "get",
                "serviceaccount",
                "longtask-operator",
            ],
        ),
        (
            "ClusterRole",
            vec!["get", "clusterrole", "longtask-operator"],
        ),
        (
            "ClusterRoleBinding",
            vec!["get", "clusterrolebinding", "longtask-operator"],
        ),
        (
            "admission policy",
            vec![
                "get",
                "validatingadmissionpolicy",
                "longtask-worker-results",
            ],
        ),
    ] {
        let got = c.kubectl.run(&args);
        ensure!(
            got.as_ref()
                .is_err_and(|e| format!("{e:#}").contains("NotFound")),
            "{what} left after uninstall: {got:?}"
        );
    }
    // ...but the CRDs stay, and the Task with its result.
    for crd in ["tasks.longtask.dev", "crontasks.longtask.dev"] {
        let ann = c.kubectl.run(&[
            "get",
            "crd",
            crd,
            "-o",
            r#"jsonpath={.metadata.annotations.helm\.sh/resource-policy}"#,
        ])?;
        ensure!(ann == "keep", "CRD {crd}: resource-policy {ann:?}");
    }
    let task = tasks(&c.client, &ns.name).get("kept").await?;
    ensure!(
        task.data["status"]["phase"] == "Completed"
            && task.data["status"]["result"].as_str().map(str::trim) == Some("7"),
        "Task kept after uninstall: {}",
        task.data["status"]
    );

    // Installed again under the same name, the release takes the kept
    // CRDs back (their Helm annotations name it) and the operator runs
    // Tasks again; the kept Task is untouched.
    c.helm_install()?;
    c.wait_operator("120s")?;
    ns.apply(&sh_task(
        "again",
        "echo 8 > \"$LONGTASK_RESULT\"",
        "  timeoutSeconds: 120\n",
    ))?;
    let st = wait_phase(&ns, "again", "Completed", 2 * MINUTE).await?;
    ensure!(
        st["result"].as_str().map(str::trim) == Some("8"),
        "result {}",
        st["result"]
    );
    let kept = ns.status("kept").await?;
    ensure!(kept["phase"] == "Completed", "Task kept: {kept}");
    Ok(())
}
