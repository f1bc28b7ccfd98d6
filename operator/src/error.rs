//! Errors of the reconciler: one enum per module, one variant per failing
//! operation, each naming the object it was about.

use std::time::Duration;

/// Why one API call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The API server answered with an error, or the connection failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// No answer within the per-call timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

impl CallError {
    /// HTTP status of an API error, if any.
    pub fn code(&self) -> Option<u16> {
        match self {
            Self::Kube(kube::Error::Api(s)) => Some(s.code),
            _ => None,
        }
    }
}

/// Failures of the API calls in `apply.rs`.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("cannot get Job {namespace}/{name}: {source}")]
    GetJob {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot create Job {namespace}/{name}: {source}")]
    CreateJob {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot suspend Job {namespace}/{name}: {source}")]
    SuspendJob {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot list the Jobs of {namespace} to count active Tasks: {source}")]
    ListJobs {
        namespace: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get namespace {name} for its Task limit: {source}")]
    GetNamespace {
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot list the shard results of Task {namespace}/{name}: {source}")]
    ListResults {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot list pods of Job {namespace}/{name}: {source}")]
    ListPods {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get Task {namespace}/{name}: {source}")]
    GetTask {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get pod {namespace}/{name}: {source}")]
    GetPod {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get result ConfigMap {namespace}/{name}: {source}")]
    GetResult {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot apply ServiceAccount {namespace}/{name}: {source}")]
    ApplyServiceAccount {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot apply RoleBinding {namespace}/{name}: {source}")]
    ApplyRoleBinding {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot patch status of Task {namespace}/{name}: {source}")]
    PatchStatus {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
}

impl ApplyError {
    /// True for a 409 Conflict (e.g. a stale resourceVersion precondition).
    pub fn is_conflict(&self) -> bool {
        let source = match self {
            Self::GetJob { source, .. }
            | Self::CreateJob { source, .. }
            | Self::SuspendJob { source, .. }
            | Self::ListPods { source, .. }
            | Self::ListJobs { source, .. }
            | Self::GetNamespace { source, .. }
            | Self::ListResults { source, .. }
            | Self::GetResult { source, .. }
            | Self::GetPod { source, .. }
            | Self::GetTask { source, .. }
            | Self::ApplyServiceAccount { source, .. }
            | Self::ApplyRoleBinding { source, .. }
            | Self::PatchStatus { source, .. } => source,
        };
        source.code() == Some(409)
    }

    /// Short, bounded name of the failing operation (a metric label).
    pub fn category(&self) -> &'static str {
        match self {
            Self::GetJob { .. } => "get_job",
            Self::CreateJob { .. } => "create_job",
            Self::SuspendJob { .. } => "suspend_job",
            Self::ListPods { .. } => "list_pods",
            Self::ListJobs { .. } => "list_jobs",
            Self::GetNamespace { .. } => "get_namespace",
            Self::ListResults { .. } => "list_results",
            Self::GetResult { .. } => "get_result",
            Self::GetPod { .. } => "get_pod",
            Self::GetTask { .. } => "get_task",
            Self::ApplyServiceAccount { .. } => "apply_service_account",
            Self::ApplyRoleBinding { .. } => "apply_role_binding",
            Self::PatchStatus { .. } => "patch_status",
        }
    }
}

/// Failures of the pure Job builder in `build.rs`.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("Task has no metadata.{0} (not read from the API server?)")]
    MissingMetadata(&'static str),
}

/// Everything a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error("cannot build the Job: {0}")]
    Build(#[from] BuildError),
    #[error("the Task cache is not ready yet; cannot place the Task in the queue")]
    QueueNotReady,
}

impl Error {
    /// Short, bounded error category (a metric label).
    pub fn category(&self) -> &'static str {
        match self {
            Self::Apply(e) => e.category(),
            Self::Build(_) => "build",
            Self::QueueNotReady => "queue_not_ready",
        }
    }

    /// True when retrying cannot help until the object changes.
    pub fn waits_for_change(&self) -> bool {
        matches!(self, Self::Build(_))
    }
}
