//! Condition types, phases and the reason vocabulary of a Task's status.
//!
//! The enums are the vocabulary; the string constant modules are views of
//! them for `match` patterns and for code that handles the strings (each
//! constant is its variant's `as_str()`). The strings are the variant names,
//! and what `kubectl wait --for=condition=...` and scripts rely on: renaming
//! a variant renames a public string (the tests in `tests/vocabulary.rs` pin
//! every one).

use strum::{Display, EnumIter, EnumString, IntoStaticStr};

/// `status.phase` values (absent means not started); see [`Phase`](crate::Phase).
pub mod phase {
    use crate::Phase;

    pub const PENDING: &str = Phase::Pending.as_str();
    pub const QUEUED: &str = Phase::Queued.as_str();
    pub const RUNNING: &str = Phase::Running.as_str();
    pub const COMPLETED: &str = Phase::Completed.as_str();
    pub const FAILED: &str = Phase::Failed.as_str();
}

/// `status.conditions[].type` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Display, EnumIter, EnumString, IntoStaticStr)]
#[strum(const_into_str)]
pub enum ConditionType {
    /// True while the Job runs.
    Running,
    /// True once the Task completed successfully (like batch/v1 Job `Complete`).
    Complete,
    /// True once the Task failed (like batch/v1 Job `Failed`).
    Failed,
    /// True on either outcome: `kubectl wait --for=condition=Finished`.
    Finished,
    /// True while the Task waits: for the Tasks of `spec.after`, a slot, a
    /// suspended Job, or a pod that cannot start (image, scheduling, config).
    Waiting,
}

impl ConditionType {
    /// The type as it appears in `status.conditions[].type`.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }
}

/// [`ConditionType`]s as strings.
pub mod types {
    use super::ConditionType;

    pub const RUNNING: &str = ConditionType::Running.as_str();
    pub const COMPLETE: &str = ConditionType::Complete.as_str();
    pub const FAILED: &str = ConditionType::Failed.as_str();
    pub const FINISHED: &str = ConditionType::Finished.as_str();
    pub const WAITING: &str = ConditionType::Waiting.as_str();
}

/// `status.reason` and condition reasons: every failure names one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Display, EnumIter, EnumString, IntoStaticStr)]
#[strum(const_into_str)]
pub enum Reason {
    /// The Job was created (or found) and runs.
    JobCreated,
    /// The Job's pod is running the program.
    Running,
    /// The program succeeded and its result was accepted.
    Succeeded,
    /// The Task has not finished yet.
    NotFinished,
    /// The pod is not waiting for anything.
    NotWaiting,
    /// `spec.timeoutSeconds` ran out (Job `DeadlineExceeded`).
    DeadlineExceeded,
    /// Every attempt failed (`spec.retries` exhausted).
    BackoffLimitExceeded,
    /// The program exited with a code listed in `spec.failOnExitCodes`: the
    /// Task failed at once, without using a retry.
    FailOnExitCode,
    /// The Job failed for another reason reported by the Job controller.
    JobFailed,
    /// The Job finished but no result from this Task's current Job exists.
    ResultMissing,
    /// The result was larger than a ConfigMap can hold.
    ResultTooLarge,
    /// The Task was cancelled (`spec.cancel`).
    Cancelled,
    /// The scheduler cannot place the pod.
    Unschedulable,
    /// The worker image, or the Task's `image`, cannot be pulled.
    ImagePullFailed,
    /// The container cannot be configured (e.g. a missing ConfigMap or
    /// Secret for env, or a user the image or the pod's settings refuse).
    CreateContainerConfigError,
    /// The API server refuses the Job's pod (e.g. the namespace's Pod
    /// Security level, a ResourceQuota, an admission policy); the message
    /// is the Job controller's.
    PodRefused,
    /// The node running the Task's pod stopped reporting: what the program
    /// does now is unknown. The Task waits, and no second copy starts,
    /// until the node returns or is removed (deleted, or tainted
    /// `node.kubernetes.io/out-of-service`); then the pod is collected and
    /// runs again on another node without using a retry.
    NodeUnreachable,
    /// A Job with the Task's name exists but belongs to another Task.
    JobOwnedByOther,
    /// The Task's Job disappeared or was replaced by a Job it did not create.
    JobLost,
    /// Too many Tasks are active (--max-active-tasks, or the namespace's
    /// longtask.dev/max-active-tasks annotation); the message gives the position.
    QueueFull,
    /// Someone else (e.g. Kueue) suspended the Task's Job; it runs once resumed.
    Suspended,
    /// Kueue holds the Task's Job: its Workload waits for quota in its
    /// ClusterQueue (the message is Kueue's, with the LocalQueue).
    QuotaPending,
    /// Kueue admitted the Task's Workload and is about to resume its Job.
    Admitted,
    /// Kueue preempted the Task's Workload for one of higher priority: the
    /// Job was suspended and waits for quota again (not an attempt).
    Preempted,
    /// Kueue evicted the Task's Workload for another reason (its message
    /// says which); the Job waits for quota again.
    Evicted,
    /// The spec is invalid in a way the CRD schema could not catch.
    InvalidSpec,
    /// The Task's output store does not exist, does not select the Task's
    /// namespace, or its credentials Secret is missing or incomplete: the
    /// Task fails before its program runs.
    OutputStoreUnavailable,
    /// The output store could not be reached within the worker's retries.
    OutputStoreUnreachable,
    /// The output store refused the upload's credentials or policy (wrong
    /// keys, an expired grant, a key outside the Task's prefix).
    OutputAccessDenied,
    /// The output store's bucket does not exist.
    OutputBucketMissing,
    /// An output file is larger than the store allows, or there are more
    /// files than it allows, or the store is out of space.
    OutputQuotaExceeded,
    /// An output file disappeared, or changed size or content, while it
    /// was uploaded: its object is not presented as complete.
    OutputChanged,
    /// An output file's name is not UTF-8, too long, or not a plain
    /// relative path; or it is neither a file nor a directory.
    OutputNameInvalid,
    /// Uploading an output failed for another reason (the message says which).
    OutputUploadFailed,
    /// The Task waits for a Task of `spec.after` to meet its condition
    /// (the message names it); it has no Job yet.
    WaitingForUpstream,
    /// A Task of `spec.after` with condition Succeeded failed (the message
    /// names it and why): this Task failed without running.
    UpstreamFailed,
    /// A Task of `spec.after` that this Task had seen was deleted (or
    /// deleted and created again) before this Task started.
    UpstreamDeleted,
    /// A Task of `spec.after` still did not exist `spec.startTimeoutSeconds`
    /// after this Task was created.
    UpstreamMissing,
    /// This Task waits, through `spec.after`, for itself: every Task of the
    /// cycle fails (the message names the cycle).
    DependencyCycle,
}

