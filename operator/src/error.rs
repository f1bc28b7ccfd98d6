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

    /// The API server's message when it refused the request for what it
    /// carries, so that sending it again cannot succeed: 400 BadRequest (it
    /// cannot decode it, e.g. a quantity such as "lots"), 413 (too large),
    /// 422 Invalid (validation failed). Never 403: RBAC, a quota or a
    /// terminating namespace say Forbidden, and they change without the
    /// request changing; nor 404 (a namespace gone), 409, 429 or 5xx.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            Self::Kube(kube::Error::Api(s)) if matches!(s.code, 400 | 413 | 422) => {
                Some(&s.message)
            }
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

    /// The API server's message when it refused to create the Job for its
    /// content (see [`CallError::refusal`]): the Task's spec is invalid.
    pub fn job_refused(&self) -> Option<&str> {
        match self {
            Self::CreateJob { source, .. } => source.refusal(),
            _ => None,
        }
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
        match self {
            Self::Build(_) => true,
            // Normally a status (InvalidSpec) instead of an error; never retried.
            Self::Apply(e) => e.job_refused().is_some(),
            Self::QueueNotReady => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str) -> CallError {
        CallError::Kube(kube::Error::Api(
            kube::core::Status::failure("the server says why", reason)
                .with_code(code)
                .boxed(),
        ))
    }

    fn create(source: CallError) -> ApplyError {
        ApplyError::CreateJob {
            namespace: "ns".into(),
            name: "t".into(),
            source,
        }
    }

    #[test]
    fn refusals_are_what_the_request_carries() {
        let cases = [
            (api(422, "Invalid"), true),
            (api(400, "BadRequest"), true),
            (api(413, "RequestEntityTooLarge"), true),
            // RBAC, quota, a terminating namespace: they change on their own.
            (api(403, "Forbidden"), false),
            (api(404, "NotFound"), false),
            (api(409, "AlreadyExists"), false),
            (api(409, "Conflict"), false),
            (api(429, "TooManyRequests"), false),
            (api(500, "InternalError"), false),
            (api(503, "ServiceUnavailable"), false),
            (api(504, "Timeout"), false),
            (CallError::Timeout(Duration::from_secs(1)), false),
        ];
        for (e, want) in cases {
            let code = e.code();
            assert_eq!(e.refusal().is_some(), want, "{code:?}: {e}");
            let err = Error::Apply(create(e));
            assert_eq!(err.waits_for_change(), want, "{code:?}");
        }
        assert_eq!(
            create(api(422, "Invalid")).job_refused(),
            Some("the server says why")
        );
    }

    #[test]
    fn only_a_job_create_is_a_spec_refusal() {
        let e = ApplyError::PatchStatus {
            namespace: "ns".into(),
            name: "t".into(),
            source: api(422, "Invalid"),
        };
        assert_eq!(e.job_refused(), None);
        assert!(!Error::Apply(e).waits_for_change());
    }
}
