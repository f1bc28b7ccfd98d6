//! The operator's memory, read from /proc: a fresh start (scaled to 0,
//! then to 1, measured once it leads, is Ready and idle) and the running
//! process once idle. Shared by the history, soak and failover modes.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::cluster::{Cluster, SYSTEM_NS};
use crate::procfs::{self, Sample};

/// The operator's leader-election Lease (operator/src/ha/elector.rs).
pub const LEASE_NAME: &str = "longtask-operator";
/// The window of CPU quiet that counts as idle.
pub const IDLE: Duration = Duration::from_secs(3);
/// Less CPU than this in `IDLE` is idle.
const IDLE_CPU_S: f64 = 0.03;

/// One reading of the operator's memory.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Mem {
    /// VmRSS, MiB.
    pub rss_mib: f64,
    /// VmHWM (peak resident set since the process started), MiB.
    pub hwm_mib: f64,
    /// utime+stime since the process started.
    pub cpu_s: f64,
    /// How long until it was idle (for a fresh start: since its process appeared).
    pub settle_s: f64,
    /// False when it never went idle within the limit (read anyway).
    pub idle: bool,
}

impl Mem {
    fn of(s: Sample, settle: Duration, idle: bool) -> Mem {
        Mem {
            rss_mib: s.rss_kib as f64 / 1024.0,
            hwm_mib: s.hwm_kib as f64 / 1024.0,
            cpu_s: s.cpu_s,
            settle_s: settle.as_secs_f64(),
            idle,
        }
    }
}

/// The single operator process's pid, waiting up to `limit` for there to
/// be exactly one.
pub async fn one_pid(cluster: &Cluster, limit: Duration) -> Result<u32> {
    let t = Instant::now();
    loop {
        if let Some(p) = procfs::operator_pid(&cluster.operator_bin) {
            return Ok(p);
        }
        if t.elapsed() > limit {
            bail!(
                "expected one longtask-operator process, found {}",
                procfs::operator_pids(&cluster.operator_bin).len()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `pid` has used almost no CPU for `IDLE` (at most `limit`),
/// then reads it. `ready` is asked every half second until it says yes;
/// idle counts only after that.
pub async fn settle<F, Fut>(pid: u32, limit: Duration, mut ready: F) -> Result<Mem>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let ticks = procfs::clock_ticks();
    let t = Instant::now();
    let mut history: Vec<(Instant, Sample)> = Vec::new();
    let mut is_ready = false;
    let mut asked = t - Duration::from_secs(1);
    loop {
        let s = procfs::sample(pid, ticks)?;
        let now = Instant::now();
        if !is_ready && now.duration_since(asked) >= Duration::from_millis(500) {
            asked = now;
            is_ready = ready().await?;
            if is_ready {
                history.clear();
            }
        }
        history.push((now, s));
        let idle = history
            .iter()
            .rev()
            .find(|(at, _)| now.duration_since(*at) >= IDLE)
            .is_some_and(|(_, old)| s.cpu_s - old.cpu_s < IDLE_CPU_S);
        if is_ready && idle {
            return Ok(Mem::of(s, t.elapsed(), true));
        }
        if t.elapsed() > limit {
            eprintln!(
                "bench: the operator was not idle within {limit:?}; reading it anyway (ready: {is_ready})"
            );
            return Ok(Mem::of(s, t.elapsed(), false));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The Lease's holder now (None: no Lease, or released).
pub async fn holder(cluster: &Cluster) -> Result<Option<String>> {
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), SYSTEM_NS);
    Ok(leases
        .get_opt(LEASE_NAME)
        .await
        .context("get the operator's Lease")?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty()))
}

/// Names of the operator pods that run and are not going away.
pub async fn live_pods(cluster: &Cluster) -> Result<Vec<String>> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), SYSTEM_NS);
    let lp = ListParams::default().labels("app.kubernetes.io/name=longtask-operator");
    Ok(pods
        .list(&lp)
        .await
        .context("list operator pods")?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|p| p.metadata.name)
        .collect())
}

