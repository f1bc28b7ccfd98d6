//! The `Task` custom resource: spec, status and CRD-level validation.

use k8s_openapi::api::core::v1::{EnvVar, ResourceRequirements, SecurityContext, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conditions::Reason;
use crate::pod::{PodTemplate, PullPolicy};

// Validation notes (not user docs):
// - Immutability: every field but `cancel` is compared with its old value
//   (presence included, so adding an optional field later is refused too);
//   `cancel` may only go from false to true. A new spec field must be added
//   to the first spec rule below; crds/tests/crd_manifest.rs
//   (`immutability_rule_covers_every_spec_field`) fails, naming it, until
//   it is.
// - Lists carry maxItems so the API server's CEL cost estimate stays bounded.

/// What the Task runs and within which limits. Immutable once created:
/// delete the Task and create it again to run it again.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "longtask.dev",
    version = "v1alpha1",
    kind = "Task",
    plural = "tasks",
    shortname = "lt",
    namespaced,
    status = "TaskStatus",
    derive = "PartialEq",
    doc = "A Task runs one program to completion in an owned batch/v1 Job and keeps its result in status.",
    validation = Rule::new("self.metadata.name.size() <= 63").message("metadata.name must be at most 63 characters: the Task's Job takes the Task's name"),
    validation = crate::rules::shard_names(),
    validation = crate::rules::after_not_self(),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase", description = "Pending, Queued, Running, Completed or Failed"),
    printcolumn(name = "Progress", type_ = "string", json_path = ".status.progress.display", description = "Percent done as the program last reported it"),
    printcolumn(name = "Attempts", type_ = "integer", json_path = ".status.attempts", description = "Pods started for this Task"),
    printcolumn(name = "Reason", type_ = "string", json_path = ".status.reason", description = "Why the Task is in its phase"),
    printcolumn(name = "Outputs", type_ = "string", json_path = ".status.outputs.size", description = "Total size of the files uploaded to the output store"),
    printcolumn(name = "Waiting", type_ = "string", json_path = ".status.conditions[?(@.type==\"Waiting\")].message", description = "Why the pod cannot start (image, scheduling, config), while it cannot"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Job", type_ = "string", json_path = ".status.jobName", description = "The Task's Job", priority = 1),
    printcolumn(name = "Started", type_ = "date", json_path = ".status.startedAt", priority = 1),
    printcolumn(name = "Completed", type_ = "date", json_path = ".status.completedAt", priority = 1)
)]
#[x_kube(
    validation = crate::rules::spec_immutable(),
    validation = Rule::new("!has(oldSelf.cancel) || !oldSelf.cancel || (has(self.cancel) && self.cancel)").message("spec.cancel can only change from false to true"),
    validation = Rule::new("!has(self.parallelism) || self.parallelism <= self.shards").message("spec.parallelism must not exceed spec.shards"),
    validation = Rule::new("!has(self.imagePullPolicy) || has(self.image)").message("spec.imagePullPolicy applies to spec.image: set spec.image too, or leave imagePullPolicy out")
)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    /// The program to run and its first arguments, exec-style (no shell is
    /// involved unless you name one, e.g. ["sh", "-c", "echo hi"]). The
    /// program runs in `image`, or else in the longtask worker image, which
    /// provides sh and coreutils. Required, also with `image`: the image's
    /// ENTRYPOINT and CMD are not used. At least one entry, the first
    /// naming the program.
    #[schemars(length(min = 1, max = 256))]
    #[x_kube(validation = Rule::new("self.size() > 0 && self[0] != ''").message("spec.command must name the program to run: give at least one non-empty entry, e.g. [sh, -c, 'echo hi'] (also with spec.image: its ENTRYPOINT and CMD are not used)"))]
    pub command: Vec<String>,

    /// The image the program runs in, e.g. python:3.12-slim or your own.
    /// longtask injects its worker: an init container from the worker image
    /// copies the static worker binary into the pod, and this image's
    /// container runs it, which runs `command`. So the image needs no shell,
    /// no libc and nothing of longtask's; it runs as uid 65532 unless
    /// `podTemplate.securityContext` or `securityContext` says otherwise,
    /// with HOME in the work directory /longtask. Default: the longtask
    /// worker image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub image: Option<String>,

    // Documented on `PullPolicy`: schemars takes the enum's doc for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<PullPolicy>,

    /// Mounts of `podTemplate.volumes` into the program's container (core/v1
    /// VolumeMount). Not at or under /longtask (the work directory) or
    /// /longtask-bin (the injected worker), which longtask mounts, however
    /// written (`//longtask-bin`, `/./longtask-bin/`); no `..` in a
    /// mountPath; a mountPath of at most 4096 characters. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), transform = crate::bounds::volume_mounts)]
    #[x_kube(
        validation = crate::rules::mounts_outside_reserved(),
        validation = crate::rules::mounts_without_dotdot(),
        validation = Rule::new("self.all(m, m.name != 'longtask' && m.name != 'longtask-bin')").message("spec.volumeMounts: the volumes longtask and longtask-bin are longtask's, which it mounts itself")
    )]
    pub volume_mounts: Vec<VolumeMount>,

    /// The program's working directory. Default: the image's (the worker
    /// image's is /longtask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub working_dir: Option<String>,

    /// The program's container securityContext (core/v1), merged over
    /// longtask's defaults field by field. The defaults meet the restricted
    /// Pod Security Standard: allowPrivilegeEscalation false, all
    /// capabilities dropped, runAsNonRoot, seccomp RuntimeDefault. Settings
    /// below that standard are then up to the namespace's Pod Security
    /// admission. Default: those defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<Box<SecurityContext>>,

    /// Where and how the pod runs: a subset of the PodSpec (placement,
    /// ServiceAccount, volumes, securityContext, labels and annotations).
    /// Default: any node the scheduler picks, the ServiceAccount
    /// longtask-worker, no volumes but the work directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(
        validation = Rule::new("!has(self.volumes) || self.volumes.all(v, v.name != 'longtask' && v.name != 'longtask-bin')").message("spec.podTemplate.volumes: the names longtask and longtask-bin are reserved for the volumes longtask adds"),
        validation = Rule::new("!has(self.metadata) || !has(self.metadata.labels) || self.metadata.labels.all(k, !k.startsWith('longtask.dev/') && !k.startsWith('batch.kubernetes.io/') && k != 'job-name' && k != 'controller-uid')").message("spec.podTemplate.metadata.labels: keys under longtask.dev/ and batch.kubernetes.io/, job-name and controller-uid are set by longtask and the Job controller"),
        validation = Rule::new("!has(self.metadata) || !has(self.metadata.annotations) || self.metadata.annotations.all(k, !k.startsWith('longtask.dev/'))").message("spec.podTemplate.metadata.annotations: keys under longtask.dev/ are longtask's"),
        validation = Rule::new("!has(self.serviceAccountName) || self.serviceAccountName.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')").message("spec.podTemplate.serviceAccountName must be a ServiceAccount name: lowercase letters, digits, '-' and '.'")
    )]
    pub pod_template: Option<Box<PodTemplate>>,

    /// More arguments, appended after `command`. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 4096))]
    pub args: Vec<String>,

    /// Environment variables for the program (core/v1 EnvVar, so `valueFrom`
    /// ConfigMap and Secret references work). A name is 1 to 1024 printable
    /// ASCII characters other than '='; names starting with `LONGTASK_` are
    /// reserved. An entry gives `value` or `valueFrom` (one source), not
    /// both. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256), transform = crate::bounds::env)]
    #[x_kube(
        validation = Rule::new("self.all(e, !e.name.startsWith('LONGTASK_'))").message("spec.env: names starting with LONGTASK_ are reserved for longtask"),
        validation = crate::rules::env_names(),
        validation = crate::rules::env_value_or_value_from(),
        validation = crate::rules::env_one_source()
    )]
    pub env: Vec<EnvVar>,

    /// CPU and memory requests and limits of the program's container
    /// (core/v1 ResourceRequirements). The scheduler places the Task by its
    /// requests. Values are quantities of at least 0, such as 500m, 2 or
    /// 1.5Gi (at most 64 resources in each of requests and limits); a
    /// request may not exceed its limit, and an extended resource (e.g.
    /// example.com/gpu) needs a limit equal to its request. Default: none
    /// (best effort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::bounds::resources)]
    #[x_kube(
        validation = crate::rules::quantities("requests"),
        validation = crate::rules::quantities("limits"),
        validation = crate::rules::requests_within_limits()
    )]
    pub resources: Option<Box<ResourceRequirements>>,

    /// Longest the Task may run, in seconds, counted from the Job's start and
    /// across all retries; then it fails with reason DeadlineExceeded (the
    /// Job's activeDeadlineSeconds). At least 1. Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_seconds: Option<i64>,

    /// Longest the pod may take to start, in seconds, counted from the Job's
    /// creation: when the pod still cannot start by then (image cannot be
    /// pulled, no node fits its requests, a ConfigMap or Secret for env is
    /// missing) the Task fails with the Waiting reason (ImagePullFailed,
    /// Unschedulable, CreateContainerConfigError). With `after`, it also
    /// bounds the wait for an upstream that does not exist yet, counted
    /// from the Task's creation (then reason UpstreamMissing); it does not
    /// bound the wait for upstreams that exist and run. At least 1.
    /// Default: wait for ever (the Waiting condition shows why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub start_timeout_seconds: Option<i64>,

    /// How many times a failed run is retried in a new pod before the Task
    /// fails with reason BackoffLimitExceeded (the Job's backoffLimit).
    /// 0 to 10. Default: 0 (one attempt).
    #[serde(default)]
    #[schemars(range(min = 0, max = crate::bounds::MAX_RETRIES))]
    pub retries: i32,

    /// Exit codes of the program that fail the Task at once, without using
    /// a retry: for errors that running again cannot fix (bad input, a
    /// missing file). The Task then fails with reason FailOnExitCode, its
    /// message naming the exit code and this field; other non-zero exit
    /// codes are retried as `retries` allows. For a sharded Task the shard
    /// that exits so fails at once and the others run on. Each code 1 to
    /// 255 (128+N for a program killed by signal N), at most once; 0
    /// (success) is not allowed. A pod stopped by a disruption (preemption,
    /// eviction, node drain) never counts as failed, whatever its exit
    /// code. Default: none (every failure is retried).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    // A set: the API server refuses a code listed twice ("Duplicate value").
    #[schemars(length(max = 255), extend("x-kubernetes-list-type" = "set"))]
    #[x_kube(
        validation = Rule::new("self.all(c, c != 0)").message("spec.failOnExitCodes: 0 means success and cannot fail a Task: list non-zero exit codes"),
        validation = crate::rules::exit_codes_in_range()
    )]
    pub fail_on_exit_codes: Vec<i32>,

    /// Seconds after the Task finishes before its Job and pods are deleted
    /// (the Job's ttlSecondsAfterFinished); the Task keeps its result and
    /// status. At least 0. Default: the Job and pods stay until the Task is
    /// deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttl_seconds_after_finished: Option<i32>,

    /// Seconds after the Task finishes (Completed or Failed) before the
    /// Task itself is deleted, and with it its Job, pods and result
    /// ConfigMaps. At least 0. Default: the namespace annotation
    /// longtask.dev/delete-finished-after (seconds), else the operator's
    /// --delete-finished-after, else never (the Task stays until you delete
    /// it). See also the namespace annotation longtask.dev/keep-finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub delete_after_seconds: Option<i64>,

    /// Set to true to cancel the Task: its pod gets SIGTERM (passed on to
    /// the program, which may still write a partial result) and the Task
    /// ends Failed with reason Cancelled and whatever result was written.
    /// The only field that may change, and only from false to true. A Task
    /// whose program had already finished keeps its real outcome.
    /// Default: false.
    #[serde(default)]
    pub cancel: bool,

    /// Start order among Tasks waiting for a slot (see --max-active-tasks
    /// and the namespace annotation longtask.dev/max-active-tasks): higher
    /// first, then older first. Default: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,

    /// Split the work into this many shards, run as an Indexed Job: each
    /// shard's program sees $LONGTASK_SHARD (0-based) and $LONGTASK_SHARDS,
    /// writes its own result, and `spec.retries` applies per shard. The Task
    /// completes when every shard has. Each shard's pod takes the host name
    /// `<task name>-<index>`, so a sharded Task's name may hold only
    /// lowercase letters, digits and '-' (no '.'), and `<name>-<shards - 1>`
    /// must fit in 63 characters. 1 to 1000. Default: 1 (no sharding).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    #[schemars(range(min = 1, max = crate::bounds::MAX_SHARDS))]
    pub shards: i32,

    /// How many shards run at once; at most `shards`. Default: all of them
    /// (the scheduler still places them by their resource requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = crate::bounds::MAX_SHARDS))]
    pub parallelism: Option<i32>,

    /// Where the program's output files go (`$LONGTASK_OUTPUTS`): the
    /// output store, or `enabled: false` to opt out. Default: the
    /// namespace's store, if an `OutputStore` applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<crate::outputs::OutputsSpec>,

    /// Tasks (in this namespace) this Task waits for: it starts only once
    /// each has met its condition, and until then is Pending (condition
    /// Waiting, reason WaitingForUpstream, naming the upstream) with no
    /// Job, no pod and no Kueue Workload, so it holds no quota. An upstream
    /// that fails under condition Succeeded fails this Task at once
    /// (UpstreamFailed); one deleted while waited for fails it
    /// (UpstreamDeleted); Tasks that wait for each other in a cycle all
    /// fail (DependencyCycle). Once the Task has started, its upstreams are
    /// not looked at again. The program finds each upstream's result and
    /// exit code in the files `$LONGTASK_INPUTS/<name>/result` and
    /// `$LONGTASK_INPUTS/<name>/exit-code`. Each name at most once, at most
    /// 1000 entries. A sharded upstream is not supported yet (the Task
    /// fails with InvalidSpec). Default: none (start at once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = crate::after::MAX_UPSTREAMS),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub after: Vec<crate::after::Upstream>,
}

