//! Condition types, phases and the reason vocabulary of a Task's status.

/// `status.phase` values (absent means not started).
pub mod phase {
    /// Waiting for a slot, or the Job is suspended by someone else.
    pub const QUEUED: &str = "Queued";
    /// The Job exists and has not finished.
    pub const RUNNING: &str = "Running";
    /// The Job succeeded and its result was accepted.
    pub const COMPLETED: &str = "Completed";
    /// The Task ended without success; `status.reason` says why.
    pub const FAILED: &str = "Failed";
}

/// `status.conditions[].type` values.
pub mod types {
    /// True while the Job runs.
    pub const RUNNING: &str = "Running";
    /// True once the Task completed successfully (like batch/v1 Job `Complete`).
    pub const COMPLETE: &str = "Complete";
    /// True once the Task failed (like batch/v1 Job `Failed`).
    pub const FAILED: &str = "Failed";
    /// True on either outcome: `kubectl wait --for=condition=Finished`.
    pub const FINISHED: &str = "Finished";
    /// True while the Task waits: for a slot, a suspended Job, or a pod that
    /// cannot start (image, scheduling, config).
    pub const WAITING: &str = "Waiting";
}

/// `status.reason` and condition reasons: every failure names one of these.
pub mod reasons {
    /// The Job was created (or found) and runs.
    pub const JOB_CREATED: &str = "JobCreated";
    /// The Job's pod is running the program.
    pub const RUNNING: &str = "Running";
    /// The program succeeded and its result was accepted.
    pub const SUCCEEDED: &str = "Succeeded";
    /// The Task has not finished yet.
    pub const NOT_FINISHED: &str = "NotFinished";
    /// The pod is not waiting for anything.
    pub const NOT_WAITING: &str = "NotWaiting";
    /// `spec.timeoutSeconds` ran out (Job `DeadlineExceeded`).
    pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
    /// Every attempt failed (`spec.retries` exhausted).
    pub const BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
    /// The Job failed for another reason reported by the Job controller.
    pub const JOB_FAILED: &str = "JobFailed";
    /// The Job finished but no result from this Task's current Job exists.
    pub const RESULT_MISSING: &str = "ResultMissing";
    /// The result was larger than a ConfigMap can hold.
    pub const RESULT_TOO_LARGE: &str = "ResultTooLarge";
    /// The Task was cancelled (`spec.cancel`).
    pub const CANCELLED: &str = "Cancelled";
    /// The scheduler cannot place the pod.
    pub const UNSCHEDULABLE: &str = "Unschedulable";
    /// The worker image cannot be pulled.
    pub const IMAGE_PULL_FAILED: &str = "ImagePullFailed";
    /// The container cannot be configured (e.g. a missing ConfigMap or Secret for env).
    pub const CREATE_CONTAINER_CONFIG_ERROR: &str = "CreateContainerConfigError";
    /// A Job with the Task's name exists but belongs to another Task.
    pub const JOB_OWNED_BY_OTHER: &str = "JobOwnedByOther";
    /// The Task's Job disappeared or was replaced by a Job it did not create.
    pub const JOB_LOST: &str = "JobLost";
    /// Too many Tasks are active (--max-active-tasks, or the namespace's
    /// longtask.dev/max-active-tasks annotation); the message gives the position.
    pub const QUEUE_FULL: &str = "QueueFull";
    /// Someone else (e.g. Kueue) suspended the Task's Job; it runs once resumed.
    pub const SUSPENDED: &str = "Suspended";
    /// The spec is invalid in a way the CRD schema could not catch.
    pub const INVALID_SPEC: &str = "InvalidSpec";
}
