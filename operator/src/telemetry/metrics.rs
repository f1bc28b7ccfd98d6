//! Prometheus metrics (OpenMetrics text). Labels are bounded: verbs,
//! outcomes, phases, reasons and error categories, never object names.
//! What a status transition records is decided in `samples.rs` (pure).

use std::sync::atomic::{AtomicBool, Ordering};
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
    outcome: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    rule: &'static str,
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

fn seconds_histogram() -> Histogram {
    // 0.25 s to about 8.5 hours.
    Histogram::new(exponential_buckets(0.25, 2.0, 18))
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
    cron_lag: Histogram,
    cron_runs: Family<CronLabels, Counter>,
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
        let mut r = Registry::with_prefix("longtask");
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
            cron_lag: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            cron_runs: Family::default(),
            store: Mutex::new(None),
            ready: AtomicBool::new(false),
            registry: Registry::default(),
            docs: Vec::new(),
        };
        reg(
            &mut r,
            &mut docs,
            "tasks",
            "Tasks in the operator's cache by phase (Pending: not looked at yet)",
            &["phase"],
            &m.tasks,
        );
        reg(
            &mut r,
            &mut docs,
            "task_results",
            "Tasks that finished, by outcome (completed, failed) and reason",
            &["outcome", "reason"],
            &m.results,
        );
        reg(
            &mut r,
            &mut docs,
            "task_duration_seconds",
            "Time from a Task's start (its Job's start) to its end, by outcome",
            &["outcome"],
            &m.task_duration,
        );
        reg(
            &mut r,
            &mut docs,
            "task_queue_seconds",
            "Time from a Task's creation to its Job's start",
            &[],
            &m.queue_latency,
        );
        reg(
            &mut r,
            &mut docs,
            "job_to_task_seconds",
            "Time from a Job's end to its Task's final status being written",
            &[],
            &m.job_to_task,
        );
        reg(
            &mut r,
            &mut docs,
            "reconciles",
            "Reconciles run",
            &[],
            &m.reconciles,
        );
        reg(
            &mut r,
            &mut docs,
            "reconcile_errors",
            "Failed reconciles by error category",
            &["category"],
            &m.reconcile_errors,
        );
        reg(
            &mut r,
            &mut docs,
            "reconcile_duration_seconds",
            "Time one reconcile took",
            &[],
            &m.reconcile_duration,
        );
        reg(
            &mut r,
            &mut docs,
            "api_requests",
            "API requests of the reconciler by verb and outcome",
            &["verb", "outcome"],
            &m.api_requests,
        );
        reg(
            &mut r,
            &mut docs,
            "cache_reads",
            "Reads the reconciler took from its watch caches instead of the API server, by kind (job, pods, result)",
            &["kind"],
            &m.cache_reads,
        );
        reg(
            &mut r,
            &mut docs,
            "jobs_created",
            "Jobs created for Tasks",
            &[],
            &m.jobs_created,
        );
        reg(
            &mut r,
            &mut docs,
            "events",
            "Events published on Tasks and CronTasks, by reason",
            &["reason"],
            &m.events,
        );
        reg(
            &mut r,
            &mut docs,
            "tasks_deleted",
            "Finished Tasks deleted by retention, by rule (after: their time passed; keep: past the namespace's keep-finished limit)",
            &["rule"],
            &m.deleted,
        );
        reg(
            &mut r,
            &mut docs,
            "leader",
            "1 while this instance holds the leader Lease and runs the controller",
            &[],
            &m.leader,
        );
        reg(
            &mut r,
            &mut docs,
            "crontask_schedule_lag_seconds",
            "Time from a CronTask's scheduled time to its run (a Task) being created",
            &[],
            &m.cron_lag,
        );
        reg(
            &mut r,
            &mut docs,
            "crontask_runs",
            "Scheduled times of CronTasks by what became of them (created, skipped by the concurrency policy, missed while the operator was down or the CronTask suspended)",
            &["outcome"],
            &m.cron_runs,
        );
        for phase in transitions::PHASES {
            let _ = m.tasks.get_or_create(&PhaseLabels { phase });
        }
        Self {
            registry: r,
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

    /// One API call by `verb` ended with `outcome` (see `call::outcome`).
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

    pub fn event_published(&self, reason: &'static str) {
        self.events.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// Records what a status transition measured.
    pub fn record(&self, samples: &[Sample]) {
        for s in samples {
            match s {
                Sample::Queued(secs) => self.queue_latency.observe(*secs),
                Sample::Finished {
                    outcome,
                    reason,
                    duration,
                    job_to_task,
                } => {
                    // Reasons come from the fixed vocabulary: bounded.
                    let reason = *reason;
                    self.results
                        .get_or_create(&ResultLabels { outcome, reason })
                        .inc();
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
    }

    /// The metrics in OpenMetrics text format.
    pub fn encode(&self) -> String {
        self.count_phases();
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
