//! Test fixtures: Tasks, Jobs, pods and result ConfigMaps.

use std::collections::BTreeMap;

use crds::names::labels;
use crds::progress::{Point, Report};
use crds::result::TaskResult;
use crds::{Task, TaskSpec, TaskStatus};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::core::v1::{
    ConfigMap, ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    Pod, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;

use crate::status::{Observed, desired};

pub fn at(s: i64) -> Time {
    Time(Timestamp::from_second(s).unwrap())
}

pub fn task(status: Option<TaskStatus>) -> Task {
    let mut t = Task::new(
        "t",
        TaskSpec {
            command: vec!["sh".into()],
            args: vec![],
            env: vec![],
            resources: None,
            timeout_seconds: Some(2),
            retries: 1,
            ttl_seconds_after_finished: None,
            start_timeout_seconds: None,
            cancel: false,
            priority: 0,
            shards: 1,
            parallelism: None,
        },
    );
    t.metadata.uid = Some("tu".into());
    t.metadata.namespace = Some("ns".into());
    t.metadata.generation = Some(1);
    t.status = status;
    t
}

pub fn job(
    uid: &str,
    owner: Option<&str>,
    cond: Option<(&str, &str)>,
    succeeded: i32,
    failed: i32,
    active: i32,
) -> Job {
    Job {
        metadata: ObjectMeta {
            name: Some("t".into()),
            uid: Some(uid.into()),
            owner_references: owner.map(|o| {
                vec![OwnerReference {
                    api_version: "longtask.dev/v1alpha1".into(),
                    kind: "Task".into(),
                    name: "t".into(),
                    uid: o.into(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]
            }),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(JobStatus {
            start_time: Some(at(100)),
            completion_time: cond.filter(|c| c.0 == "Complete").map(|_| at(200)),
            succeeded: Some(succeeded),
            failed: Some(failed),
            active: Some(active),
            conditions: cond.map(|(t, r)| {
                vec![JobCondition {
                    type_: t.into(),
                    status: "True".into(),
                    reason: Some(r.into()),
                    message: Some("job message".into()),
                    last_transition_time: Some(at(210)),
                    ..JobCondition::default()
                }]
            }),
            ..JobStatus::default()
        }),
    }
}

pub fn cm(task_uid: &str, job_uid: &str, exit_code: i32, result: &str) -> ConfigMap {
    cm_bytes(task_uid, job_uid, exit_code, result.as_bytes())
}

/// A result ConfigMap as the worker writes it (plain, gzip or omitted).
pub fn cm_bytes(task_uid: &str, job_uid: &str, exit_code: i32, result: &[u8]) -> ConfigMap {
    let r = TaskResult {
        result: result.to_vec(),
        exit_code,
        finished_at: "2024-01-01T00:00:00Z".into(),
        message: String::new(),
        result_size: result.len(),
        log_tail: String::new(),
        omitted: false,
    };
    let stored = r.to_stored();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("t-result".into()),
            labels: Some(BTreeMap::from([
                (labels::TASK_UID.to_owned(), task_uid.to_owned()),
                (labels::JOB_UID.to_owned(), job_uid.to_owned()),
            ])),
            annotations: Some(BTreeMap::from([
                (
                    crds::names::annotations::WRITER_POD.to_owned(),
                    "t-abcde".to_owned(),
                ),
                (
                    crds::names::annotations::WRITER_POD_UID.to_owned(),
                    "pod-uid".to_owned(),
                ),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(stored.data),
        binary_data: Some(stored.binary_data).filter(|b| !b.is_empty()),
        ..ConfigMap::default()
    }
}

/// A result ConfigMap holding progress only (the run has not ended).
pub fn progress_cm(
    task_uid: &str,
    job_uid: &str,
    first: (u8, i64),
    latest: (u8, i64),
) -> ConfigMap {
    let point = |(percent, s): (u8, i64)| Point {
        percent,
        message: format!("step at {percent}"),
        at: at(s).0.to_string(),
    };
    let data = Report {
        first: point(first),
        latest: point(latest),
    }
    .to_data();
    ConfigMap {
        data: Some(data),
        ..cm(task_uid, job_uid, 0, "")
    }
}

pub fn pod(name: &str, created: i64, exit: Option<i32>, waiting: Option<&str>) -> Pod {
    let state = ContainerState {
        terminated: exit.map(|c| ContainerStateTerminated {
            exit_code: c,
            ..Default::default()
        }),
        waiting: waiting.map(|r| ContainerStateWaiting {
            reason: Some(r.into()),
            message: Some(format!("{r} happened")),
        }),
        ..ContainerState::default()
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            creation_timestamp: Some(at(created)),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(PodStatus {
            phase: Some(if exit.is_some() { "Failed" } else { "Pending" }.into()),
            container_statuses: Some(vec![ContainerStatus {
                name: "worker".into(),
                state: Some(state),
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        }),
    }
}

pub fn running() -> TaskStatus {
    desired(
        &task(None),
        &obs(Some(&job("j1", Some("tu"), None, 0, 0, 1)), None, &[]),
    )
    .status
}

pub fn obs<'a>(
    job: Option<&'a Job>,
    result: Option<&'a ConfigMap>,
    pods: &'a [Pod],
) -> Observed<'a> {
    Observed {
        job,
        result,
        refused: None,
        pods,
        shard_results: &[],
        now: at(500),
    }
}

pub fn cond<'a>(
    s: &'a TaskStatus,
    t: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    s.conditions.iter().find(|c| c.type_ == t)
}
