//! bench: how close N Tasks come to N bare batch/v1 Jobs on the same
//! devcluster, what they cost the API server, and what the operator costs
//! with many Tasks present. See bench/README.md.

mod audit;
mod batch;
mod ceiling;
mod cluster;
mod presence;
mod procfs;
mod queue;
mod report;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::Parser;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams};

use batch::Kind;
use cluster::Cluster;
use report::Round;

/// Benchmarks longtask Tasks against bare batch/v1 Jobs on a fresh devcluster.
#[derive(Parser, Debug)]
#[command(name = "bench")]
struct Cli {
    /// Batch sizes N; each N runs a batch of bare Jobs then a batch of Tasks.
    #[arg(long, value_delimiter = ',', default_value = "50,200")]
    sizes: Vec<usize>,
    /// How many (Jobs, Tasks) pairs per N, to show the noise.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Skip later rounds once this many minutes have passed (first rounds always run).
    #[arg(long, default_value_t = 20)]
    budget_minutes: u64,
    /// Numbers of terminal Tasks present for the operator memory/CPU measure (`--presence` alone: skip).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "1000")]
    presence: Vec<usize>,
    /// Keep the batches' finished Tasks, with their Jobs, pods and results,
    /// for the presence measure (by default their namespaces are deleted
    /// first, so it sees only Tasks): what a fresh operator holds where
    /// finished Tasks keep what they ran.
    #[arg(long)]
    presence_keep: bool,
    /// Numbers of Tasks for the operator's ceiling: Tasks whose pods no node
    /// takes, created -> Running (`--ceiling` alone: skip).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "1000")]
    ceiling: Vec<usize>,
    /// Numbers of Tasks for the queue case, queued behind a cap of 0 (`--queue` alone: skip).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "1000")]
    queue: Vec<usize>,
    /// Creates in flight at once (the same for Jobs and Tasks).
    #[arg(long, default_value_t = 16)]
    inflight: usize,
    /// Cargo profile whose binaries run in the cluster (target/PROFILE/).
    #[arg(long, default_value = "release")]
    profile: String,
    /// The kustomization to install (default: the repository's manifests/).
    #[arg(long)]
    manifests: Option<std::path::PathBuf>,
    /// Directory holding longtask-operator and longtask-worker (default: target/PROFILE).
    #[arg(long)]
    bin_dir: Option<std::path::PathBuf>,
    /// Take a CPU profile of the API server during each batch (its first
    /// --profile-seconds) into DIR/{jobs,tasks}-N-rROUND.pprof, for
    /// `go tool pprof`. Starts the devcluster with --profiling.
    #[arg(long)]
    apiserver_profile: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 10)]
    profile_seconds: u32,
    #[arg(long, default_value_t = 4)]
    nodes: u32,
    #[arg(long, default_value_t = 64)]
    node_cpu: u32,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match start().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn start() -> Result<()> {
    let cli = Cli::parse();
    let root = cluster::root()?;
    let dir = root.join("target/bench-cluster");
    let bin_dir = cli
        .bin_dir
        .clone()
        .unwrap_or_else(|| root.join("target").join(&cli.profile));
    eprintln!("bench: starting devcluster in {}", dir.display());
    let profiling = cli.apiserver_profile.is_some();
    let mut cluster = Cluster::up(&dir, &bin_dir, cli.nodes, cli.node_cpu, profiling).await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let res = tokio::select! {
        r = run(&cluster, &cli) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
        _ = term.recv() => Err(anyhow::anyhow!("terminated")),
    };
    eprintln!("bench: stopping devcluster");
    let down = cluster.down();
    let out = res?;
    down?;
    println!("{out}");
    Ok(())
}

fn operator_cpu(cluster: &Cluster) -> Result<f64> {
    let pid = procfs::operator_pid(&cluster.operator_bin)
        .context("no longtask-operator process found")?;
    Ok(procfs::sample(pid, procfs::clock_ticks())?.cpu_s)
}

