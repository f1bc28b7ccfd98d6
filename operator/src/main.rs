//! longtask-operator: reconciles `Task`s into owned batch/v1 Jobs.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use crds::names::env;
use kube::Client;
use kube::runtime::events::Reporter;
use tracing::{error, info, warn};
use tracing_subscriber::EnvFilter;

use longtask_operator::api::call_error::Chain;
use longtask_operator::context::{Backoff, Config, Context, WorkerRbac};
use longtask_operator::controller;
use longtask_operator::ha::{elector, lease};
use longtask_operator::outputs::sweep::Settings;
use longtask_operator::queue::Queue;
use longtask_operator::retention::Defaults;
use longtask_operator::telemetry::events::Recorder;
use longtask_operator::telemetry::metrics::Metrics;
use longtask_operator::telemetry::server;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Runs long work in owned batch/v1 Jobs without blocking its reconciler.
#[derive(Parser, Debug)]
#[command(name = "longtask-operator", version)]
struct Cli {
    /// Image of the worker container in every Task's Job.
    #[arg(long, env = env::WORKER_IMAGE, required_unless_present = "print_metrics")]
    worker_image: Option<String>,
    /// Print the metrics this operator serves (a Markdown table) and exit.
    #[arg(long)]
    print_metrics: bool,
    /// Watch only this namespace (default: all namespaces). The operator then
    /// makes only namespaced calls, so Roles in that namespace suffice; it
    /// reads no Namespace, so the namespace annotation
    /// longtask.dev/max-active-tasks does not apply (use --max-active-tasks).
    #[arg(long, env = "LONGTASK_WATCH_NAMESPACE")]
    namespace: Option<String>,
    /// Log format; filter with RUST_LOG (default "info").
    #[arg(long, value_enum, default_value = "text", env = "LONGTASK_LOG_FORMAT")]
    log_format: LogFormat,
    /// Address serving /metrics; "off" disables it, port 0 picks a free port.
    #[arg(long, default_value = "0.0.0.0:8080", env = "LONGTASK_METRICS_ADDR")]
    metrics_addr: String,
    /// Address serving /healthz and /readyz; "off" disables it.
    #[arg(long, default_value = "0.0.0.0:8081", env = "LONGTASK_HEALTH_ADDR")]
    health_addr: String,
    /// Upper bound of every API call, in seconds.
    #[arg(long, default_value_t = 10, env = "LONGTASK_API_TIMEOUT_SECONDS")]
    api_timeout_seconds: u64,
    /// How many Tasks are reconciled at once (0: no limit).
    #[arg(long, default_value_t = 64, env = "LONGTASK_CONCURRENCY")]
    concurrency: u16,
    /// At most this many Tasks have a Job at once; the others wait in phase
    /// Queued, by priority then age (default: no limit). A namespace can set
    /// its own limit with the annotation longtask.dev/max-active-tasks.
    #[arg(long, env = env::MAX_ACTIVE_TASKS)]
    max_active_tasks: Option<u32>,
    /// Delete a finished Task (with its Job, pods and result ConfigMaps)
    /// this many seconds after it finished, unless its spec.deleteAfterSeconds
    /// or its namespace's annotation longtask.dev/delete-finished-after says
    /// otherwise (default: keep finished Tasks).
    #[arg(long, env = "LONGTASK_DELETE_FINISHED_AFTER")]
    delete_finished_after: Option<u64>,
    /// Keep only the newest this many finished Tasks per namespace (by finish
    /// time), deleting older ones with their Jobs, pods and result
    /// ConfigMaps, unless the namespace's annotation longtask.dev/keep-finished
    /// says otherwise (default: keep them all).
    #[arg(long, env = "LONGTASK_KEEP_FINISHED")]
    keep_finished: Option<u32>,
    /// The shortest time, in seconds, allowed between two scheduled times
    /// of a CronTask (0: any). A CronTask whose schedule fires more often
    /// starts no run and shows Ready=False, reason TooFrequent.
    #[arg(long, default_value_t = 60, env = "LONGTASK_CRON_MIN_INTERVAL")]
    cron_min_interval: u64,
    /// At most this many runs of CronTasks are active in one namespace (0:
    /// no bound); a scheduled time due beyond it is skipped, with a Warning.
    #[arg(
        long,
        default_value_t = 100,
        env = "LONGTASK_CRON_MAX_ACTIVE_PER_NAMESPACE"
    )]
    cron_max_active_per_namespace: u32,
    /// Name of this operator instance in Events and in the Lease (the pod name).
    #[arg(long, env = "POD_NAME")]
    instance: Option<String>,
    /// Namespace of the leader-election Lease (the pod's namespace). Without
    /// it, or with --leader-election=false, this instance leads alone: run
    /// only one then.
    #[arg(long, env = "POD_NAMESPACE")]
    lease_namespace: Option<String>,
    /// Seconds between two sweeps of the output stores by the leader,
    /// which delete the objects of Tasks that are gone (those a Task's
    /// delete could not: the store was down, or a worker uploaded after
    /// its Task went); 0: no sweeps (a deleted Task's objects still go at
    /// once when its store answers).
    #[arg(long, default_value_t = 300, env = "LONGTASK_OUTPUT_GC_INTERVAL")]
    output_gc_interval: u64,
    /// Elect one leader among the replicas through a Lease.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, env = "LONGTASK_LEADER_ELECTION")]
    leader_election: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.print_metrics {
        print!("{}", Metrics::new().markdown_table());
        return ExitCode::SUCCESS;
    }
    init_tracing(cli.log_format);
    // rustls' ring provider for the output stores' HTTPS (kube's client
    // uses the same).
    longtask_store::install_crypto_provider();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init(),
    }
}

