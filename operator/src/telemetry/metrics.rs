//! Prometheus metrics (OpenMetrics text). Labels are bounded: verbs,
//! outcomes, phases, reasons and error categories. Object names only
//! where an alert must say where to look, and bounded by the namespaces:
//! `namespace` on the counters of failures, waits and start timeouts, and
//! a Task's name on the per-namespace "longest wait" gauges (one series
//! per namespace). What a status transition records is decided in
//! `transitions.rs` (pure), the longest waits in `backlog.rs` (pure).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crds::Task;
use kube::runtime::reflector::Store;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::TypedMetric;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};

use crate::telemetry::backlog::{self, Oldest};
use crate::telemetry::process;
use crate::telemetry::transitions::{self, Doc, Sample};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabels {
    verb: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CategoryLabels {
    category: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CronLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    namespace: String,
    outcome: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespaceReasonLabels {
    namespace: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    namespace: String,
    task: String,
}

/// A gauge that only exists once set (the leader's, not a standby's).
type NoLabels = [(&'static str, &'static str); 0];
type Seconds = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    rule: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    trigger: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreErrorLabels {
    operation: &'static str,
    category: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: &'static str,
}

/// Registers `metric` as `longtask_<name>` and notes it for the docs.
fn reg<M>(
    r: &mut Registry,
    docs: &mut Vec<Doc>,
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    metric: &M,
) where
    M: Metric + TypedMetric + Clone,
{
    r.register(name, help, metric.clone());
    docs.push(Doc {
        name: format!("longtask_{name}"),
        kind: M::TYPE.as_str().to_owned(),
        labels,
        help,
    });
}

/// `process_*` metrics, without the `longtask_` prefix, as dashboards
/// expect them.
fn register_process(root: &mut Registry, docs: &mut Vec<Doc>, m: &Metrics) {
    let rows: [(&'static str, &'static str, &'static str); 2] = [
        (
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory of the operator process in bytes (VmRSS)",
        ),
        (
            "process_start_time_seconds",
            "gauge",
            "Start time of the operator process since the Unix epoch in seconds",
        ),
    ];
    root.register(
        "process_resident_memory_bytes",
        rows[0].2,
        m.resident.clone(),
    );
    root.register("process_start_time_seconds", rows[1].2, m.started.clone());
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    m.started.set(since_epoch.as_secs_f64());
    for (name, kind, help) in rows {
        docs.push(Doc {
            name: name.to_owned(),
            kind: kind.to_owned(),
            labels: &[],
            help,
        });
    }
}

fn seconds_histogram() -> Histogram {
    // 0.25 s to about 8.5 hours.
    Histogram::new(exponential_buckets(0.25, 2.0, 18))
}

/// Replaces the series of `family` by one per namespace of `oldest`: a
/// namespace whose Tasks no longer wait drops out (its series goes stale).
fn set_oldest(family: &Family<TaskLabels, Seconds>, oldest: &[Oldest]) {
    family.clear();
    for o in oldest {
        family
            .get_or_create(&TaskLabels {
                namespace: o.namespace.clone(),
                task: o.task.clone(),
            })
            .set(o.seconds);
    }
}

/// All metrics of the operator, plus the readiness flag.
pub struct Metrics {
    registry: Registry,
    docs: Vec<Doc>,
    reconciles: Counter,
    reconcile_errors: Family<CategoryLabels, Counter>,
    reconcile_duration: Histogram,
    api_requests: Family<ApiLabels, Counter>,
    cache_reads: Family<KindLabels, Counter>,
    jobs_created: Counter,
    results: Family<ResultLabels, Counter>,
    tasks: Family<PhaseLabels, Gauge>,
    task_duration: Family<OutcomeLabels, Histogram>,
    queue_latency: Histogram,
    job_to_task: Histogram,
    events: Family<ReasonLabels, Counter>,
    deleted: Family<RuleLabels, Counter>,
    leader: Gauge,
    leader_transitions: Family<NoLabels, Gauge>,
    waits: Family<NamespaceReasonLabels, Counter>,
    start_timeouts: Family<NamespaceReasonLabels, Counter>,
    queue_oldest: Family<TaskLabels, Seconds>,
    progress_stalled: Family<TaskLabels, Seconds>,
    resident: Gauge,
    started: Seconds,
    cron_lag: Histogram,
    cron_runs: Family<CronLabels, Counter>,
    orphaned: Family<NoLabels, Gauge>,
    objects_deleted: Family<TriggerLabels, Counter>,
    store_errors: Family<StoreErrorLabels, Counter>,
    store: Mutex<Option<Store<Task>>>,
    ready: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut root = Registry::default();
        let mut docs = Vec::new();
        let m = Self {
            reconciles: Counter::default(),
            reconcile_errors: Family::default(),
            reconcile_duration: Histogram::new(exponential_buckets(0.001, 2.0, 14)),
            api_requests: Family::default(),
            cache_reads: Family::default(),
            jobs_created: Counter::default(),
            results: Family::default(),
            tasks: Family::default(),
            task_duration: Family::new_with_constructor(seconds_histogram),
            queue_latency: seconds_histogram(),
            job_to_task: seconds_histogram(),
            events: Family::default(),
            deleted: Family::default(),
            leader: Gauge::default(),
            leader_transitions: Family::default(),
            waits: Family::default(),
            start_timeouts: Family::default(),
            queue_oldest: Family::default(),
            progress_stalled: Family::default(),
            resident: Gauge::default(),
            started: Seconds::default(),
            cron_lag: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            cron_runs: Family::default(),
            orphaned: Family::default(),
            objects_deleted: Family::default(),
            store_errors: Family::default(),
            store: Mutex::new(None),
            ready: AtomicBool::new(false),
            registry: Registry::default(),
            docs: Vec::new(),
        };
        let r = root.sub_registry_with_prefix("longtask");
        reg(
            r,
            &mut docs,
            "tasks",
            "Tasks in the operator's cache by phase (Pending: not looked at yet, or waiting for its upstreams)",
            &["phase"],
            &m.tasks,
        );
        reg(
            r,
            &mut docs,
            "queue_oldest_seconds",
            "Per namespace, how long its oldest Task not started yet (no phase, or Queued) has existed, naming it (leader only)",
            &["namespace", "task"],
            &m.queue_oldest,
        );
        reg(
            r,
            &mut docs,
            "progress_stalled_seconds",
            "Per namespace, the longest time since a Running Task that reports progress last reported it, naming that Task (leader only)",
            &["namespace", "task"],
            &m.progress_stalled,
        );
        reg(
            r,
            &mut docs,
            "task_results",
            "Tasks that finished, by namespace, outcome (completed, failed) and reason",
            &["namespace", "outcome", "reason"],
            &m.results,
        );
        reg(
            r,
            &mut docs,
            "task_waits",
            "Tasks whose pod began to wait, by namespace and reason (Unschedulable, ImagePullFailed, CreateContainerConfigError, PodRefused)",
            &["namespace", "reason"],
            &m.waits,
        );
        reg(
            r,
            &mut docs,
            "start_timeouts",
            "Tasks failed by spec.startTimeoutSeconds, by namespace and the reason their pod waited for",
            &["namespace", "reason"],
            &m.start_timeouts,
        );
        reg(
            r,
            &mut docs,
            "task_duration_seconds",
            "Time from a Task's start (its Job's start) to its end, by outcome",
            &["outcome"],
            &m.task_duration,
        );
        reg(
            r,
            &mut docs,
            "task_queue_seconds",
            "Time from a Task's creation to its Job's start (Tasks without spec.after)",
            &[],
            &m.queue_latency,
        );
        reg(
            r,
            &mut docs,
            "job_to_task_seconds",
            "Time from a Job's end to its Task's final status being written",
            &[],
            &m.job_to_task,
        );
        reg(
            r,
            &mut docs,
            "reconciles",
            "Reconciles run",
            &[],
            &m.reconciles,
        );
        reg(
            r,
            &mut docs,
            "reconcile_errors",
            "Failed reconciles by error category",
            &["category"],
            &m.reconcile_errors,
        );
        reg(
            r,
            &mut docs,
            "reconcile_duration_seconds",
            "Time one reconcile took",
            &[],
            &m.reconcile_duration,
        );
        reg(
            r,
            &mut docs,
            "api_requests",
            "API requests of the reconciler by verb and outcome",
            &["verb", "outcome"],
            &m.api_requests,
        );
        reg(
            r,
            &mut docs,
            "cache_reads",
            "Reads the reconciler took from its watch caches instead of the API server, by kind (job, pods, result)",
            &["kind"],
            &m.cache_reads,
        );
        reg(
            r,
            &mut docs,
            "jobs_created",
            "Jobs created for Tasks",
            &[],
            &m.jobs_created,
        );
        reg(
            r,
            &mut docs,
            "events",
            "Events published on Tasks and CronTasks, by reason",
            &["reason"],
            &m.events,
        );
        reg(
            r,
            &mut docs,
            "tasks_deleted",
            "Finished Tasks deleted by retention, by rule (after: their time passed; keep: past the namespace's keep-finished limit)",
            &["rule"],
            &m.deleted,
        );
        reg(
            r,
            &mut docs,
            "leader",
            "1 while this instance holds the leader Lease and runs the controller",
            &[],
            &m.leader,
        );
        reg(
            r,
            &mut docs,
            "leader_transitions",
            "The leader Lease's leaseTransitions when this instance took it (leader only): how often leadership changed hands",
            &[],
            &m.leader_transitions,
        );
        reg(
            r,
            &mut docs,
            "crontask_schedule_lag_seconds",
            "Time from a CronTask's scheduled time to its run (a Task) being created",
            &[],
            &m.cron_lag,
        );
        reg(
            r,
            &mut docs,
            "crontask_runs",
            "Scheduled times of CronTasks by what became of them (created, skipped by the concurrency policy, missed while the operator was down or the CronTask suspended)",
            &["outcome"],
            &m.cron_runs,
        );
        reg(
            r,
            &mut docs,
            "output_prefixes_orphaned",
            "Task prefixes in output stores whose Task is gone, found by the last sweep and not deleted yet (leader only)",
            &[],
            &m.orphaned,
        );
        reg(
            r,
            &mut docs,
            "output_objects_deleted",
            "Objects deleted from output stores, by trigger (task_deleted: a Task's delete; sweep: found orphaned)",
            &["trigger"],
            &m.objects_deleted,
        );
        reg(
            r,
            &mut docs,
            "output_store_errors",
            "Failed requests to output stores (and reads of their credentials), by operation (credentials, list, delete) and category (the Output* reason it stands for)",
            &["operation", "category"],
            &m.store_errors,
        );
        for phase in transitions::PHASES {
            let _ = m.tasks.get_or_create(&PhaseLabels { phase });
        }
        register_process(&mut root, &mut docs, &m);
        Self {
            registry: root,
            docs,
            ..m
        }
    }

    pub fn reconciled(&self, took: Duration, error_category: Option<&'static str>) {
        self.reconciles.inc();
        self.reconcile_duration.observe(took.as_secs_f64());
        if let Some(category) = error_category {
            self.reconcile_errors
                .get_or_create(&CategoryLabels { category })
                .inc();
        }
    }

    /// One API call by `verb` ended with `outcome` (see `api::call_error::outcome`).
    pub fn api_request(&self, verb: &'static str, outcome: &'static str) {
        self.api_requests
            .get_or_create(&ApiLabels { verb, outcome })
            .inc();
    }

    /// A read of `kind` served by a watch cache: an API request saved.
    pub fn cache_read(&self, kind: &'static str) {
        self.cache_reads.get_or_create(&KindLabels { kind }).inc();
    }

    pub fn job_created(&self) {
        self.jobs_created.inc();
    }

    /// Retention deleted a finished Task by `rule` ("after" or "keep").
    pub fn task_deleted(&self, rule: &'static str) {
        self.deleted.get_or_create(&RuleLabels { rule }).inc();
    }

    /// A CronTask's run was created `lag` seconds after its scheduled time.
    pub fn cron_run_created(&self, lag: f64) {
        self.cron_lag.observe(lag);
        self.cron_runs
            .get_or_create(&CronLabels { outcome: "created" })
            .inc();
    }

    /// The skipped and missed times a CronTask's status counts anew.
    pub fn cron_counts(&self, before: &crds::CronTaskStatus, after: &crds::CronTaskStatus) {
        for (outcome, old, new) in [
            ("skipped", before.skipped, after.skipped),
            ("missed", before.missed, after.missed),
        ] {
            let n = u64::try_from(new.saturating_sub(old)).unwrap_or(0);
            if n > 0 {
                self.cron_runs
                    .get_or_create(&CronLabels { outcome })
                    .inc_by(n);
            }
        }
    }

    /// The last sweep left `n` orphaned Task prefixes not deleted.
    pub fn set_orphaned(&self, n: usize) {
        self.orphaned
            .get_or_create(&[])
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// `n` objects were deleted from an output store for `trigger`.
    pub fn objects_deleted(&self, trigger: &'static str, n: u64) {
        self.objects_deleted
            .get_or_create(&TriggerLabels { trigger })
            .inc_by(n);
    }

    /// A request of `operation` to an output store failed (`category`: a
    /// reason of the fixed vocabulary).
    pub fn store_error(&self, operation: &'static str, category: &'static str) {
        self.store_errors
            .get_or_create(&StoreErrorLabels {
                operation,
                category,
            })
            .inc();
    }

    pub fn event_published(&self, reason: &'static str) {
        self.events.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// Records what a status transition of a Task in `namespace` measured.
    pub fn record(&self, namespace: &str, samples: &[Sample]) {
        let by_reason = |reason: &'static str| NamespaceReasonLabels {
            namespace: namespace.to_owned(),
            reason,
        };
        for s in samples {
            match s {
                Sample::Queued(secs) => self.queue_latency.observe(*secs),
                Sample::Waiting(r) => {
                    self.waits.get_or_create(&by_reason(r)).inc();
                }
                Sample::StartTimedOut(r) => {
                    self.start_timeouts.get_or_create(&by_reason(r)).inc();
                }
                Sample::Finished {
                    outcome,
                    reason,
                    duration,
                    job_to_task,
                } => {
                    // Reasons come from the fixed vocabulary: bounded.
                    let labels = ResultLabels {
                        namespace: namespace.to_owned(),
                        outcome,
                        reason,
                    };
                    self.results.get_or_create(&labels).inc();
                    if let Some(d) = duration {
                        self.task_duration
                            .get_or_create(&OutcomeLabels { outcome })
                            .observe(*d);
                    }
                    if let Some(d) = job_to_task {
                        self.job_to_task.observe(*d);
                    }
                }
            }
        }
    }

    /// The Task cache the `tasks` gauge is counted from at each scrape.
    pub fn watch_store(&self, store: Store<Task>) {
        if let Ok(mut s) = self.store.lock() {
            *s = Some(store);
        }
    }

    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The Lease's `leaseTransitions` as this instance took it.
    pub fn set_leader_transitions(&self, transitions: i32) {
        self.leader_transitions
            .get_or_create(&[])
            .set(i64::from(transitions));
    }

    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    fn count_phases(&self) {
        let tasks: Vec<Arc<Task>> = match self.store.lock() {
            Ok(s) => match s.as_ref() {
                Some(store) => store.state(),
                None => return,
            },
            Err(_) => return,
        };
        for (phase, n) in transitions::count_phases(tasks.iter().map(|t| &**t)) {
            self.tasks
                .get_or_create(&PhaseLabels { phase })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let now = k8s_openapi::jiff::Timestamp::now();
        let b = backlog::backlog(tasks.iter().map(|t| &**t), now);
        set_oldest(&self.queue_oldest, &b.queued);
        set_oldest(&self.progress_stalled, &b.stalled);
    }

    /// The metrics in OpenMetrics text format.
    pub fn encode(&self) -> String {
        self.count_phases();
        if let Some(b) = process::resident_now() {
            self.resident.set(i64::try_from(b).unwrap_or(i64::MAX));
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// The metrics table of docs/operations.md: one row per registered metric.
    pub fn markdown_table(&self) -> String {
        transitions::markdown_table(&self.docs)
    }
}