fn one() -> i32 {
    1
}

fn is_one(n: &i32) -> bool {
    *n == 1
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl Default for TaskSpec {
    /// No command (which the API refuses): a base for building specs.
    fn default() -> TaskSpec {
        TaskSpec {
            command: Vec::new(),
            image: None,
            image_pull_policy: None,
            volume_mounts: Vec::new(),
            working_dir: None,
            security_context: None,
            pod_template: None,
            args: Vec::new(),
            env: Vec::new(),
            resources: None,
            timeout_seconds: None,
            start_timeout_seconds: None,
            retries: 0,
            fail_on_exit_codes: Vec::new(),
            ttl_seconds_after_finished: None,
            delete_after_seconds: None,
            cancel: false,
            priority: 0,
            shards: 1,
            parallelism: None,
            outputs: None,
            after: Vec::new(),
        }
    }
}

impl TaskSpec {
    /// True when the Task runs as an Indexed Job of several shards.
    pub fn is_sharded(&self) -> bool {
        self.shards > 1
    }

    /// Shards running at once: `parallelism`, else all.
    pub fn shard_parallelism(&self) -> i32 {
        self.parallelism
            .unwrap_or(self.shards)
            .clamp(1, self.shards.max(1))
    }
}

/// Observed state of a Task, written by the operator only.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    // Documented on `Phase`: schemars takes the enum's doc for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,

    /// Name of the Job running this Task (equal to the Task's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,

    /// UID of the Job this Task created; a Job with another UID is never adopted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_uid: Option<String>,

    /// Name of the most recent pod of the Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,

    /// When the Job started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,

    /// When the Task reached Completed or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,

    /// Pods started so far (the first run plus retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i32>,

    /// Pods of this Task stopped by a disruption: preemption, eviction
    /// (the Eviction API, a node drain) or the node's shutdown, as their
    /// DisruptionTarget condition says. Each ran again in a new pod without
    /// using a retry and without counting as an attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruptions: Option<i32>,

    /// The newest disruption (see `disruptions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_disruption: Option<Disruption>,

    /// UIDs of the disrupted pods that still existed when the status was
    /// last written, so that each disruption is counted once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub disrupted_pods: Vec<String>,

    /// Exit code of the program's last run (128+N when killed by signal N).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,

    /// The program's result: what it wrote to the file $LONGTASK_RESULT, else
    /// the last 4 KiB of its stdout. At most 32 KiB here (see resultTruncated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,

    /// True when `result` was cut to 32 KiB; the whole result is in the
    /// ConfigMap `<task>-result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_truncated: Option<bool>,

    /// "sha256:<hex>" of the whole accepted result (as stored in the result
    /// ConfigMap), to check a copy against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_digest: Option<String>,

    /// The last lines (at most 64, at most 8 KiB) of the program's combined
    /// stdout and stderr, kept after the pod is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,

    /// Machine-readable reason for the current phase, e.g. DeadlineExceeded,
    /// BackoffLimitExceeded, ResultMissing, JobOwnedByOther.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,

    /// Human-readable explanation of `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// While the Task is Queued for a slot (reason QueueFull): its 1-based
    /// place among the Tasks waiting on the same cap. It moves only when a
    /// Task ahead starts, leaves, or is overtaken by a higher priority.
    /// Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub queue_position: Option<i32>,

    /// Sharded Tasks: how many shards succeeded, failed (retries exhausted)
    /// and run now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardCounts>,

    /// Sharded Tasks: each shard's result, in shard order, once the Job has
    /// finished. All results together hold at most 32 KiB here (see
    /// shardResultsTruncated); each whole result is in the ConfigMap
    /// `<task>-result-<shard>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub shard_results: Vec<ShardResult>,

    /// True when some shard results were cut to keep the status small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_results_truncated: Option<bool>,

    /// The upstreams (`spec.after`) this Task saw while it waited, with
    /// their UIDs: one gone or replaced later fails it (UpstreamDeleted),
    /// also across an operator restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::after::MAX_UPSTREAMS))]
    pub upstreams: Vec<crate::after::UpstreamSeen>,

    /// The metadata.generation this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Conditions Running, Waiting, Complete, Failed and Finished (True on
    /// either outcome), as for `kubectl wait --for=condition=TYPE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// The files the program left in $LONGTASK_OUTPUTS (and a result too
    /// large to keep inline), uploaded to the output store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<crate::outputs::OutputsStatus>,

    /// What the program last reported through the file $LONGTASK_PROGRESS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<TaskProgress>,
}