/// Connects, serves metrics and health, then runs the controller: alone,
/// or as the leader once this replica holds the Lease.
async fn run(cli: Cli) -> Result<(), String> {
    let metrics_addr = server::parse_addr(&cli.metrics_addr)?;
    let health_addr = server::parse_addr(&cli.health_addr)?;
    let kube_config = kube::Config::infer()
        .await
        .map_err(|e| format!("cannot find cluster credentials (KUBECONFIG or in-cluster): {e}"))?;
    let client =
        Client::try_from(kube_config).map_err(|e| format!("cannot build the API client: {e}"))?;
    let ctx = context(&cli, &client);
    for (what, addr) in [("metrics", metrics_addr), ("health", health_addr)] {
        if let Some(addr) = addr {
            server::serve(what, addr, ctx.metrics.clone())
                .await
                .map_err(|e| format!("cannot listen on {addr} for {what}: {e}"))?;
        }
    }
    let controller = controller::run(
        client.clone(),
        ctx.clone(),
        cli.namespace.as_deref(),
        cli.concurrency,
    );
    match elector(&cli, &client) {
        Some(elector) => lead(&elector, &ctx.metrics, controller).await,
        None => {
            controller.await;
            Ok(())
        }
    }
}

/// What every reconcile gets, from the flags.
fn context(cli: &Cli, client: &Client) -> Arc<Context> {
    let reporter = Reporter {
        controller: "longtask-operator".to_owned(),
        instance: cli.instance.clone(),
    };
    let config = Config {
        retention: Defaults {
            delete_after: cli.delete_finished_after,
            keep: cli.keep_finished,
        },
        cron_min_interval: (cli.cron_min_interval > 0)
            .then(|| Duration::from_secs(cli.cron_min_interval)),
        cron_max_active_per_namespace: (cli.cron_max_active_per_namespace > 0)
            .then(|| usize::try_from(cli.cron_max_active_per_namespace).unwrap_or(usize::MAX)),
        // Where output stores' credentials Secrets are.
        operator_namespace: cli
            .lease_namespace
            .clone()
            .or_else(|| cli.namespace.clone()),
        outputs: Settings {
            interval: (cli.output_gc_interval > 0)
                .then(|| Duration::from_secs(cli.output_gc_interval)),
            ..Settings::default()
        },
        ..Config::new(
            cli.worker_image.clone().unwrap_or_default(),
            Duration::from_secs(cli.api_timeout_seconds.max(1)),
        )
    };
    Arc::new(Context {
        client: client.clone(),
        config,
        recorder: Recorder::new(client.clone(), reporter),
        metrics: Arc::new(Metrics::new()),
        backoff: Backoff::default(),
        queue: Queue::new(cli.max_active_tasks, cli.namespace.clone()),
        rbac: WorkerRbac::new(Duration::from_secs(600)),
        caches: Default::default(),
    })
}

/// The elector, unless leader election is off (then this replica leads alone).
fn elector(cli: &Cli, client: &Client) -> Option<elector::Elector> {
    let (Some(lease_ns), true) = (&cli.lease_namespace, cli.leader_election) else {
        warn!(
            "leader election off (no POD_NAMESPACE, or --leader-election=false): run one replica only"
        );
        return None;
    };
    let me = cli
        .instance
        .clone()
        .unwrap_or_else(|| format!("longtask-operator-{}", std::process::id()));
    Some(elector::Elector::new(
        client.clone(),
        lease_ns,
        &me,
        lease::Timings::default(),
    ))
}

/// Stands by until this replica holds the Lease, then runs `controller`
/// for as long as it keeps it.
async fn lead(
    elector: &elector::Elector,
    metrics: &Arc<Metrics>,
    controller: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    // A standby serves and is ready: it is healthy, just not leading.
    let standby_ready = metrics.clone();
    let acquired = tokio::select! {
        t = elector.acquire(move || standby_ready.set_ready()) => t,
        () = controller::shutdown_signal() => {
            info!("stopping while standing by");
            return Ok(());
        }
    };
    metrics.set_leader(true);
    metrics.set_leader_transitions(elector.lease_transitions());
    tokio::select! {
        biased;
        lost = elector.keep(acquired) => {
            // Stop reconciling at once: the pod restarts as a standby.
            Err(format!("{}; exiting", Chain(&lost)))
        }
        () = controller => {
            elector.release().await;
            Ok(())
        }
    }
}
