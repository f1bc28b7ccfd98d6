//! Failover with history: two operator replicas beside the kept Tasks;
//! the leader's pod is deleted, and the time is taken from the new leader
//! taking the Lease (the bench's watch sees its holderIdentity change) to
//! a Task created at that moment being `Running`.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::batch::{self, spawn_watch, tasks_api};
use crate::cluster::{Cluster, SYSTEM_NS};
use crate::memory::{self, LEASE_NAME};
use crate::report::table;

pub const NAMESPACE: &str = "bench-failover";

#[derive(Debug, Clone, serde::Serialize)]
pub struct Run {
    /// Finished Tasks kept in the cluster meanwhile.
    pub kept: usize,
    pub old_leader: String,
    pub new_leader: String,
    /// Leader pod delete sent → the Lease's new holder seen.
    pub delete_to_lease_s: f64,
    /// The new holder seen → the new Task seen `Running` (the measure).
    pub lease_to_running_s: f64,
    /// The Task's create returned → seen `Running`.
    pub create_to_running_s: f64,
    /// The Lease's own acquireTime (the new leader's clock, this machine)
    /// → `Running` seen, by wall clock.
    pub acquire_time_to_running_s: Option<f64>,
}

/// A Lease change: holder, acquireTime, when the watch showed it.
type Change = (Option<String>, Option<SystemTime>, Instant);
/// A Task first seen `Running`: its name, when (monotonic and wall clock).
type Started = (String, Instant, SystemTime);

/// A watch's events, its initial list done, and the watch itself.
type Watched<T> = (
    mpsc::UnboundedReceiver<T>,
    oneshot::Receiver<()>,
    tokio::task::JoinHandle<()>,
);

fn lease_watch(cluster: &Cluster) -> Watched<Change> {
    let api: Api<Lease> = Api::namespaced(cluster.client.clone(), SYSTEM_NS);
    let (tx, rx) = mpsc::unbounded_channel();
    let (ready_tx, ready) = oneshot::channel();
    let h = spawn_watch(api, "lease", ready_tx, move |l: Lease, now| {
        if l.name_any() != LEASE_NAME {
            return;
        }
        let spec = l.spec.unwrap_or_default();
        let acquired = spec.acquire_time.map(|t| SystemTime::from(t.0));
        let holder = spec.holder_identity.filter(|h| !h.is_empty());
        let _ = tx.send((holder, acquired, now));
    });
    (rx, ready, h)
}

/// Watches Tasks in `ns` and sends each name the first time it is `Running`.
fn running_watch(cluster: &Cluster, ns: &str) -> Watched<Started> {
    let (tx, rx) = mpsc::unbounded_channel();
    let (ready_tx, ready) = oneshot::channel();
    let mut sent = std::collections::HashSet::new();
    let h = spawn_watch(
        tasks_api(&cluster.client, ns),
        "task",
        ready_tx,
        move |t, now| {
            let phase = t.data.pointer("/status/phase").and_then(Value::as_str);
            if phase == Some("Running") && sent.insert(t.name_any()) {
                let _ = tx.send((t.name_any(), now, SystemTime::now()));
            }
        },
    );
    (rx, ready, h)
}

