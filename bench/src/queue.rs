//! The queue case: N Tasks created behind a namespace cap of 0. Measured:
//! how long until every Task shows its phase (`Queued`), and, once they all
//! wait and nothing changes, the operator's API requests and reconciles per
//! second (its own counters, read from its /metrics).

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::batch::{self, PhaseCount, tasks_api};
use crate::cluster::{Cluster, SYSTEM_NS};

/// How long the idle window lasts.
const IDLE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, serde::Serialize)]
pub struct Queue {
    pub tasks: usize,
    /// First create → the last create answered.
    pub created_s: f64,
    /// First create → every Task shows phase Queued.
    pub all_queued_s: f64,
    /// While all wait and nothing changes: the operator's API requests/s.
    pub idle_api_per_s: f64,
    /// …and its reconciles/s (the queued Tasks' looks).
    pub idle_reconciles_per_s: f64,
}

/// Creates `n` Tasks in `ns` (capped at 0 first) and measures.
pub async fn measure(cluster: &Cluster, ns: &str, n: usize, inflight: usize) -> Result<Queue> {
    let nss: Api<Namespace> = Api::all(cluster.client.clone());
    let cap = json!({"metadata": {"annotations": {"longtask.dev/max-active-tasks": "0"}}});
    nss.patch(ns, &PatchParams::default(), &Patch::Merge(&cap))
        .await
        .with_context(|| format!("cap namespace {ns} at 0"))?;
    let api = tasks_api(&cluster.client, ns);
    let mut queued = PhaseCount::start(&api, "Queued").await?;
    let t = Instant::now();
    batch::create_tasks(&api, 0..n, inflight, batch::task, None).await?;
    let created_s = t.elapsed().as_secs_f64();
    queued.reach(n, Duration::from_secs(600)).await?;
    let all_queued_s = t.elapsed().as_secs_f64();
    // Positions settle within one look (2 s) after the last Task appeared.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = counters(cluster).await?;
    tokio::time::sleep(IDLE).await;
    let after = counters(cluster).await?;
    let secs = IDLE.as_secs_f64();
    Ok(Queue {
        tasks: n,
        created_s,
        all_queued_s,
        idle_api_per_s: (after.0 - before.0) / secs,
        idle_reconciles_per_s: (after.1 - before.1) / secs,
    })
}

/// The operator's (API requests, reconciles) so far, from its /metrics on
/// its pod IP (process nodes: an address of this machine).
pub async fn counters(cluster: &Cluster) -> Result<(f64, f64)> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), SYSTEM_NS);
    let lp = ListParams::default().labels("app.kubernetes.io/name=longtask-operator");
    let ip = pods
        .list(&lp)
        .await?
        .items
        .into_iter()
        // Not one going away (the install's second replica, scaled down).
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.status)
        .filter(|s| s.phase.as_deref() == Some("Running"))
        .find_map(|s| s.pod_ip)
        .context("no running operator pod with an IP")?;
    let text = http_get(&format!("{ip}:8080"), "/metrics").await?;
    let sum = |name: &str| {
        text.lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    Ok((
        sum("longtask_api_requests_total"),
        sum("longtask_reconciles_total"),
    ))
}

/// A plain HTTP/1.1 GET; the body of a 200 answer.
async fn http_get(addr: &str, path: &str) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect {addr}"))?;
    let req = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    sock.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), sock.read_to_end(&mut buf)).await??;
    let text = String::from_utf8(buf)?;
    let (head, body) = text.split_once("\r\n\r\n").context("no HTTP header end")?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!("GET {addr}{path}: {head}");
    }
    Ok(body.to_owned())
}
