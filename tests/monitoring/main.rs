//! A real Prometheus (built from its module by tools/prometheus/build)
//! against longtask on a devcluster of 1 node: it discovers the operator's
//! pods through the Kubernetes API (pod role, the cluster's kubeconfig),
//! scrapes both replicas, and evaluates monitoring/alerts.rules.yaml (a
//! copy with a 10 s `for` on the absent alert). A Task that cannot start
//! makes LongtaskStartTimeouts fire, naming its namespace; the operator
//! scaled to zero makes LongtaskOperatorAbsent fire. Prometheus listens on
//! loopback only, as the devcluster's API server and pods do; it is
//! stopped and its data removed at the end, pass or fail.
//! Filter by substring: `cargo test -p longtask-e2e --test monitoring -- NAME`.

#![allow(clippy::unwrap_used)]

mod prometheus;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use longtask_e2e::runner::{self, Case, Install, Runtime, Shape};
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, case, root};
use serde_json::Value;

use prometheus::Prometheus;

static ALL: &[Case] = &[case!(
    prometheus_scrapes_and_alerts,
    true,
    prometheus_scrapes_and_alerts
)];

#[tokio::main(worker_threads = 8)]
async fn main() {
    let shape = Shape {
        dir: "e2e-monitoring",
        nodes: 1,
        cpu: 4,
        install: Install::Operator,
        runtime: Runtime::Process,
    };
    runner::main(ALL, shape).await;
}

/// The rules file with the absent alert's `for` cut to 10 s, so that the
/// test waits seconds, not minutes; everything else as shipped.
fn test_rules() -> Result<String> {
    let text = std::fs::read_to_string(root().join("monitoring/alerts.rules.yaml"))?;
    let at = text
        .find("- alert: LongtaskOperatorAbsent")
        .context("no LongtaskOperatorAbsent rule")?;
    let (head, tail) = text.split_at(at);
    ensure!(
        tail.contains("for: 5m"),
        "LongtaskOperatorAbsent has no `for: 5m`"
    );
    Ok(format!("{head}{}", tail.replacen("for: 5m", "for: 10s", 1)))
}

/// Firing alerts named `name`, their labels.
async fn firing(p: &Prometheus, name: &str) -> Result<Vec<Value>> {
    let alerts = p.api("/api/v1/alerts").await?;
    Ok(alerts["data"]["alerts"]
        .as_array()
        .context("no alerts list")?
        .iter()
        .filter(|a| a["labels"]["alertname"] == name && a["state"] == "firing")
        .map(|a| a["labels"].clone())
        .collect())
}

/// Waits until `name` fires and `want` accepts its labels; returns them.
async fn wait_firing(
    p: &Prometheus,
    name: &str,
    timeout: Duration,
    want: impl Fn(&Value) -> bool,
) -> Result<Value> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(l) = firing(p, name).await?.into_iter().find(|l| want(l)) {
            return Ok(l);
        }
        if Instant::now() > deadline {
            let all = p.api("/api/v1/alerts").await.unwrap_or_default();
            bail!("alert {name} not firing after {timeout:?}; alerts: {all}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Waits until Prometheus scrapes `n` operator targets successfully.
async fn wait_targets_up(p: &Prometheus, n: usize, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let targets = p.api("/api/v1/targets").await?;
        let active = targets["data"]["activeTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let up = active
            .iter()
            .filter(|t| t["labels"]["job"] == "longtask-operator" && t["health"] == "up")
            .count();
        if up == n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{up} operator targets up after {timeout:?}, want {n}; targets: {targets}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn prometheus_scrapes_and_alerts(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let p = Prometheus::start(&c.kubeconfig, SYSTEM_NS, &test_rules()?).await?;
    let res = scenario(&c, &ns, &p).await;
    p.stop();
    res
}

async fn scenario(c: &Cluster, ns: &TestNs, p: &Prometheus) -> Result<()> {
    // Both replicas discovered and scraped.
    let pods = longtask_e2e::operator::pods(&c.client).await?.len();
    ensure!(pods == 2, "{pods} operator pods, want the manifests' 2");
    wait_targets_up(p, 2, Duration::from_secs(90)).await?;
    // What the rules read is there: the leader's gauge, from one replica.
    let leader = p.api("/api/v1/query?query=sum(longtask_leader)").await?;
    ensure!(
        leader["data"]["result"][0]["value"][1] == "1",
        "sum(longtask_leader): {leader}"
    );
    // The dashboard's memory panel and the leader-changes alert have data.
    let rss = p
        .api("/api/v1/query?query=count(process_resident_memory_bytes%7Bjob%3D%22longtask-operator%22%7D%20%3E%200)")
        .await?;
    ensure!(
        rss["data"]["result"][0]["value"][1] == "2",
        "RSS of both replicas: {rss}"
    );
    let transitions = p
        .api("/api/v1/query?query=count(longtask_leader_transitions)")
        .await?;
    ensure!(
        transitions["data"]["result"][0]["value"][1] == "1",
        "longtask_leader_transitions from the leader only: {transitions}"
    );

    // A Task that cannot start (1000 CPUs) fails after 5 s.
    let sample = std::fs::read_to_string(root().join("manifests/samples/start-timeout.yaml"))?;
    ns.apply(&sample)?;
    ns.kubectl_wait(&["--for=condition=Failed", "task/too-big", "--timeout=60s"])?;
    let status = ns.status("too-big").await?;
    ensure!(status["reason"] == "Unschedulable", "status {status}");
    let labels = wait_firing(p, "LongtaskStartTimeouts", Duration::from_secs(60), |l| {
        l["namespace"] == ns.name.as_str()
    })
    .await?;
    ensure!(labels["reason"] == "Unschedulable", "labels {labels}");
    ensure!(
        firing(p, "LongtaskOperatorAbsent").await?.is_empty(),
        "absent fires while the operator runs"
    );

    // No operator at all: the absent alert fires.
    c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "scale",
        "deployment/longtask-operator",
        "--replicas=0",
    ])?;
    let res = wait_firing(
        p,
        "LongtaskOperatorAbsent",
        Duration::from_secs(120),
        |_| true,
    )
    .await;
    // Back to the manifests' two replicas, whatever happened.
    c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "scale",
        "deployment/longtask-operator",
        "--replicas=2",
    ])?;
    res?;
    c.wait_operator("120s")
}