/// Two replicas, both Ready, one of them leading.
async fn two_replicas(cluster: &Cluster) -> Result<()> {
    cluster.scale_operator(2)?;
    cluster.wait_operator()?;
    let t = Instant::now();
    loop {
        let pids = crate::procfs::operator_pids(&cluster.operator_bin).len();
        if pids == 2 && memory::leading_and_ready(cluster, 2).await? {
            return Ok(());
        }
        if t.elapsed() > Duration::from_secs(180) {
            bail!("two operator replicas, one leading, not reached in 180 s ({pids} processes)");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `runs` failovers with `kept` finished Tasks in the cluster; leaves one
/// replica running.
pub async fn run(cluster: &Cluster, kept: usize, runs: usize) -> Result<Vec<Run>> {
    cluster.namespace(NAMESPACE).await?;
    let (mut running, listed, tasks_w) = running_watch(cluster, NAMESPACE);
    let (mut lease, lease_listed, lease_w) = lease_watch(cluster);
    let res = async {
        tokio::time::timeout(Duration::from_secs(60), listed)
            .await
            .context("task watch never listed")??;
        tokio::time::timeout(Duration::from_secs(60), lease_listed)
            .await
            .context("lease watch never listed")??;
        let api = tasks_api(&cluster.client, NAMESPACE);
        let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), SYSTEM_NS);
        let mut out = Vec::new();
        for i in 0..runs {
            two_replicas(cluster).await?;
            // Let the leader settle beside the history before it goes.
            memory::settle_all(cluster, Duration::from_secs(120)).await;
            let old = memory::holder(cluster).await?.context("no Lease holder")?;
            while lease.try_recv().is_ok() {}
            let t_del = Instant::now();
            pods.delete(&old, &DeleteParams::default())
                .await
                .with_context(|| format!("delete the leader's pod {old}"))?;
            let (new, acquired, t_lease) = loop {
                let ch = tokio::time::timeout(Duration::from_secs(120), lease.recv())
                    .await
                    .context("no new Lease holder within 120 s of deleting the leader")?
                    .context("lease watch ended")?;
                if let (Some(h), acq, at) = ch
                    && h != old
                {
                    break (h, acq, at);
                }
            };
            let name = format!("failover-{i}");
            api.create(&PostParams::default(), &batch::task(&name)?)
                .await
                .with_context(|| format!("create Task {name}"))?;
            let t_created = Instant::now();
            let (t_run, wall_run) = loop {
                let (n, at, wall) = tokio::time::timeout(Duration::from_secs(300), running.recv())
                    .await
                    .with_context(|| format!("Task {name} not Running within 300 s of the new leader"))?
                    .context("task watch ended")?;
                if n == name {
                    break (at, wall);
                }
            };
            let r = Run {
                kept,
                old_leader: old,
                new_leader: new,
                delete_to_lease_s: t_lease.duration_since(t_del).as_secs_f64(),
                lease_to_running_s: t_run.duration_since(t_lease).as_secs_f64(),
                create_to_running_s: t_run.saturating_duration_since(t_created).as_secs_f64(),
                acquire_time_to_running_s: acquired
                    .and_then(|a| wall_run.duration_since(a).ok())
                    .map(|d| d.as_secs_f64()),
            };
            eprintln!(
                "bench: failover {i}: {} -> {}: Lease {:.1}s after the delete, Task Running {:.2}s after the Lease",
                r.old_leader, r.new_leader, r.delete_to_lease_s, r.lease_to_running_s
            );
            out.push(r);
        }
        anyhow::Ok(out)
    }
    .await;
    tasks_w.abort();
    lease_w.abort();
    let back = async {
        cluster.scale_operator(1)?;
        cluster.wait_operator()?;
        memory::one_pid(cluster, Duration::from_secs(120)).await
    }
    .await;
    let out = res?;
    back?;
    Ok(out)
}

pub fn render(runs: &[Run]) -> String {
    let cols: Vec<String> = (0..runs.len()).map(|i| format!("run {}", i + 1)).collect();
    let row = |f: &dyn Fn(&Run) -> String| runs.iter().map(f).collect::<Vec<_>>();
    let f2 = |x: f64| format!("{x:.2}");
    table(
        &format!(
            "Failover with {} finished Tasks kept: 2 replicas, the leader's pod deleted",
            runs.first().map_or(0, |r| r.kept)
        ),
        &cols,
        &[
            (
                "new leader takes the Lease -> new Task Running, s".into(),
                row(&|r| f2(r.lease_to_running_s)),
                "< 5",
            ),
            (
                "leader pod deleted -> Lease taken, s".into(),
                row(&|r| f2(r.delete_to_lease_s)),
                "",
            ),
            (
                "Lease acquireTime -> Running (wall clock), s".into(),
                row(&|r| r.acquire_time_to_running_s.map_or("-".into(), f2)),
                "",
            ),
        ],
    )
}