async fn run(cluster: &Cluster, cli: &Cli) -> Result<String> {
    if cli.sizes.is_empty() || cli.inflight == 0 {
        bail!("--sizes and --inflight must be non-empty and positive");
    }
    let manifests = match &cli.manifests {
        Some(m) => m.clone(),
        None => cluster::root()?.join("manifests"),
    };
    cluster.install(&manifests).await?;
    let began = Instant::now();
    let budget = Duration::from_secs(cli.budget_minutes * 60);
    let mut pairs: Vec<(usize, usize, Batch2)> = Vec::new();
    'rounds: for round in 0..cli.rounds.max(1) {
        for &n in &cli.sizes {
            if round > 0 && began.elapsed() > budget {
                eprintln!("bench: time budget spent; skipping later rounds");
                break 'rounds;
            }
            let mut pair = Batch2::default();
            for kind in [Kind::Jobs, Kind::Tasks] {
                let what = format!("{kind:?}").to_lowercase();
                let ns = format!("bench-{n}-r{round}-{what}");
                cluster.namespace(&ns).await?;
                let ticks = procfs::clock_ticks();
                let cpu0 = operator_cpu(cluster)?;
                let all0 = procfs::cluster_cpu(&cluster.dir, ticks)?;
                // The operator's counters move only for Tasks.
                let counters = || async {
                    match kind {
                        Kind::Tasks => queue::counters(cluster).await,
                        Kind::Jobs => Ok((0.0, 0.0)),
                    }
                };
                let calls0 = counters().await?;
                let profile = match &cli.apiserver_profile {
                    Some(d) => Some(cluster.cpu_profile(
                        &d.join(format!("{what}-{n}-r{round}.pprof")),
                        cli.profile_seconds,
                    )?),
                    None => None,
                };
                let b = batch::run(&cluster.client, &ns, kind, n, cli.inflight).await?;
                if let Some(p) = profile {
                    p.await?;
                }
                let cpu = operator_cpu(cluster)? - cpu0;
                let calls1 = counters().await?;
                let mut all = procfs::cpu_spent(&all0, &procfs::cluster_cpu(&cluster.dir, ticks)?);
                all.insert("operator".to_owned(), cpu);
                eprintln!(
                    "bench: N={n} round {round} {kind:?}: makespan {:.2}s, failed {}, operator CPU {cpu:.2}s",
                    b.makespan_s, b.failed
                );
                match kind {
                    Kind::Jobs => {
                        pair.jobs = Some(b);
                        pair.jobs_cpu = all;
                    }
                    Kind::Tasks => {
                        pair.tasks = Some(b);
                        pair.cpu = cpu;
                        pair.tasks_cpu = all;
                        pair.requests = calls1.0 - calls0.0;
                        pair.reconciles = calls1.1 - calls0.1;
                    }
                }
            }
            pairs.push((n, round, pair));
        }
    }
    // The API server flushes audit batches at least every second.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let audit = audit::read(&cluster.dir.join("logs/audit.log"))?;
    let mut rounds: BTreeMap<usize, Vec<Round>> = BTreeMap::new();
    for (n, _, p) in pairs {
        let (Some(jobs), Some(tasks)) = (p.jobs, p.tasks) else {
            continue;
        };
        let t = audit.get(&tasks.namespace).cloned().unwrap_or_default();
        let jobs_all_writes = audit.get(&jobs.namespace).map_or(0, |a| a.all_writes);
        rounds.entry(n).or_default().push(Round {
            jobs,
            tasks,
            writes: t.writes,
            jobs_all_writes,
            tasks_all_writes: t.all_writes,
            steps: t.steps,
            operator_cpu_s: p.cpu,
            operator_requests: p.requests,
            operator_reconciles: p.reconciles,
            jobs_cpu_s: p.jobs_cpu,
            tasks_cpu_s: p.tasks_cpu,
        });
    }

    let mut queues = Vec::new();
    for (i, &q) in cli.queue.iter().enumerate() {
        let ns = format!("bench-queue-{i}");
        cluster.namespace(&ns).await?;
        let m = queue::measure(cluster, &ns, q, cli.inflight).await?;
        eprintln!(
            "bench: Q={q}: all Queued {:.1}s after the first create (created in {:.1}s); idle: {:.2} API requests/s, {:.0} reconciles/s",
            m.all_queued_s, m.created_s, m.idle_api_per_s, m.idle_reconciles_per_s
        );
        queues.push(m);
    }

    let mut ceilings = Vec::new();
    for (i, &c) in cli.ceiling.iter().enumerate() {
        let ns = format!("bench-ceiling-{i}");
        cluster.namespace(&ns).await?;
        let m = ceiling::measure(cluster, &ns, c, cli.inflight, || operator_cpu(cluster)).await?;
        eprintln!(
            "bench: C={c}: all Running {:.1}s after the first create: {:.0} Tasks/s, operator CPU {:.2} ms per Task",
            m.all_running_s, m.tasks_per_s, m.cpu_ms_per_task
        );
        ceilings.push(m);
    }

    let mut presence = Vec::new();
    let mut sizes = cli.presence.clone();
    sizes.sort_unstable();
    if !sizes.is_empty() {
        if !cli.presence_keep {
            delete_bench_namespaces(cluster).await?;
        }
        let ns = "bench-presence";
        cluster.namespace(ns).await?;
        let mut have = 0;
        for p in sizes {
            let m = presence::measure(cluster, ns, have, p.max(have), cli.inflight).await?;
            eprintln!(
                "bench: P={p}: peak RSS {:.1} MiB, CPU {:.2}s, settled in {:.1}s",
                m.peak_rss_mib, m.cpu_s, m.settle_s
            );
            have = p.max(have);
            presence.push(m);
        }
    }

    let mut text = format!(
        "longtask bench: operator and worker built with the {} profile, one operator replica; {} nodes x {} CPU; {} creates in flight.\n\
         Bare Jobs run the same image and `sh -c` command directly (no worker, LONGTASK_RESULT=/dev/null);\n\
         Tasks run it under the worker. Latencies are local watch-event times in the bench.\n\n",
        cli.profile, cli.nodes, cli.node_cpu, cli.inflight
    );
    text += &report::render(&cli.sizes, &rounds, &queues, &ceilings, &presence);
    let json = report::json(
        &cli.profile,
        &cli.sizes,
        &rounds,
        &queues,
        &ceilings,
        &presence,
    );
    let path = cluster::root()?.join("target/bench-results.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json)?)
        .with_context(|| format!("write {}", path.display()))?;
    text += &format!("\nJSON: {}\n", path.display());
    Ok(text)
}

#[derive(Default)]
struct Batch2 {
    jobs: Option<batch::Batch>,
    tasks: Option<batch::Batch>,
    cpu: f64,
    /// The operator's own counters over the Tasks batch: API requests
    /// (every verb, reads included) and reconciles.
    requests: f64,
    reconciles: f64,
    /// CPU seconds per component during each batch (`procfs::cluster_cpu`).
    jobs_cpu: BTreeMap<String, f64>,
    tasks_cpu: BTreeMap<String, f64>,
}

/// Deletes the batch namespaces so the presence measure sees only its own
/// Tasks, and waits (bounded) until they are gone.
async fn delete_bench_namespaces(cluster: &Cluster) -> Result<()> {
    let api: Api<Namespace> = Api::all(cluster.client.clone());
    let lp = kube::api::ListParams::default().labels("longtask-bench=true");
    for ns in api.list(&lp).await?.items {
        if let Some(name) = ns.metadata.name {
            api.delete(&name, &DeleteParams::default()).await?;
        }
    }
    let t = Instant::now();
    while !api.list(&lp).await?.items.is_empty() {
        if t.elapsed() > Duration::from_secs(300) {
            eprintln!("bench: batch namespaces still terminating after 5 min; going on");
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(())
}
