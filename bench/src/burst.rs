//! The burst (issue 37): N Tasks created at once, `--inflight` creates in
//! flight, one operator replica, and then nothing until every Task has
//! ended. What a burst must not do is cost the operator its Lease: each
//! second it reads the operator's process ids (a restart is a new one),
//! the Lease (a change of holder; how long its renewTime stood still) and
//! the operator's memory; at the end the control plane's CPU per Task.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::Api;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::batch::{self, tasks_api};
use crate::cluster::{Cluster, SYSTEM_NS};
use crate::procfs;

/// The operator's Lease (operator/src/ha/elector.rs).
const LEASE_NAME: &str = "longtask-operator";

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Burst {
    pub tasks: usize,
    /// First create → the last create answered.
    pub created_s: f64,
    /// First create → every Task Completed or Failed (or the time limit).
    pub makespan_s: f64,
    pub completed: usize,
    pub failed: usize,
    /// False when the time limit came first.
    pub finished: bool,
    /// Operator processes seen beyond the first.
    pub operator_restarts: usize,
    /// Times the Lease's holder changed (or it had none) while sampled.
    pub holder_changes: usize,
    /// The longest time the Lease's renewTime was seen older than now, and
    /// the Lease's duration: a renewal later than that loses the Lease.
    pub max_renew_age_s: f64,
    pub lease_duration_s: f64,
    /// The operator's peak memory (VmHWM, the largest over its processes).
    pub peak_rss_mib: f64,
    /// CPU seconds per Task: the operator, and each control-plane process.
    pub cpu_ms_per_task: BTreeMap<String, f64>,
}

#[derive(Default)]
struct Samples {
    pids: BTreeSet<u32>,
    hwm_kib: u64,
    holders: Vec<Option<String>>,
    max_renew_age_s: f64,
    lease_duration_s: f64,
}

/// One look at the operator's processes and its Lease.
async fn sample(cluster: &Cluster, leases: &Api<Lease>, s: &Mutex<Samples>) {
    let pids = procfs::operator_pids(&cluster.operator_bin);
    let ticks = procfs::clock_ticks();
    let hwm = pids
        .iter()
        .filter_map(|p| procfs::sample(*p, ticks).ok())
        .map(|m| m.hwm_kib)
        .max()
        .unwrap_or(0);
    // An unanswered read says nothing of the Lease: skipped.
    let lease = leases.get_opt(LEASE_NAME).await.ok().flatten();
    let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    s.pids.extend(pids);
    s.hwm_kib = s.hwm_kib.max(hwm);
    let Some(spec) = lease.and_then(|l| l.spec) else {
        return;
    };
    let holder = spec.holder_identity.filter(|h| !h.is_empty());
    if s.holders.last() != Some(&holder) {
        s.holders.push(holder);
    }
    if let Some(d) = spec.lease_duration_seconds {
        s.lease_duration_s = f64::from(d);
    }
    if let Some(renew) = spec.renew_time {
        let age = jiff::Timestamp::now().duration_since(renew.0).as_secs_f64();
        s.max_renew_age_s = s.max_renew_age_s.max(age);
    }
}

