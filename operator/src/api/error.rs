//! The API calls' errors: one variant per call, naming its object, with
//! the call's own failure (`CallError`) as its source.

use crate::api::call_error::CallError;

/// Failures of the API calls (`api`): one variant per call, naming its
/// object. The variant's name in snake_case is its `category()`, the label
/// of `longtask_reconcile_errors_total`.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum ApiError {
    #[error("cannot get Job {namespace}/{name}")]
    GetJob {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot create Job {namespace}/{name}")]
    CreateJob {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot suspend Job {namespace}/{name}")]
    SuspendJob {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot record on Job {namespace}/{name} how its Task ended")]
    MarkJobEnded {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot list the Kueue Workloads of Job {namespace}/{name}")]
    ListWorkloads {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot deactivate Kueue Workload {namespace}/{name}")]
    DeactivateWorkload {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot list the Jobs of {namespace} to count active Tasks")]
    ListJobs {
        namespace: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get namespace {name} for {why}")]
    GetNamespace {
        name: String,
        why: &'static str,
        #[source]
        source: CallError,
    },
    #[error("cannot get ServiceAccount {namespace}/{name}")]
    GetServiceAccount {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot list the pods of ServiceAccount {namespace}/{name}")]
    ListAccountPods {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot ask whether ServiceAccount {namespace}/{name} holds the worker role yet")]
    ReviewAccount {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot list the shard results of Task {namespace}/{name}")]
    ListResults {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot list pods of Job {namespace}/{name}")]
    ListPods {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get Task {namespace}/{name}")]
    GetTask {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get pod {namespace}/{name}")]
    GetPod {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get result ConfigMap {namespace}/{name}")]
    GetResult {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot apply ServiceAccount {namespace}/{name}")]
    ApplyServiceAccount {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot apply RoleBinding {namespace}/{name}")]
    ApplyRoleBinding {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot delete finished Task {namespace}/{name}")]
    DeleteTask {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot get the output store credentials Secret {namespace}/{name}")]
    GetCredentials {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot create the outputs Secret {namespace}/{name}")]
    CreateOutputsSecret {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot replace the data of the outputs Secret {namespace}/{name}")]
    PatchOutputsSecret {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot patch status of Task {namespace}/{name}")]
    PatchStatus {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
}

impl ApiError {
    /// The failed call's own error.
    fn call(&self) -> Option<&CallError> {
        CallError::within(self)
    }

    /// True for a 409 Conflict (e.g. a stale resourceVersion precondition).
    pub fn is_conflict(&self) -> bool {
        self.call().and_then(CallError::code) == Some(409)
    }

    /// The API server's message when it refused to create the Job for its
    /// content (see [`CallError::refusal`]): the Task's spec is invalid.
    pub fn job_refused(&self) -> Option<&str> {
        match self {
            Self::CreateJob { source, .. } => source.refusal(),
            _ => None,
        }
    }

    /// Short, bounded name of the failing call (a metric label).
    pub fn category(&self) -> &'static str {
        self.into()
    }
}
