//! The `CronTask` custom resource: a Task template run on a schedule,
//! exactly once per scheduled time. See docs/cron.md.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::{self, annotations, labels};
use crate::task::{Task, TaskSpec};

/// Longest CronTask name: its runs are named `<name>-<unix seconds>` (10
/// digits) and manual ones `<name>-m<unix seconds>`, within a Task's 63.
pub const MAX_NAME_LEN: usize = 51;

/// Default `spec.catchUpSeconds`.
pub const DEFAULT_CATCH_UP_SECONDS: i64 = 3600;

/// Default `spec.maxActiveRuns`.
pub const DEFAULT_MAX_ACTIVE_RUNS: i32 = 10;

/// What to do when a scheduled time comes while an earlier run of the same
/// CronTask is still active.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, JsonSchema)]
pub enum ConcurrencyPolicy {
    /// Start the new run beside the active ones.
    #[default]
    Allow,
    /// Skip the new run (counted in status.skipped, told in an Event).
    Forbid,
    /// Cancel the active runs (they keep their partial result, as a
    /// cancelled Task does) and start the new one.
    Replace,
    /// Keep that time and start its run as soon as no run is active;
    /// further times while one is kept are skipped.
    BufferOne,
}

/// Labels and annotations given to each run (a Task).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
pub struct TaskTemplateMetadata {
    /// Labels of each run. Keys under longtask.dev/ are longtask's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 64))]
    pub labels: BTreeMap<String, String>,
    /// Annotations of each run. Keys under longtask.dev/ are longtask's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 64))]
    pub annotations: BTreeMap<String, String>,
}

/// The Task each run is made from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct TaskTemplate {
    /// Labels and annotations of each run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TaskTemplateMetadata>,
    /// The spec of each run, validated as a Task's is. Changing it changes
    /// the runs made from then on, not the ones already made.
    #[schemars(transform = crate::bounds::without_transition_rules)]
    pub spec: TaskSpec,
}