/// Creates `n` Tasks in `ns` and follows them until all ended or `limit`.
pub async fn run(
    cluster: &Cluster,
    ns: &str,
    n: usize,
    inflight: usize,
    limit: Duration,
) -> Result<Burst> {
    // From a settled start: one live operator pod holds the Lease (the
    // install scaled the operator to one replica; the other's Lease may
    // still be changing hands).
    let t = Instant::now();
    while !crate::memory::leading_and_ready(cluster, 1).await?
        || procfs::operator_pids(&cluster.operator_bin).len() != 1
    {
        if t.elapsed() > Duration::from_secs(120) {
            anyhow::bail!("the operator did not settle to one leading replica within 2 minutes");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let api = tasks_api(&cluster.client, ns);
    let (tx, mut ended) = tokio::sync::watch::channel((0usize, 0usize));
    let (listed_tx, listed) = oneshot::channel();
    let mut seen: BTreeMap<String, bool> = BTreeMap::new();
    let watch = batch::spawn_watch(api.clone(), "task", listed_tx, move |t, _| {
        match t.data.pointer("/status/phase").and_then(Value::as_str) {
            Some("Completed") => seen.insert(t.name_any(), true),
            Some("Failed") => seen.insert(t.name_any(), false),
            _ => None,
        };
        let ok = seen.values().filter(|v| **v).count();
        let _ = tx.send((ok, seen.len() - ok));
    });
    tokio::time::timeout(Duration::from_secs(30), listed)
        .await
        .context("task watch never listed")??;
    let samples = Arc::new(Mutex::new(Samples::default()));
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), SYSTEM_NS);
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let sampler = async {
        loop {
            sample(cluster, &leases, &samples).await;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stopped.changed() => break,
            }
        }
    };
    let ticks = procfs::clock_ticks();
    let all0 = procfs::cluster_cpu(&cluster.dir, ticks)?;
    let op0 = operator_cpu_all(cluster, ticks);
    let t0 = Instant::now();
    let work = async {
        let created = batch::create_tasks(&api, 0..n, inflight, batch::task, None).await;
        let created_s = t0.elapsed().as_secs_f64();
        let done = match created {
            Ok(()) => {
                eprintln!("bench: burst: {n} Tasks created in {created_s:.1}s");
                let done = tokio::time::timeout(limit, ended.wait_for(|(a, b)| a + b >= n));
                Ok(done.await.is_ok())
            }
            Err(e) => Err(e),
        };
        // The sampler stops in every case, so the join below returns.
        let _ = stop.send(true);
        done.map(|finished| (created_s, finished))
    };
    let (res, ()) = tokio::join!(work, sampler);
    let makespan_s = t0.elapsed().as_secs_f64();
    let (created_s, finished) = res?;
    let (completed, failed) = *ended.borrow();
    watch.abort();
    let mut cpu = procfs::cpu_spent(&all0, &procfs::cluster_cpu(&cluster.dir, ticks)?);
    // Every operator process's own time (a restarted one's too, while it runs).
    cpu.insert("operator".into(), operator_cpu_all(cluster, ticks) - op0);
    let s = samples
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok(Burst {
        tasks: n,
        created_s,
        makespan_s,
        completed,
        failed,
        finished,
        operator_restarts: s.pids.len().saturating_sub(1),
        holder_changes: s.holders.len().saturating_sub(1),
        max_renew_age_s: s.max_renew_age_s,
        lease_duration_s: s.lease_duration_s,
        peak_rss_mib: s.hwm_kib as f64 / 1024.0,
        cpu_ms_per_task: cpu
            .into_iter()
            .map(|(k, v)| (k, v * 1000.0 / n.max(1) as f64))
            .collect(),
    })
}

fn operator_cpu_all(cluster: &Cluster, ticks: f64) -> f64 {
    procfs::operator_pids(&cluster.operator_bin)
        .into_iter()
        .filter_map(|p| procfs::sample(p, ticks).ok())
        .map(|s| s.cpu_s)
        .sum()
}

pub fn render(b: &Burst) -> String {
    let mut out = format!(
        "## Burst of {} Tasks (one operator replica)\n\n\
         | measure | value |\n| --- | --- |\n\
         | created in (s) | {:.1} |\n\
         | all ended (s) | {:.1}{} |\n\
         | Completed / Failed | {} / {} |\n\
         | operator restarts (goal 0) | {} |\n\
         | Lease holder changes (goal 0) | {} |\n\
         | Lease renewTime's largest age (s), of a {:.0} s Lease | {:.1} |\n\
         | operator peak RSS (MiB) | {:.1} |\n",
        b.tasks,
        b.created_s,
        b.makespan_s,
        if b.finished {
            ""
        } else {
            " (time limit: not all ended)"
        },
        b.completed,
        b.failed,
        b.operator_restarts,
        b.holder_changes,
        b.lease_duration_s,
        b.max_renew_age_s,
        b.peak_rss_mib,
    );
    for (k, v) in &b.cpu_ms_per_task {
        out += &format!("| CPU ms per Task: {k} | {v:.1} |\n");
    }
    out
}
