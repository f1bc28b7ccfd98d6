//! longtask-operator: reconciles `Task`s into owned batch/v1 Jobs.

mod admit;
mod apply;
mod build;
mod conditions;
mod context;
mod election;
mod error;
mod events;
mod facts;
#[cfg(test)]
mod fixtures;
mod leader;
mod metrics;
mod observe;
mod progress;
#[cfg(test)]
mod proptests;
mod queue;
mod reconcile;
mod samples;
mod server;
mod shape;
mod shards;
mod status;
mod triggers;
mod validate;
mod writers;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use crds::Task;
use crds::names::{env, labels};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::{self, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{error, info, warn};
use tracing_subscriber::EnvFilter;

use context::{Backoff, Config, Context};
use metrics::Metrics;

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
    #[arg(long, default_value_t = 16, env = "LONGTASK_CONCURRENCY")]
    concurrency: u16,
    /// At most this many Tasks have a Job at once; the others wait in phase
    /// Queued, by priority then age (default: no limit). A namespace can set
    /// its own limit with the annotation longtask.dev/max-active-tasks.
    #[arg(long, env = env::MAX_ACTIVE_TASKS)]
    max_active_tasks: Option<u32>,
    /// Name of this operator instance in Events and in the Lease (the pod name).
    #[arg(long, env = "POD_NAME")]
    instance: Option<String>,
    /// Namespace of the leader-election Lease (the pod's namespace). Without
    /// it, or with --leader-election=false, this instance leads alone: run
    /// only one then.
    #[arg(long, env = "POD_NAMESPACE")]
    lease_namespace: Option<String>,
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

fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    let metrics_addr = server::parse_addr(&cli.metrics_addr)?;
    let health_addr = server::parse_addr(&cli.health_addr)?;
    let kube_config = kube::Config::infer()
        .await
        .map_err(|e| format!("cannot find cluster credentials (KUBECONFIG or in-cluster): {e}"))?;
    let client =
        Client::try_from(kube_config).map_err(|e| format!("cannot build the API client: {e}"))?;

    let reporter = Reporter {
        controller: "longtask-operator".to_owned(),
        instance: cli.instance.clone(),
    };
    let metrics = Arc::new(Metrics::new());
    let ctx = Arc::new(Context {
        client: client.clone(),
        config: Config {
            worker_image: cli.worker_image.clone().unwrap_or_default(),
            api_timeout: Duration::from_secs(cli.api_timeout_seconds.max(1)),
            running_requeue: Duration::from_secs(300),
            blocked_requeue: Duration::from_secs(15),
            queued_requeue: Duration::from_secs(2),
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(300),
        },
        recorder: Recorder::new(client.clone(), reporter),
        metrics: metrics.clone(),
        backoff: Backoff::default(),
        queue: admit::Queue::new(cli.max_active_tasks, cli.namespace.clone()),
        rbac: context::WorkerRbac::new(Duration::from_secs(600)),
    });
    for (what, addr) in [("metrics", metrics_addr), ("health", health_addr)] {
        if let Some(addr) = addr {
            server::serve(what, addr, metrics.clone())
                .await
                .map_err(|e| format!("cannot listen on {addr} for {what}: {e}"))?;
        }
    }

    let elector = match (&cli.lease_namespace, cli.leader_election) {
        (Some(lease_ns), true) => {
            let me = cli
                .instance
                .clone()
                .unwrap_or_else(|| format!("longtask-operator-{}", std::process::id()));
            Some(election::Elector::new(
                client.clone(),
                lease_ns,
                &me,
                leader::Timings::default(),
            ))
        }
        _ => {
            warn!(
                "leader election off (no POD_NAMESPACE, or --leader-election=false): run one replica only"
            );
            None
        }
    };
    let Some(elector) = elector else {
        run_controller(&cli, client, ctx, metrics).await;
        return Ok(());
    };
    // A standby serves and is ready: it is healthy, just not leading.
    let standby_ready = metrics.clone();
    let acquired = tokio::select! {
        t = elector.acquire(move || standby_ready.set_ready()) => t,
        () = shutdown_signal() => {
            info!("stopping while standing by");
            return Ok(());
        }
    };
    metrics.set_leader(true);
    tokio::select! {
        biased;
        lost = elector.keep(acquired) => {
            // Stop reconciling at once: the pod restarts as a standby.
            Err(format!("{lost}; exiting"))
        }
        () = run_controller(&cli, client, ctx, metrics.clone()) => {
            elector.release().await;
            Ok(())
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// Runs the controller until SIGTERM/SIGINT, then lets running reconciles finish.
async fn run_controller(cli: &Cli, client: Client, ctx: Arc<Context>, metrics: Arc<Metrics>) {
    let ns = cli.namespace.as_deref();
    let tasks: Api<Task> = api(&client, ns);
    let jobs: Api<Job> = api(&client, ns);
    let pods: Api<Pod> = api(&client, ns);
    let cms: Api<PartialObjectMeta<ConfigMap>> = api(&client, ns);
    let ours = || watcher::Config::default().labels(labels::TASK_UID);
    // The Task cache holds what reconciles and the queue read, nothing more.
    let (store, writer) = reflector::store();
    let task_stream = reflector(
        writer,
        watcher(tasks, watcher::Config::default()).modify(slim_task),
    )
    .applied_objects();
    // Owned Jobs and pods wake a Task only when what its status reads
    // changed (`triggers.rs`); result ConfigMaps on any change (their data
    // is read on demand, so their watch carries metadata only).
    let job_stream = triggers::changed(
        watcher(jobs, ours()).modify(|j: &mut Job| j.managed_fields_mut().clear()),
        triggers::job_key,
    );
    let pod_stream = triggers::changed(
        watcher(pods, ours()).modify(|p: &mut Pod| p.managed_fields_mut().clear()),
        triggers::pod_key,
    );
    let cm_stream = watcher(cms, ours())
        .modify(|c| c.managed_fields_mut().clear())
        .touched_objects();
    let controller = Controller::for_stream(task_stream, store)
        .owns_stream(job_stream)
        .watches_stream(pod_stream, task_of_pod)
        .watches_stream(cm_stream, task_of_result)
        .with_config(controller::Config::default().concurrency(cli.concurrency))
        .shutdown_on_signal();
    let store = controller.store();
    ctx.queue.set_tasks(store.clone());
    // A Namespace is cluster-scoped: watching only one namespace, the
    // operator makes only namespaced calls (its install has Roles only), so
    // it reads no Namespace and no namespace annotation.
    if ns.is_none() {
        ctx.queue.set_namespaces(watch_namespaces(&client));
    }
    metrics.watch_store(store.clone());
    let ready = metrics.clone();
    // Poll with a timeout: the store's readiness signal wakes only its most
    // recent waiter, and the controller itself waits on it too.
    tokio::spawn(async move {
        loop {
            match tokio::time::timeout(Duration::from_secs(1), store.wait_until_ready()).await {
                Ok(Ok(())) => {
                    ready.set_ready();
                    info!("Task cache synced; ready");
                    break;
                }
                Ok(Err(_)) => break,
                Err(_) => {}
            }
        }
    });
    info!(
        namespace = ns.unwrap_or("<all>"),
        worker_image = cli.worker_image.as_deref().unwrap_or_default(),
        "starting controller"
    );
    controller
        .run(reconcile::reconcile, reconcile::error_policy, ctx.clone())
        .for_each(|res| async move {
            if let Err(e) = res {
                match e {
                    controller::Error::ObjectNotFound(_) => {}
                    e => warn!(error = %e, "controller"),
                }
            }
        })
        .await;
    info!("controller stopped");
}

/// A cache of namespaces' metadata (their max-active-tasks annotation and
/// UID), kept by a watch for as long as the controller runs.
fn watch_namespaces(
    client: &Client,
) -> kube::runtime::reflector::Store<kube::core::PartialObjectMeta<Namespace>> {
    let (reader, writer) = kube::runtime::reflector::store();
    let api: Api<kube::core::PartialObjectMeta<Namespace>> = Api::all(client.clone());
    let cfg = watcher::Config::default();
    let stream = kube::runtime::reflector(writer, watcher(api, cfg));
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Err(e) = ev {
                warn!(error = %e, "namespace watch");
            }
        }
    });
    reader
}