/// Progress as the program reports it: lines like `42`, `42 copying shard
/// 3/7` or `3/7 copying` written to the file $LONGTASK_PROGRESS. Updated at
/// most every 2 seconds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskProgress {
    /// Percent done, 0 to 100.
    pub percent: i32,
    /// The rest of the latest progress line, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The percent as shown by `kubectl get tasks`, e.g. "42%".
    pub display: String,
    /// When the worker read the latest progress line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Time>,
    /// Estimated time of completion, extrapolated from the first and the
    /// latest progress point of the current run; absent until two points
    /// with rising percent exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta: Option<Time>,
}

/// One pod stopped by a disruption.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Disruption {
    /// The pod's name.
    pub pod: String,
    /// The reason of its DisruptionTarget condition: EvictionByEvictionAPI,
    /// PreemptionByScheduler, DeletionByTaintManager, TerminationByKubelet,
    /// DeletionByPodGC.
    pub reason: String,
    /// The message of that condition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the condition was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Time>,
}

/// Shard counts of a sharded Task.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShardCounts {
    /// Shards whose program succeeded.
    pub succeeded: i32,
    /// Shards that failed on every attempt.
    pub failed: i32,
    /// Shards running now.
    pub active: i32,
}

/// One shard's result.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShardResult {
    /// The shard's index ($LONGTASK_SHARD).
    pub index: i32,
    /// Exit code of the shard's last run; absent when it left no result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What the shard's program returned (cut when the results together
    /// exceed 32 KiB).
    #[serde(default)]
    pub result: String,
    /// "sha256:<hex>" of the shard's whole accepted result (as stored in
    /// its ConfigMap), to check a copy against; absent when it left none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_digest: Option<String>,
}

