//! Operator memory and CPU with P terminal Tasks present: the operator is
//! scaled to 0, P Tasks are created and given the terminal status the
//! operator itself writes, then a fresh operator starts, lists them all and
//! settles; its peak RSS and CPU seconds until then are what is measured.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use serde_json::json;

use crate::batch::{self, tasks_api};
use crate::cluster::{Cluster, SYSTEM_NS};
use crate::procfs::{self, Sample};

#[derive(Debug, Clone, serde::Serialize)]
pub struct Presence {
    pub tasks: usize,
    /// VmHWM when settled (peak resident set since the process started).
    pub peak_rss_mib: f64,
    /// VmRSS when settled.
    pub rss_mib: f64,
    /// utime+stime from process start until settled.
    pub cpu_s: f64,
    /// Process found → Ready and CPU idle for 3 s.
    pub settle_s: f64,
}

fn terminal_status(name: &str) -> serde_json::Value {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let cond = |t: &str, s: &str| {
        json!({ "type": t, "status": s, "reason": "Succeeded", "message": "",
                "observedGeneration": 1, "lastTransitionTime": now })
    };
    json!({ "status": {
        "phase": "Completed", "reason": "Succeeded", "jobName": name,
        "startedAt": now, "completedAt": now, "attempts": 1, "exitCode": 0,
        "result": "ok\n", "observedGeneration": 1,
        "conditions": [cond("Running", "False"), cond("Complete", "True"), cond("Finished", "True")]
    }})
}

async fn wait_gone(exe: &std::path::Path, timeout: Duration) -> Result<()> {
    let t = Instant::now();
    while !procfs::operator_pids(exe).is_empty() {
        if t.elapsed() > timeout {
            bail!("the operator process did not exit after scaling to 0");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Brings the Tasks in `ns` from `have` to `want` with the operator
/// stopped, restarts it and measures it.
pub async fn measure(
    cluster: &Cluster,
    ns: &str,
    have: usize,
    want: usize,
    inflight: usize,
) -> Result<Presence> {
    cluster.scale_operator(0)?;
    wait_gone(&cluster.operator_bin, Duration::from_secs(90)).await?;
    let api = tasks_api(&cluster.client, ns);
    let t = Instant::now();
    batch::create_tasks(
        &api,
        have..want,
        inflight,
        batch::task,
        Some(terminal_status),
    )
    .await?;
    eprintln!(
        "bench: {} terminal Tasks created in {:.1}s; starting the operator",
        want - have,
        t.elapsed().as_secs_f64()
    );
    cluster.scale_operator(1)?;
    let ticks = procfs::clock_ticks();
    let deploys: Api<Deployment> = Api::namespaced(cluster.client.clone(), SYSTEM_NS);
    let t = Instant::now();
    let pid = loop {
        if let Some(p) = procfs::operator_pid(&cluster.operator_bin) {
            break p;
        }
        if t.elapsed() > Duration::from_secs(90) {
            bail!("the operator process never started");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let found = Instant::now();
    let mut history: Vec<(Instant, Sample)> = Vec::new();
    let mut ready = false;
    let mut last_ready_check = Instant::now() - Duration::from_secs(1);
    loop {
        let s = procfs::sample(pid, ticks)?;
        let now = Instant::now();
        history.push((now, s));
        if !ready && now.duration_since(last_ready_check) >= Duration::from_millis(500) {
            last_ready_check = now;
            let d = deploys.get("longtask-operator").await?;
            ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0) >= 1;
        }
        let idle = history
            .iter()
            .rev()
            .find(|(t, _)| now.duration_since(*t) >= Duration::from_secs(3))
            .is_some_and(|(_, old)| s.cpu_s - old.cpu_s < 0.03);
        if ready && idle {
            return Ok(Presence {
                tasks: want,
                peak_rss_mib: s.hwm_kib as f64 / 1024.0,
                rss_mib: s.rss_kib as f64 / 1024.0,
                cpu_s: s.cpu_s,
                settle_s: now.duration_since(found).as_secs_f64(),
            });
        }
        if now.duration_since(found) > Duration::from_secs(600) {
            bail!("the operator never settled with {want} Tasks present");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