/// When and how a Task is run on a schedule. The runs are ordinary Tasks
/// (named `<name>-<unix seconds of the scheduled time>`), owned by the
/// CronTask, with their own status, result, queueing and Kueue admission.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "longtask.dev",
    version = "v1alpha1",
    kind = "CronTask",
    plural = "crontasks",
    shortname = "ct",
    namespaced,
    status = "CronTaskStatus",
    derive = "PartialEq",
    doc = "A CronTask runs a Task template on a cron schedule, exactly once per scheduled time.",
    validation = Rule::new("self.metadata.name.size() <= 51").message("metadata.name must be at most 51 characters: runs are named <name>-<unix seconds>, within a Task's 63"),
    validation = Rule::new("!has(self.spec.taskTemplate.spec.after)").message("spec.taskTemplate.spec.after is not supported: a run's upstreams would be other runs' fixed names; chain the steps inside one Task, or apply the downstream Tasks from the run"),
    printcolumn(name = "Schedule", type_ = "string", json_path = ".spec.schedule", description = "When runs start (cron)"),
    printcolumn(name = "TimeZone", type_ = "string", json_path = ".spec.timeZone", description = "The schedule's time zone"),
    printcolumn(name = "Suspended", type_ = "boolean", json_path = ".spec.suspend"),
    printcolumn(name = "Active", type_ = "integer", json_path = ".status.activeCount", description = "Runs not finished"),
    printcolumn(name = "Last", type_ = "date", json_path = ".status.lastScheduleTime", description = "The latest scheduled time handled"),
    printcolumn(name = "Next", type_ = "string", json_path = ".status.nextScheduleTimes[0]", description = "The next scheduled time"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct CronTaskSpec {
    /// When runs start: five cron fields (minute hour day-of-month month
    /// day-of-week), or six with seconds first, or a macro (@yearly,
    /// @annually, @monthly, @weekly, @daily, @midnight, @hourly). Names
    /// (JAN, mon) and steps (*/15) as in cron. Set the zone in `timeZone`,
    /// not with a TZ= or CRON_TZ= prefix. `schedule` or `schedules` is
    /// required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    #[x_kube(validation = Rule::new("!self.startsWith('TZ=') && !self.startsWith('CRON_TZ=')").message("spec.schedule: a TZ= or CRON_TZ= prefix is not read; set spec.timeZone instead"))]
    pub schedule: Option<String>,

    /// More schedules, in the same format: a run starts at every time any
    /// of them names (once, when two name the same time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    #[x_kube(validation = Rule::new("self.all(s, s.size() <= 256 && !s.startsWith('TZ=') && !s.startsWith('CRON_TZ='))").message("spec.schedules: each at most 256 characters, without a TZ= or CRON_TZ= prefix (set spec.timeZone)"))]
    pub schedules: Vec<String>,

    /// IANA time zone of the schedule, e.g. Europe/Berlin. Default: UTC.
    /// Daylight saving: a time the clock skips runs when the clock jumps,
    /// a time it shows twice runs once (docs/cron.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub time_zone: Option<String>,

    // Documented on `ConcurrencyPolicy`.
    #[serde(default)]
    pub concurrency_policy: ConcurrencyPolicy,

    /// How late a scheduled time may still start, in seconds, after the
    /// operator was down or the CronTask suspended: of the times missed,
    /// only the latest one within this window runs; the others are counted
    /// in status.missed and told in an Event. Default: 3600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 31_622_400))]
    pub catch_up_seconds: Option<i64>,

    /// No new run starts while true (active runs go on). On resume, the
    /// latest time missed within catchUpSeconds runs.
    #[serde(default)]
    pub suspend: bool,

    /// Suspend the CronTask (spec.suspend: true, condition Suspended with
    /// reason TooManyFailures) after this many consecutive failed runs.
    /// Default: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub stop_after_failures: Option<i32>,

    /// Completed runs to keep (older ones are deleted with their Jobs and
    /// results). Default: 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000))]
    pub successful_tasks_history_limit: Option<i32>,

    /// Failed runs to keep. Default: 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000))]
    pub failed_tasks_history_limit: Option<i32>,

    /// At most this many runs of this CronTask are active (not finished) at
    /// once: a scheduled time that comes while that many are active is
    /// skipped (counted in status.skipped, told in an Event), whatever the
    /// concurrencyPolicy. Default: 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_active_runs: Option<i32>,

    /// The Task each run is made from.
    pub task_template: TaskTemplate,
}

impl CronTaskSpec {
    /// Every schedule, `schedule` first.
    pub fn all_schedules(&self) -> impl Iterator<Item = &str> {
        self.schedule
            .iter()
            .map(String::as_str)
            .chain(self.schedules.iter().map(String::as_str))
    }

    /// `catchUpSeconds` or its default.
    pub fn catch_up_seconds(&self) -> i64 {
        self.catch_up_seconds.unwrap_or(DEFAULT_CATCH_UP_SECONDS)
    }

    /// `successfulTasksHistoryLimit` or its default.
    pub fn successful_limit(&self) -> usize {
        usize::try_from(self.successful_tasks_history_limit.unwrap_or(3)).unwrap_or(0)
    }

    /// `maxActiveRuns` or its default.
    pub fn max_active_runs(&self) -> usize {
        usize::try_from(self.max_active_runs.unwrap_or(DEFAULT_MAX_ACTIVE_RUNS)).unwrap_or(1)
    }

    /// `failedTasksHistoryLimit` or its default.
    pub fn failed_limit(&self) -> usize {
        usize::try_from(self.failed_tasks_history_limit.unwrap_or(1)).unwrap_or(0)
    }
}

/// What the operator last did with a CronTask, and what comes next.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronTaskStatus {
    /// Ready (the schedule and time zone are valid and runs start as
    /// scheduled) and Suspended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// The latest scheduled time handled: run, skipped or missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,

    /// The scheduled time of the latest run that completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_time: Option<Time>,

    /// The next scheduled times (at most 3), RFC 3339 in UTC.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_schedule_times: Vec<String>,

    /// Names of the runs not finished yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active: Vec<String>,

    /// How many runs are not finished yet.
    #[serde(default)]
    pub active_count: i32,

    /// With concurrencyPolicy BufferOne: the scheduled time kept to run
    /// once the active run ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffered: Option<Time>,

    /// Failed runs in a row, counting the newest finished runs.
    #[serde(default)]
    pub consecutive_failures: i32,

    /// The scheduled time of the newest finished run counted in
    /// consecutiveFailures and lastSuccessfulTime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_counted_time: Option<Time>,

    /// Scheduled times skipped: by concurrencyPolicy (Forbid, BufferOne),
    /// by maxActiveRuns, or by the operator's bound on active runs per
    /// namespace.
    #[serde(default)]
    pub skipped: i64,

    /// Scheduled times whose run could not be made because another Task
    /// already had its name (not made by this CronTask): each is told in a
    /// Warning Event (reason RunNameTaken) naming that Task and what claims
    /// it, and counted here once.
    #[serde(default)]
    pub name_taken: i64,

    /// Tasks that claim to be runs of this CronTask but are named after a
    /// scheduled time still to come: no run is, so they are ignored (not
    /// counted, never deleted) and told once in a Warning Event (reason
    /// ForgedRun). At most 16 names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub ignored_runs: Vec<String>,

    /// Scheduled times that passed without a run (operator down, suspended)
    /// and were not caught up.
    #[serde(default)]
    pub missed: i64,

    /// The schedules and zone the times above follow. After an edit,
    /// times are counted from the moment it is seen, so an edit never
    /// starts a time already past.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_in_effect: Option<String>,

    /// The generation of the spec this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The name of the run of CronTask `cron` scheduled at `at`.
pub fn run_name(cron: &str, at: Timestamp) -> String {
    format!("{cron}-{}", at.as_second())
}

/// The name of a run of CronTask `cron` started by hand at `at`.
pub fn manual_run_name(cron: &str, at: Timestamp) -> String {
    format!("{cron}-m{}", at.as_second())
}

/// The Task of a run of `cron` for `at`: its template's labels and
/// annotations, with the CronTask's name, the scheduled time and the kind
/// of run (`manual`: `kubectl longtask trigger`), owned by the CronTask.
pub fn build_run(cron: &CronTask, at: Timestamp, manual: bool) -> Task {
    let cron_name = cron.metadata.name.clone().unwrap_or_default();
    let name = if manual {
        manual_run_name(&cron_name, at)
    } else {
        run_name(&cron_name, at)
    };
    let meta = cron.spec.task_template.metadata.clone().unwrap_or_default();
    let mut l = meta.labels;
    l.insert(labels::CRON_TASK.to_owned(), cron_name.clone());
    let mut a = meta.annotations;
    a.insert(annotations::SCHEDULED_AT.to_owned(), at.to_string());
    let kind = if manual { "manual" } else { "scheduled" };
    a.insert(annotations::RUN.to_owned(), kind.to_owned());
    let owner = OwnerReference {
        api_version: names::API_VERSION.to_owned(),
        kind: names::CRON_KIND.to_owned(),
        name: cron_name,
        uid: cron.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    Task {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: cron.metadata.namespace.clone(),
            labels: Some(l),
            annotations: Some(a),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: cron.spec.task_template.spec.clone(),
        status: None,
    }
}
