//! The operator's own ceiling: N Tasks whose pods no node takes, so the
//! cluster runs nothing and the Job controller and scheduler do little.
//! Measured: how many Tasks per second one operator takes from created to
//! `Running` (its Job created, its status written), and its CPU per Task.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::batch::{self, PhaseCount, tasks_api};
use crate::cluster::Cluster;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Ceiling {
    pub tasks: usize,
    /// First create → the last create answered.
    pub created_s: f64,
    /// First create → every Task shows phase Running.
    pub all_running_s: f64,
    /// Tasks / all_running_s.
    pub tasks_per_s: f64,
    /// The operator's utime+stime over the same time, per Task.
    pub cpu_ms_per_task: f64,
}

/// Creates `n` unplaceable Tasks in `ns` and measures; `cpu` reads the
/// operator's CPU seconds so far.
pub async fn measure(
    cluster: &Cluster,
    ns: &str,
    n: usize,
    inflight: usize,
    cpu: impl Fn() -> Result<f64>,
) -> Result<Ceiling> {
    let api = tasks_api(&cluster.client, ns);
    let mut running = PhaseCount::start(&api, "Running").await?;
    let cpu0 = cpu()?;
    let t = Instant::now();
    batch::create_tasks(&api, 0..n, inflight, batch::unplaceable_task, None).await?;
    let created_s = t.elapsed().as_secs_f64();
    running.reach(n, Duration::from_secs(600)).await?;
    let all_running_s = t.elapsed().as_secs_f64();
    let cpu_s = cpu()? - cpu0;
    Ok(Ceiling {
        tasks: n,
        created_s,
        all_running_s,
        tasks_per_s: n as f64 / all_running_s,
        cpu_ms_per_task: cpu_s * 1000.0 / n as f64,
    })
}
