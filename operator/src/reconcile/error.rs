//! Everything a reconcile can fail with: the failing step's own error.

use crate::api::error::ApiError;
use crate::job::identity::IdentityError;

/// Everything a reconcile can fail with.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Error {
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The Task lacks a name, namespace or UID: not a Task as the API
    /// server stores it. The message says which.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    #[error("the Task cache is not ready yet; cannot place the Task in the queue")]
    QueueNotReady,
    #[error("the OutputStore cache is not ready yet; cannot tell which store the Task uses")]
    StoresNotReady,
}

impl Error {
    /// Short, bounded error category (a metric label).
    pub fn category(&self) -> &'static str {
        match self {
            Self::Api(e) => e.category(),
            other => other.into(),
        }
    }

    /// True when retrying cannot help until the object changes.
    pub fn waits_for_change(&self) -> bool {
        match self {
            Self::Identity(_) => true,
            // Normally a status (InvalidSpec) instead of an error; never retried.
            Self::Api(e) => e.job_refused().is_some(),
            Self::QueueNotReady | Self::StoresNotReady => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::api::call_error::{CallError, Chain};
    use crate::fixtures::TaskFixture;
    use crate::job::identity::identity;

    fn api(code: u16, reason: &str) -> CallError {
        CallError::Kube(kube::Error::Api(
            kube::core::Status::failure("the server says why", reason)
                .with_code(code)
                .boxed(),
        ))
    }

    fn create(source: CallError) -> ApiError {
        ApiError::CreateJob {
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
            let err = Error::Api(create(e));
            assert_eq!(err.waits_for_change(), want, "{code:?}");
        }
        assert_eq!(
            create(api(422, "Invalid")).job_refused(),
            Some("the server says why")
        );
    }

    #[test]
    fn only_a_job_create_is_a_spec_refusal() {
        let e = ApiError::PatchStatus {
            namespace: "ns".into(),
            name: "t".into(),
            source: api(422, "Invalid"),
        };
        assert_eq!(e.job_refused(), None);
        assert!(!Error::Api(e).waits_for_change());
    }

    /// A Task without a UID is no Job the builder failed: the error says
    /// what the Task lacks, has a category of its own, and waits for a
    /// change.
    #[test]
    fn a_task_without_uid_is_named_as_such() {
        let task = crds::Task::test().without_uid();
        let err = Error::from(identity(&task).err().expect("no identity"));
        assert_eq!(
            Chain(&err).to_string(),
            "Task has no metadata.uid (not read from the API server?)"
        );
        assert_eq!(err.category(), "identity");
        assert!(err.waits_for_change());
    }
}
