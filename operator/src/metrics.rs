//! Prometheus metrics (OpenMetrics text). Labels are bounded: verbs,
//! outcomes, phases, reasons and error categories, never object names.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::error::CallError;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabels {
    verb: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CategoryLabels {
    category: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FinishLabels {
    phase: &'static str,
    reason: String,
}

/// All metrics of the operator, plus the readiness flag.
pub struct Metrics {
    registry: Registry,
    reconciles: Counter,
    reconcile_errors: Family<CategoryLabels, Counter>,
    reconcile_duration: Histogram,
    api_requests: Family<ApiLabels, Counter>,
    jobs_created: Counter,
    tasks_finished: Family<FinishLabels, Counter>,
    leader: Gauge,
    ready: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("longtask");
        let reconciles = Counter::default();
        let reconcile_errors = Family::<CategoryLabels, Counter>::default();
        let reconcile_duration = Histogram::new(exponential_buckets(0.001, 2.0, 14));
        let api_requests = Family::<ApiLabels, Counter>::default();
        let jobs_created = Counter::default();
        let tasks_finished = Family::<FinishLabels, Counter>::default();
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this instance holds the leader Lease and runs the controller",
            leader.clone(),
        );
        registry.register("reconciles", "Reconciles run", reconciles.clone());
        registry.register(
            "reconcile_errors",
            "Failed reconciles by error category",
            reconcile_errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time one reconcile took",
            reconcile_duration.clone(),
        );
        registry.register(
            "api_requests",
            "API requests by verb and outcome",
            api_requests.clone(),
        );
        registry.register(
            "jobs_created",
            "Jobs created for Tasks",
            jobs_created.clone(),
        );
        registry.register(
            "tasks_finished",
            "Tasks that reached a terminal phase, by phase and reason",
            tasks_finished.clone(),
        );
        Self {
            registry,
            reconciles,
            reconcile_errors,
            reconcile_duration,
            api_requests,
            jobs_created,
            tasks_finished,
            leader,
            ready: AtomicBool::new(false),
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

    pub fn api_request<T>(&self, verb: &'static str, res: &Result<T, CallError>) {
        let outcome = match res {
            Ok(_) => "ok",
            Err(CallError::Timeout(_)) => "timeout",
            Err(e) => match e.code() {
                Some(404) => "not_found",
                Some(409) => "conflict",
                Some(403) => "forbidden",
                Some(c) if c < 500 => "client_error",
                Some(_) => "server_error",
                None => "transport_error",
            },
        };
        self.api_requests
            .get_or_create(&ApiLabels { verb, outcome })
            .inc();
    }

    pub fn job_created(&self) {
        self.jobs_created.inc();
    }

    pub fn task_finished(&self, phase: &'static str, reason: &str) {
        // Reasons come from the fixed vocabulary, so the label stays bounded.
        let reason = reason.to_owned();
        self.tasks_finished
            .get_or_create(&FinishLabels { phase, reason })
            .inc();
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

    /// The metrics in OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