impl Reason {
    /// The reason as it appears in `status.reason` and condition reasons.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }
}

/// [`Reason`]s as strings.
pub mod reasons {
    use super::Reason;

    pub const JOB_CREATED: &str = Reason::JobCreated.as_str();
    pub const RUNNING: &str = Reason::Running.as_str();
    pub const SUCCEEDED: &str = Reason::Succeeded.as_str();
    pub const NOT_FINISHED: &str = Reason::NotFinished.as_str();
    pub const NOT_WAITING: &str = Reason::NotWaiting.as_str();
    pub const DEADLINE_EXCEEDED: &str = Reason::DeadlineExceeded.as_str();
    pub const BACKOFF_LIMIT_EXCEEDED: &str = Reason::BackoffLimitExceeded.as_str();
    pub const FAIL_ON_EXIT_CODE: &str = Reason::FailOnExitCode.as_str();
    pub const JOB_FAILED: &str = Reason::JobFailed.as_str();
    pub const RESULT_MISSING: &str = Reason::ResultMissing.as_str();
    pub const RESULT_TOO_LARGE: &str = Reason::ResultTooLarge.as_str();
    pub const CANCELLED: &str = Reason::Cancelled.as_str();
    pub const UNSCHEDULABLE: &str = Reason::Unschedulable.as_str();
    pub const IMAGE_PULL_FAILED: &str = Reason::ImagePullFailed.as_str();
    pub const CREATE_CONTAINER_CONFIG_ERROR: &str = Reason::CreateContainerConfigError.as_str();
    pub const POD_REFUSED: &str = Reason::PodRefused.as_str();
    pub const NODE_UNREACHABLE: &str = Reason::NodeUnreachable.as_str();
    pub const JOB_OWNED_BY_OTHER: &str = Reason::JobOwnedByOther.as_str();
    pub const JOB_LOST: &str = Reason::JobLost.as_str();
    pub const QUEUE_FULL: &str = Reason::QueueFull.as_str();
    pub const SUSPENDED: &str = Reason::Suspended.as_str();
    pub const QUOTA_PENDING: &str = Reason::QuotaPending.as_str();
    pub const ADMITTED: &str = Reason::Admitted.as_str();
    pub const PREEMPTED: &str = Reason::Preempted.as_str();
    pub const EVICTED: &str = Reason::Evicted.as_str();
    pub const INVALID_SPEC: &str = Reason::InvalidSpec.as_str();
    pub const OUTPUT_STORE_UNAVAILABLE: &str = Reason::OutputStoreUnavailable.as_str();
    pub const OUTPUT_STORE_UNREACHABLE: &str = Reason::OutputStoreUnreachable.as_str();
    pub const OUTPUT_ACCESS_DENIED: &str = Reason::OutputAccessDenied.as_str();
    pub const OUTPUT_BUCKET_MISSING: &str = Reason::OutputBucketMissing.as_str();
    pub const OUTPUT_QUOTA_EXCEEDED: &str = Reason::OutputQuotaExceeded.as_str();
    pub const OUTPUT_CHANGED: &str = Reason::OutputChanged.as_str();
    pub const OUTPUT_NAME_INVALID: &str = Reason::OutputNameInvalid.as_str();
    pub const OUTPUT_UPLOAD_FAILED: &str = Reason::OutputUploadFailed.as_str();
    pub const WAITING_FOR_UPSTREAM: &str = Reason::WaitingForUpstream.as_str();
    pub const UPSTREAM_FAILED: &str = Reason::UpstreamFailed.as_str();
    pub const UPSTREAM_DELETED: &str = Reason::UpstreamDeleted.as_str();
    pub const UPSTREAM_MISSING: &str = Reason::UpstreamMissing.as_str();
    pub const DEPENDENCY_CYCLE: &str = Reason::DependencyCycle.as_str();
}
