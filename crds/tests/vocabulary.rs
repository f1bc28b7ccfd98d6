//! The strings of the vocabulary are public: Events, `kubectl wait
//! --for=condition=...`, scripts and the docs use them. The enums derive
//! them from their variant names; these tests pin every one, and check that
//! each way of turning a variant into a string (and back) agrees.

use crds::conditions::{ConditionType, Reason, phase, reasons, types};
use crds::{Phase, TaskStatus};
use strum::IntoEnumIterator;

#[test]
fn reasons_keep_their_strings() {
    let all: Vec<&str> = Reason::iter().map(Reason::as_str).collect();
    assert_eq!(
        all,
        [
            "JobCreated",
            "Running",
            "Succeeded",
            "NotFinished",
            "NotWaiting",
            "DeadlineExceeded",
            "BackoffLimitExceeded",
            "FailOnExitCode",
            "JobFailed",
            "ResultMissing",
            "ResultTooLarge",
            "Cancelled",
            "Unschedulable",
            "ImagePullFailed",
            "CreateContainerConfigError",
            "PodRefused",
            "NodeUnreachable",
            "JobOwnedByOther",
            "JobLost",
            "QueueFull",
            "Suspended",
            "QuotaPending",
            "Admitted",
            "Preempted",
            "Evicted",
            "InvalidSpec",
            "OutputStoreUnavailable",
            "OutputStoreUnreachable",
            "OutputAccessDenied",
            "OutputBucketMissing",
            "OutputQuotaExceeded",
            "OutputChanged",
            "OutputNameInvalid",
            "OutputUploadFailed",
            "WaitingForUpstream",
            "UpstreamFailed",
            "UpstreamDeleted",
            "UpstreamMissing",
            "DependencyCycle",
        ]
    );
    for r in Reason::iter() {
        assert_eq!(r.to_string(), r.as_str());
        assert_eq!(<&str>::from(r), r.as_str());
        assert_eq!(r.as_str().parse::<Reason>(), Ok(r));
    }
    assert!("jobLost".parse::<Reason>().is_err(), "parsing is exact");
}

#[test]
fn condition_types_keep_their_strings() {
    let all: Vec<&str> = ConditionType::iter().map(ConditionType::as_str).collect();
    assert_eq!(
        all,
        ["Running", "Complete", "Failed", "Finished", "Waiting"]
    );
    for t in ConditionType::iter() {
        assert_eq!(t.to_string(), t.as_str());
        assert_eq!(<&str>::from(t), t.as_str());
        assert_eq!(t.as_str().parse::<ConditionType>(), Ok(t));
    }
}

#[test]
fn phases_are_written_as_serde_writes_them() {
    let all: Vec<&str> = Phase::iter().map(Phase::as_str).collect();
    assert_eq!(all, ["Pending", "Queued", "Running", "Completed", "Failed"]);
    for p in Phase::iter() {
        assert_eq!(serde_json::to_value(p).ok(), Some(p.as_str().into()));
    }
}

#[test]
fn the_constants_are_the_variants() {
    assert_eq!(
        [
            reasons::JOB_CREATED,
            reasons::RUNNING,
            reasons::SUCCEEDED,
            reasons::NOT_FINISHED,
            reasons::NOT_WAITING,
            reasons::DEADLINE_EXCEEDED,
            reasons::BACKOFF_LIMIT_EXCEEDED,
            reasons::FAIL_ON_EXIT_CODE,
            reasons::JOB_FAILED,
            reasons::RESULT_MISSING,
            reasons::RESULT_TOO_LARGE,
            reasons::CANCELLED,
            reasons::UNSCHEDULABLE,
            reasons::IMAGE_PULL_FAILED,
            reasons::CREATE_CONTAINER_CONFIG_ERROR,
            reasons::POD_REFUSED,
            reasons::NODE_UNREACHABLE,
            reasons::JOB_OWNED_BY_OTHER,
            reasons::JOB_LOST,
            reasons::QUEUE_FULL,
            reasons::SUSPENDED,
            reasons::QUOTA_PENDING,
            reasons::ADMITTED,
            reasons::PREEMPTED,
            reasons::EVICTED,
            reasons::INVALID_SPEC,
            reasons::OUTPUT_STORE_UNAVAILABLE,
            reasons::OUTPUT_STORE_UNREACHABLE,
            reasons::OUTPUT_ACCESS_DENIED,
            reasons::OUTPUT_BUCKET_MISSING,
            reasons::OUTPUT_QUOTA_EXCEEDED,
            reasons::OUTPUT_CHANGED,
            reasons::OUTPUT_NAME_INVALID,
            reasons::OUTPUT_UPLOAD_FAILED,
            reasons::WAITING_FOR_UPSTREAM,
            reasons::UPSTREAM_FAILED,
            reasons::UPSTREAM_DELETED,
            reasons::UPSTREAM_MISSING,
            reasons::DEPENDENCY_CYCLE,
        ]
        .to_vec(),
        Reason::iter().map(Reason::as_str).collect::<Vec<_>>()
    );
    assert_eq!(
        [
            types::RUNNING,
            types::COMPLETE,
            types::FAILED,
            types::FINISHED,
            types::WAITING
        ]
        .to_vec(),
        ConditionType::iter()
            .map(ConditionType::as_str)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        [
            phase::PENDING,
            phase::QUEUED,
            phase::RUNNING,
            phase::COMPLETED,
            phase::FAILED
        ]
        .to_vec(),
        Phase::iter().map(Phase::as_str).collect::<Vec<_>>()
    );
}

#[test]
fn a_status_reason_is_known_only_from_the_vocabulary() {
    let with = |r: Option<&str>| TaskStatus {
        reason: r.map(str::to_owned),
        ..TaskStatus::default()
    };
    assert_eq!(
        with(Some("JobOwnedByOther")).known_reason(),
        Some(Reason::JobOwnedByOther)
    );
    assert_eq!(with(Some("EditedByHand")).known_reason(), None);
    assert_eq!(with(None).known_reason(), None);
}