/// True once a live operator pod holds the Lease and the Deployment
/// counts `want` replicas Ready.
pub async fn leading_and_ready(cluster: &Cluster, want: i32) -> Result<bool> {
    let deploys: Api<Deployment> = Api::namespaced(cluster.client.clone(), SYSTEM_NS);
    let d = deploys.get("longtask-operator").await?;
    let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0) >= want;
    if !ready {
        return Ok(false);
    }
    let Some(h) = holder(cluster).await? else {
        return Ok(false);
    };
    Ok(live_pods(cluster).await?.contains(&h))
}

/// Scales the operator to 0, waits for its process to exit, scales it to
/// 1 and measures the new process once it holds the Lease, is Ready and
/// is idle.
pub async fn fresh_start(cluster: &Cluster, limit: Duration) -> Result<Mem> {
    stop(cluster).await?;
    cluster.scale_operator(1)?;
    let pid = one_pid(cluster, Duration::from_secs(90)).await?;
    settle(pid, limit, || leading_and_ready(cluster, 1)).await
}

/// A fresh start of another operator build beside the same objects:
/// with the operator stopped, `alt` is copied over the binary the cluster
/// runs, started and measured, then the measured build is put back and
/// started again (leading and Ready before this returns). Builds compared
/// this way (allocators, before and after a change) meet the same cluster.
pub async fn fresh_start_of(
    cluster: &Cluster,
    alt: &std::path::Path,
    limit: Duration,
) -> Result<Mem> {
    let bin = &cluster.operator_bin;
    let saved = bin.with_extension("measured");
    std::fs::copy(bin, &saved).with_context(|| format!("keep {}", bin.display()))?;
    stop(cluster).await?;
    std::fs::copy(alt, bin)
        .with_context(|| format!("copy {} over {}", alt.display(), bin.display()))?;
    cluster.scale_operator(1)?;
    let measured = async {
        let pid = one_pid(cluster, Duration::from_secs(90)).await?;
        settle(pid, limit, || leading_and_ready(cluster, 1)).await
    }
    .await;
    stop(cluster).await?;
    replace(&saved, bin)?;
    cluster.scale_operator(1)?;
    let t = Instant::now();
    while !leading_and_ready(cluster, 1).await? {
        if t.elapsed() > limit {
            bail!("the measured operator did not lead again within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    measured
}

/// Puts a copy of `from` at `to` by a rename, so a process still running
/// the old file (one the node agent has not reaped yet) keeps it, and the
/// copy never meets "Text file busy".
fn replace(from: &std::path::Path, to: &std::path::Path) -> Result<()> {
    let tmp = to.with_extension("next");
    std::fs::copy(from, &tmp)
        .with_context(|| format!("copy {} to {}", from.display(), tmp.display()))?;
    std::fs::rename(&tmp, to)
        .with_context(|| format!("rename {} to {}", tmp.display(), to.display()))?;
    Ok(())
}

/// Scales the operator to 0 and waits for its process to exit.
async fn stop(cluster: &Cluster) -> Result<()> {
    cluster.scale_operator(0)?;
    let t = Instant::now();
    while !procfs::operator_pids(&cluster.operator_bin).is_empty() {
        if t.elapsed() > Duration::from_secs(90) {
            bail!("the operator process did not exit after scaling to 0");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The running operator (exactly one process) once it is idle.
pub async fn steady(cluster: &Cluster, limit: Duration) -> Result<Mem> {
    let pid = one_pid(cluster, Duration::from_secs(90)).await?;
    settle(pid, limit, || async { Ok(true) }).await
}

/// Waits (at most `limit`, never failing) until every operator process
/// together has used almost no CPU for `IDLE`: the replicas have settled.
pub async fn settle_all(cluster: &Cluster, limit: Duration) {
    let ticks = procfs::clock_ticks();
    let total = || {
        procfs::operator_pids(&cluster.operator_bin)
            .into_iter()
            .filter_map(|p| procfs::sample(p, ticks).ok())
            .map(|s| s.cpu_s)
            .sum::<f64>()
    };
    let t = Instant::now();
    let mut prev = total();
    while t.elapsed() < limit {
        tokio::time::sleep(IDLE).await;
        let now = total();
        if now - prev < IDLE_CPU_S * 2.0 {
            return;
        }
        prev = now;
    }
    eprintln!("bench: the operator replicas were not idle within {limit:?}; going on");
}