/// Lifecycle phase: absent until the Task is looked at, Pending while it
/// waits for the Tasks of `spec.after`, Queued while it waits for a slot or
/// its Job is suspended, Running while its Job runs, and finally Completed
/// or Failed (see reason and message).
// The strings are the variant names, as serde writes them (a test checks
// that `as_str` agrees).
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    JsonSchema,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[strum(const_into_str)]
pub enum Phase {
    /// Waiting for the Tasks of `spec.after` (reason WaitingForUpstream,
    /// the message naming one it waits for): no Job, no pod, no quota.
    Pending,
    /// Waiting: for a slot (reason QueueFull, with its position), for
    /// Kueue's quota (reason QuotaPending, Admitted, Preempted or Evicted,
    /// with Kueue's message), or because someone else suspended its Job
    /// (reason Suspended).
    Queued,
    /// The Job exists and has not finished.
    Running,
    /// The program succeeded and its result was accepted.
    Completed,
    /// The Task ended without success; `reason` says why.
    Failed,
}

impl Phase {
    /// The phase as it appears in `status.phase`.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// Completed or Failed: the operator leaves such Tasks alone.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed)
    }
}

impl TaskStatus {
    /// `reason` as a [`Reason`]: `None` when absent or not in the vocabulary
    /// (a status this operator did not write).
    pub fn known_reason(&self) -> Option<Reason> {
        self.reason.as_deref().and_then(|r| r.parse().ok())
    }
}

impl Task {
    /// True once the Task reached Completed or Failed.
    pub fn is_terminal(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.phase)
            .is_some_and(Phase::is_terminal)
    }
}