/// Maps a pod of a Task's Job to that Task (by the label on the pod template).
fn task_of_pod(pod: Pod) -> Option<ObjectRef<Task>> {
    let name = pod.labels().get(labels::TASK_NAME)?;
    Some(ObjectRef::new(name).within(&pod.namespace()?))
}

/// Keeps out of the Task cache what no reconcile reads: managed fields, the
/// last-applied annotation, and a terminal Task's result, logs and messages
/// (a terminal Task is never reconciled; the queue reads only its phase).
fn slim_task(t: &mut Task) {
    t.managed_fields_mut().clear();
    t.annotations_mut()
        .remove("kubectl.kubernetes.io/last-applied-configuration");
    if t.is_terminal()
        && let Some(s) = t.status.take()
    {
        // Conditions are kept only when they disagree with the phase, so
        // the reconciler sees that it must set them right.
        let conditions = if status::conditions_agree(&s) {
            Vec::new()
        } else {
            s.conditions
        };
        t.status = Some(crds::TaskStatus {
            conditions,
            phase: s.phase,
            reason: s.reason,
            job_name: s.job_name,
            job_uid: s.job_uid,
            started_at: s.started_at,
            completed_at: s.completed_at,
            attempts: s.attempts,
            exit_code: s.exit_code,
            observed_generation: s.observed_generation,
            ..crds::TaskStatus::default()
        });
    }
}

/// Maps a result ConfigMap to the Task that owns it.
fn task_of_result(cm: PartialObjectMeta<ConfigMap>) -> Option<ObjectRef<Task>> {
    let owner = cm
        .owner_references()
        .iter()
        .find(|o| o.kind == crds::names::KIND && o.api_version == crds::names::API_VERSION)?;
    Some(ObjectRef::new(&owner.name).within(&cm.namespace()?))
}
