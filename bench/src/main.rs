//! bench: how close N Tasks come to N bare batch/v1 Jobs on the same
//! devcluster, what they cost the API server, and what the operator costs
//! with many Tasks present. See bench/README.md.

mod audit;
mod batch;
mod burst;
mod ceiling;
mod chart;
mod cluster;
mod failover;
mod fit;
mod history;
mod memory;
mod presence;
mod procfs;
mod queue;
mod report;
mod soak;
mod ui;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::{CommandFactory, FromArgMatches, Parser};
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
    /// Kept history: numbers N of finished Tasks that keep their Jobs,
    /// pods and results, run by the operator and grown in turn (e.g.
    /// 2000,10000,20000); at each, the operator after the burst and a fresh
    /// one. Given alone (or with --soak/--failover), the Jobs-against-Tasks
    /// batches, queue, ceiling and presence cases run only if also given.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    history: Vec<usize>,
    /// Tasks created per chunk while growing the history (at most two
    /// chunks unfinished: the nodes take 110 pods each).
    #[arg(long, default_value_t = 200)]
    history_chunk: usize,
    /// Stop growing the history when the machine has less memory available (MiB).
    #[arg(long, default_value_t = 1024)]
    history_min_free_mib: u64,
    /// Another operator build, NAME=PATH (repeatable): at every history
    /// size it is also started fresh beside the same Tasks (copied over
    /// the measured binary while that is stopped, which is put back
    /// after), so builds compare in one run: allocators, before and after.
    #[arg(long, value_parser = parse_alt)]
    alt_operator: Vec<(String, std::path::PathBuf)>,
    /// Failover beside the kept history: 2 replicas, the leader's pod
    /// deleted, the new leader's Lease -> a new Task Running.
    #[arg(long)]
    failover: bool,
    #[arg(long, default_value_t = 3)]
    failover_runs: usize,
    /// Run the failover when the history has this many Tasks (one of
    /// --history; default: the largest).
    #[arg(long)]
    failover_at: Option<usize>,
    /// Soak for this many minutes: a steady stream of Tasks with retention
    /// on, the operator's RSS every 10 s, the slope after warm-up and a
    /// chart (target/bench-soak.svg).
    #[arg(long)]
    soak: Option<f64>,
    /// Tasks created per second during the soak.
    #[arg(long, default_value_t = 2.0)]
    soak_rate: f64,
    /// Minutes left out of the soak's slope (default: the first third).
    #[arg(long)]
    soak_warmup: Option<f64>,
    /// The soak's Tasks set spec.deleteAfterSeconds to this.
    #[arg(long, default_value_t = 10)]
    soak_delete_after: i64,
    #[arg(long, default_value_t = 4)]
    nodes: u32,
    #[arg(long, default_value_t = 64)]
    node_cpu: u32,
    /// The web page over N queued Tasks (`kubectl longtask ui`, release
    /// build, in headless Chromium): first paint, a status change's way to
    /// the page, a filter's repaint, the plugin's RSS. Runs alone unless
    /// other cases are asked for.
    #[arg(long)]
    ui: Option<usize>,
    /// A burst of N Tasks created at once (issue 37), one operator replica:
    /// operator restarts, the Lease's holder changes and renewal age, peak
    /// RSS, CPU per Task, until every Task ended. Runs alone unless other
    /// cases are asked for.
    #[arg(long)]
    burst: Option<usize>,
    /// The burst's time limit, in minutes.
    #[arg(long, default_value_t = 90)]
    burst_minutes: u64,
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
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches)?;
    if !cli.history.is_empty()
        || cli.failover
        || cli.soak.is_some()
        || cli.ui.is_some()
        || cli.burst.is_some()
    {
        // The memory modes run alone unless other cases are asked for.
        let given =
            |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        for (id, v) in [
            ("sizes", &mut cli.sizes),
            ("queue", &mut cli.queue),
            ("ceiling", &mut cli.ceiling),
            ("presence", &mut cli.presence),
        ] {
            if !given(id) {
                v.clear();
            }
        }
    }
    if let Some(at) = cli.failover_at
        && !(cli.failover && cli.history.contains(&at))
    {
        bail!("--failover-at {at} needs --failover and {at} among the --history sizes");
    }
    if cli.soak.is_some_and(|m| m <= 0.0) || cli.soak_rate <= 0.0 {
        bail!("--soak and --soak-rate must be positive");
    }
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
    if cli.inflight == 0 {
        bail!("--inflight must be positive");
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
    if !pairs.is_empty() {
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
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

    let paged = match cli.ui {
        Some(n) => {
            cluster.namespace("bench-ui").await?;
            let u = ui::measure(cluster, "bench-ui", n, cli.inflight).await?;
            eprintln!("bench: ui: {u:?}");
            Some(u)
        }
        None => None,
    };
    let burst = match cli.burst {
        Some(n) => {
            cluster.namespace("bench-burst").await?;
            let limit = Duration::from_secs(cli.burst_minutes * 60);
            let b = burst::run(cluster, "bench-burst", n, cli.inflight, limit).await?;
            eprintln!(
                "bench: burst: {n} Tasks ended in {:.0}s; operator restarts {}, Lease holder changes {}",
                b.makespan_s, b.operator_restarts, b.holder_changes
            );
            Some(b)
        }
        None => None,
    };
    let root = cluster::root()?;
    let soaked = match cli.soak {
        Some(minutes) => {
            let plan = soak::Plan {
                minutes,
                rate: cli.soak_rate,
                warmup_min: cli.soak_warmup,
                delete_after_s: cli.soak_delete_after,
            };
            let s = soak::run(cluster, plan, &root.join("target/bench-soak.svg")).await?;
            eprintln!(
                "bench: soak: slope after warm-up {:?} MiB per 10 min; chart {}",
                s.slope_mib_per_10min, s.chart
            );
            Some(s)
        }
        None => None,
    };
    // The failover runs beside the history once it reaches --failover-at
    // (or its largest size, or wherever it stopped); without --history,
    // beside nothing.
    let failover_at = cli
        .failover_at
        .or_else(|| cli.history.iter().copied().max());
    let mut failovers: Option<Result<Vec<failover::Run>>> = None;
    let runs = cli.failover_runs.max(1);
    let kept = if cli.history.is_empty() {
        None
    } else {
        if soaked.is_some()
            || burst.is_some()
            || paged.is_some()
            || !nothing_ran(&rounds, &queues, &ceilings, &presence)
        {
            // The history's first "after the burst" reading is then of an
            // operator that ran only the history.
            memory::fresh_start(cluster, Duration::from_secs(600)).await?;
        }
        let growth = history::Growth {
            chunk: cli.history_chunk,
            inflight: cli.inflight,
            min_free_mib: cli.history_min_free_mib,
            alts: cli.alt_operator.clone(),
        };
        let h = history::run(cluster, &cli.history, growth, async |n| {
            if cli.failover && Some(n) == failover_at {
                failovers = Some(failover::run(cluster, n, runs).await);
            }
        })
        .await?;
        Some(h)
    };
    if cli.failover && failovers.is_none() {
        let n = kept.as_ref().map_or(0, |h| h.kept);
        failovers = Some(failover::run(cluster, n, runs).await);
    }
    let (failovers, failover_error) = match failovers {
        Some(Ok(r)) => (r, None),
        Some(Err(e)) => {
            eprintln!("bench: failover: {e:#}");
            (Vec::new(), Some(format!("{e:#}")))
        }
        None => (Vec::new(), None),
    };

    let mut text = format!(
        "longtask bench: operator and worker built with the {} profile, one operator replica; {} nodes x {} CPU; {} creates in flight.\n\
         Bare Jobs run the same image and `sh -c` command directly (no worker, LONGTASK_RESULT=/dev/null);\n\
         Tasks run it under the worker. Latencies are local watch-event times in the bench.\n\n",
        cli.profile, cli.nodes, cli.node_cpu, cli.inflight
    );
    text += &report::render(&cli.sizes, &rounds, &queues, &ceilings, &presence);
    for part in [
        soaked.as_ref().map(soak::render),
        paged.as_ref().map(ui::render),
        burst.as_ref().map(burst::render),
        kept.as_ref().map(history::render),
        (!failovers.is_empty()).then(|| failover::render(&failovers)),
        failover_error
            .as_ref()
            .map(|e| format!("failover failed: {e}\n")),
    ]
    .into_iter()
    .flatten()
    {
        if !text.ends_with("\n\n") {
            text.push('\n');
        }
        text += &part;
    }
    let mut json = report::json(
        &cli.profile,
        &cli.sizes,
        &rounds,
        &queues,
        &ceilings,
        &presence,
    );
    json["soak"] = serde_json::to_value(&soaked)?;
    json["ui"] = serde_json::to_value(&paged)?;
    json["burst"] = serde_json::to_value(&burst)?;
    json["history"] = serde_json::to_value(&kept)?;
    json["failover"] = serde_json::to_value(&failovers)?;
    json["failover_error"] = serde_json::to_value(&failover_error)?;
    let path = root.join("target/bench-results.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json)?)
        .with_context(|| format!("write {}", path.display()))?;
    text += &format!("\nJSON: {}\n", path.display());
    Ok(text)
}

/// True when none of the earlier cases ran.
fn nothing_ran(
    rounds: &BTreeMap<usize, Vec<Round>>,
    queues: &[queue::Queue],
    ceilings: &[ceiling::Ceiling],
    presence: &[presence::Presence],
) -> bool {
    rounds.is_empty() && queues.is_empty() && ceilings.is_empty() && presence.is_empty()
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

/// `NAME=PATH` of `--alt-operator`.
fn parse_alt(s: &str) -> Result<(String, std::path::PathBuf), String> {
    let (name, path) = s
        .split_once('=')
        .ok_or_else(|| format!("{s}: want NAME=PATH"))?;
    let path = std::path::PathBuf::from(path);
    if name.is_empty() || !path.is_file() {
        return Err(format!("{s}: want NAME=PATH of an operator binary"));
    }
    Ok((name.to_owned(), path))
}
