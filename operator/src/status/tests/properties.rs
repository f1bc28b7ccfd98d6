//! Property tests: arbitrary Tasks, Jobs, pods and result ConfigMaps (missing
//! fields, wrong values, invalid UTF-8, huge results) fed to the pure
//! functions. Properties: nothing panics; every terminal status names a
//! reason from the fixed vocabulary; status stays bounded; computing twice
//! gives the same answer, and a computed status is a fixed point.

use std::collections::BTreeMap;

use crds::conditions::{ConditionType, Reason};
use crds::names::labels;
use crds::result::{
    MAX_LOG_TAIL_BYTES, MAX_MESSAGE_BYTES, MAX_STATUS_RESULT_BYTES, encodings, gzip, keys,
};
use crds::{Phase, Task, TaskSpec, TaskStatus};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobSpec, JobStatus};
use k8s_openapi::api::core::v1::{
    ConfigMap, ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    EnvVar, Pod, PodCondition, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use strum::IntoEnumIterator;

use crate::fixtures::at;
use crate::job::build;
use crate::reconcile::validate;
use crate::status::observe;
use crate::status::{Desired, Observed, desired, invalid, needs_patch};

/// True when `reason` is one a status may carry.
fn in_vocabulary(reason: &str) -> bool {
    Reason::iter().any(|r| r.as_str() == reason)
}

/// A few UIDs, so that Task, Job, owner and labels match often enough.
fn uid() -> BoxedStrategy<String> {
    prop_oneof!["tu", "j1", "j2", "", ".{0,40}"]
        .prop_map(String::from)
        .boxed()
}

/// Names at and past the bounds, and odd ones.
fn name() -> BoxedStrategy<String> {
    prop_oneof![
        Just("t".to_owned()),
        "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
        "[a-z]{64,80}",
        ".{0,70}",
    ]
    .boxed()
}

/// Integers with the edges over-represented.
fn int32() -> impl Strategy<Value = i32> {
    prop_oneof![
        Just(i32::MIN),
        Just(-1),
        Just(0),
        Just(1),
        Just(10),
        Just(11),
        Just(1000),
        Just(1001),
        Just(i32::MAX),
        any::<i32>(),
    ]
}

fn int64() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(i64::MIN),
        Just(-1i64),
        Just(0i64),
        Just(1i64),
        Just(i64::MAX),
        any::<i64>(),
    ]
}

/// Text, sometimes huge (up to a few MB, built cheaply by repetition).
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => ".{0,40}",
        1 => (any::<char>(), 0usize..3_000_000).prop_map(|(c, n)| c.to_string().repeat(n)),
        1 => (".{0,3}", 30_000usize..40_000).prop_map(|(s, n)| format!("{s}{}", "é".repeat(n))),
    ]
    .boxed()
}

fn time() -> impl Strategy<Value = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time> {
    (0i64..1_000).prop_map(at)
}

fn spec() -> BoxedStrategy<TaskSpec> {
    (
        vec(".{0,20}", 0..3),
        vec(".{0,20}", 0..3),
        vec((".{0,12}", option::of(".{0,12}")), 0..3),
        option::of(btree_map("cpu|memory|.{0,8}", ".{0,10}", 0..3)),
        (option::of(int64()), option::of(int64()), int32()),
        (option::of(int32()), any::<bool>(), int32()),
        (
            prop_oneof![int32(), 0i32..20],
            option::of(prop_oneof![int32(), 0i32..20]),
        ),
    )
        .prop_map(
            |(
                command,
                args,
                env,
                res,
                (timeout, start, retries),
                (ttl, cancel, prio),
                (shards, par),
            )| {
                TaskSpec {
                    command,
                    args,
                    env: env
                        .into_iter()
                        .map(|(name, value)| EnvVar {
                            name,
                            value,
                            value_from: None,
                        })
                        .collect(),
                    resources: res.map(|m| {
                        Box::new(ResourceRequirements {
                            requests: Some(m.into_iter().map(|(k, v)| (k, Quantity(v))).collect()),
                            ..ResourceRequirements::default()
                        })
                    }),
                    timeout_seconds: timeout,
                    start_timeout_seconds: start,
                    retries,
                    ttl_seconds_after_finished: ttl,
                    cancel,
                    priority: prio,
                    shards,
                    parallelism: par,
                    ..TaskSpec::default()
                }
            },
        )
        .boxed()
}

fn phase() -> impl Strategy<Value = Option<Phase>> {
    option::of(prop::sample::select(Phase::iter().collect::<Vec<_>>()))
}

/// A recorded status: anything a previous operator version could have left.
fn prev_status() -> BoxedStrategy<Option<TaskStatus>> {
    option::of(
        (
            phase(),
            option::of(uid()),
            option::of(int32()),
            (option::of(time()), option::of(time())),
            // Reasons as an operator wrote them (a junk one is not carried: a
            // terminal status would be left without a reason).
            (
                option::of(".{0,20}"),
                option::of(
                    prop::sample::select(Reason::iter().collect::<Vec<_>>())
                        .prop_map(|r| r.as_str().to_owned()),
                ),
                option::of(int32()),
            ),
        )
            .prop_map(
                |(phase, job_uid, attempts, (started, done), (result, reason, exit))| TaskStatus {
                    phase,
                    job_uid,
                    attempts,
                    started_at: started,
                    completed_at: done,
                    result,
                    // A terminal status the operator wrote always had a reason.
                    reason: reason.or_else(|| {
                        phase
                            .filter(|p| p.is_terminal())
                            .map(|_| Reason::JobFailed.as_str().to_owned())
                    }),
                    exit_code: exit,
                    ..TaskStatus::default()
                },
            ),
    )
    .boxed()
}

fn task() -> BoxedStrategy<Task> {
    (
        option::of(name()),
        option::of(uid()),
        option::of(Just("ns".to_owned())),
        option::of(int64()),
        spec(),
        prev_status(),
    )
        .prop_map(|(name, uid, ns, generation, spec, status)| {
            let mut t = Task::new("t", spec);
            t.metadata.name = name;
            t.metadata.uid = uid;
            t.metadata.namespace = ns;
            t.metadata.generation = generation;
            t.status = status;
            t
        })
        .boxed()
}

fn job_condition() -> BoxedStrategy<JobCondition> {
    (
        prop_oneof![
            "Complete",
            "Failed",
            "Suspended",
            "FailureTarget",
            ".{0,10}"
        ],
        prop_oneof!["True", "False", "Unknown", ""],
        option::of(prop_oneof![
            "DeadlineExceeded",
            "BackoffLimitExceeded",
            ".{0,10}"
        ]),
        option::of(text()),
    )
        .prop_map(|(t, s, reason, message)| JobCondition {
            type_: t.to_owned(),
            status: s.to_owned(),
            reason,
            message,
            ..JobCondition::default()
        })
        .boxed()
}

fn job() -> BoxedStrategy<Job> {
    let status = (
        option::of(vec(job_condition(), 0..4)),
        (
            option::of(int32()),
            option::of(int32()),
            option::of(int32()),
        ),
        (option::of(time()), option::of(time())),
        (
            option::of("[0-9,-]{0,12}|.{0,8}"),
            option::of("[0-9,-]{0,12}"),
        ),
    )
        .prop_map(
            |(conditions, (succeeded, failed, active), (start, done), (ok, bad))| JobStatus {
                conditions,
                succeeded,
                failed,
                active,
                start_time: start,
                completion_time: done,
                completed_indexes: ok,
                failed_indexes: bad,
                ..JobStatus::default()
            },
        );
    (
        option::of(uid()),
        option::of((
            uid(),
            option::of(any::<bool>()),
            prop_oneof!["Task", ".{0,6}"],
        )),
        option::of(status),
        option::of(option::of(any::<bool>())),
    )
        .prop_map(|(uid, owner, status, suspend)| Job {
            metadata: ObjectMeta {
                name: Some("t".into()),
                uid,
                owner_references: owner.map(|(o, controller, kind)| {
                    vec![OwnerReference {
                        api_version: "longtask.dev/v1alpha1".into(),
                        kind,
                        name: "t".into(),
                        uid: o,
                        controller,
                        block_owner_deletion: None,
                    }]
                }),
                ..ObjectMeta::default()
            },
            spec: suspend.map(|s| JobSpec {
                suspend: s,
                ..JobSpec::default()
            }),
            status,
        })
        .boxed()
}

/// ConfigMap data: the real keys and others, values well-formed or not.
fn data() -> BoxedStrategy<BTreeMap<String, String>> {
    let key = prop_oneof![
        Just(keys::RESULT.to_owned()),
        Just(keys::EXIT_CODE.to_owned()),
        Just(keys::FINISHED_AT.to_owned()),
        Just(keys::MESSAGE.to_owned()),
        Just(keys::RESULT_SIZE.to_owned()),
        Just(keys::LOG_TAIL.to_owned()),
        Just(keys::RESULT_ENCODING.to_owned()),
        "progress|.{0,8}",
    ];
    let value = prop_oneof![
        "-?[0-9]{1,12}",
        Just(i32::MIN.to_string()),
        Just(u64::MAX.to_string()),
        " 0 |NaN|0x1|1e3|",
        Just(encodings::GZIP.to_owned()),
        Just(encodings::OMITTED.to_owned()),
        text(),
    ];
    btree_map(key, value, 0..9).boxed()
}

fn config_map() -> BoxedStrategy<ConfigMap> {
    (
        prop_oneof![
            Just("t-result".to_owned()),
            "t-result-[0-9]{1,2}",
            ".{0,10}"
        ],
        option::of(btree_map(
            prop_oneof![
                Just(labels::TASK_UID.to_owned()),
                Just(labels::JOB_UID.to_owned()),
                ".{0,8}"
            ],
            uid(),
            0..3,
        )),
        option::of(data()),
        option::of(btree_map(
            prop_oneof![Just(keys::RESULT_GZIP.to_owned()), ".{0,8}"],
            prop_oneof![
                vec(any::<u8>(), 0..64),
                text().prop_map(|t| gzip(t.as_bytes())),
                // Bombs: inflate past the 1 MiB limit.
                (1usize..5_000_000).prop_map(|n| gzip(&vec![0u8; n])),
            ],
            0..3,
        )),
    )
        .prop_map(|(name, labels, data, binary)| ConfigMap {
            metadata: ObjectMeta {
                name: Some(name),
                labels,
                ..ObjectMeta::default()
            },
            data,
            binary_data: binary.map(|b| b.into_iter().map(|(k, v)| (k, ByteString(v))).collect()),
            ..ConfigMap::default()
        })
        .boxed()
}

fn pod() -> BoxedStrategy<Pod> {
    let state = (
        option::of(int32()),
        option::of((option::of(".{0,24}"), option::of(text()))),
    )
        .prop_map(|(exit, waiting)| ContainerState {
            terminated: exit.map(|c| ContainerStateTerminated {
                exit_code: c,
                ..ContainerStateTerminated::default()
            }),
            waiting: waiting.map(|(r, m)| ContainerStateWaiting {
                reason: r.map(|r| match r.len() % 3 {
                    0 => "ErrImagePull".to_owned(),
                    1 => "CreateContainerConfigError".to_owned(),
                    _ => r,
                }),
                message: m,
            }),
            ..ContainerState::default()
        });
    (
        option::of(".{0,10}"),
        option::of(time()),
        option::of(prop_oneof![
            "Pending",
            "Running",
            "Succeeded",
            "Failed",
            ".{0,6}"
        ]),
        option::of(vec(
            (prop_oneof!["worker", ".{0,6}"], option::of(state)),
            0..3,
        )),
        any::<bool>(),
    )
        .prop_map(|(name, created, phase, statuses, unschedulable)| Pod {
            metadata: ObjectMeta {
                name,
                creation_timestamp: created,
                ..ObjectMeta::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase,
                conditions: unschedulable.then(|| {
                    vec![PodCondition {
                        type_: "PodScheduled".into(),
                        status: "False".into(),
                        reason: Some("Unschedulable".into()),
                        ..PodCondition::default()
                    }]
                }),
                container_statuses: statuses.map(|s| {
                    s.into_iter()
                        .map(|(name, state)| ContainerStatus {
                            name,
                            state,
                            ..ContainerStatus::default()
                        })
                        .collect()
                }),
                ..PodStatus::default()
            }),
        })
        .boxed()
}

/// The reconciler's decision for one Task: validate, then compute.
fn decide(task: &Task, obs: &Observed<'_>) -> Desired {
    match validate::validate(task) {
        Err(message) => invalid(task, message, obs.now.clone()),
        Ok(()) => desired(task, obs),
    }
}

fn check_status(s: &TaskStatus) -> Result<(), TestCaseError> {
    if let Some(p) = s.phase.filter(|p| p.is_terminal()) {
        let reason = s.reason.as_deref().unwrap_or_default();
        prop_assert!(
            in_vocabulary(reason),
            "terminal {p:?} with reason {reason:?}"
        );
        let outcome = if p == Phase::Completed {
            ConditionType::Complete
        } else {
            ConditionType::Failed
        };
        for t in [outcome, ConditionType::Finished] {
            prop_assert!(
                s.conditions
                    .iter()
                    .any(|c| c.type_ == t.as_str() && c.status == "True"),
                "terminal {p:?} without {t}=True: {:?}",
                s.conditions
            );
        }
    }
    if let Some(r) = &s.reason {
        prop_assert!(in_vocabulary(r), "reason {r:?}");
    }
    for c in &s.conditions {
        prop_assert!(
            in_vocabulary(&c.reason),
            "condition {} reason {:?}",
            c.type_,
            c.reason
        );
        prop_assert!(
            c.message.len() <= 2 * MAX_MESSAGE_BYTES,
            "condition message"
        );
    }
    let result = s.result.as_deref().unwrap_or_default().len();
    prop_assert!(result <= MAX_STATUS_RESULT_BYTES, "status.result {result}");
    let shards: usize = s.shard_results.iter().map(|r| r.result.len()).sum();
    prop_assert!(shards <= MAX_STATUS_RESULT_BYTES, "shardResults {shards}");
    let msg = s.message.as_deref().unwrap_or_default().len();
    prop_assert!(msg <= MAX_MESSAGE_BYTES, "status.message {msg}");
    let tail = s.log_tail.as_deref().unwrap_or_default().len();
    prop_assert!(tail <= MAX_LOG_TAIL_BYTES, "status.logTail {tail}");
    Ok(())
}

/// 64 cases (well under a second); `PROPTEST_CASES=N` for a deeper run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // Deterministic in CI: failures are reported, not persisted.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn status_is_bounded_named_and_idempotent(
        t in task(),
        j in option::of(job()),
        r in option::of(config_map()),
        pods in vec(pod(), 0..3),
        shard_cms in vec(config_map(), 0..3),
    ) {
        let obs = Observed {
            pod_refused: None,
            job: j.as_ref(),
            result: r.as_ref(),
            refused: None,
            pods: &pods,
            pods_live_only: false,
            departed: &[],
            shard_results: &shard_cms,
            kueue: None,
            outputs: None,
            now: at(500),
        };
        let first = decide(&t, &obs);
        check_status(&first.status)?;
        prop_assert_eq!(&decide(&t, &obs), &first, "computing twice differs");
        // Level-based: the computed status, once recorded, is kept.
        let mut again = t.clone();
        again.status = Some(first.status.clone());
        let second = decide(&again, &obs);
        check_status(&second.status)?;
        prop_assert!(
            !needs_patch(Some(&first.status), &second.status),
            "not a fixed point:\nfirst  {:?}\nsecond {:?}",
            first.status,
            second.status
        );
    }

    #[test]
    fn job_builds_or_says_why(t in task(), image in ".{0,30}") {
        let built = build::job(&t, &image);
        prop_assert_eq!(
            built.is_ok(),
            build::identity(&t).is_ok(),
            "build::job and build::identity disagree"
        );
        if let Ok(job) = built {
            prop_assert_eq!(&build::job(&t, &image).ok(), &Some(job.clone()), "not idempotent");
            prop_assert_eq!(&job.metadata.name, &t.metadata.name);
            let owner = job.metadata.owner_references.iter().flatten()
                .find(|o| o.controller == Some(true));
            prop_assert_eq!(owner.map(|o| o.uid.as_str()), t.metadata.uid.as_deref());
            prop_assert_eq!(observe::ownership(&job, t.metadata.uid.as_deref().unwrap_or_default()),
                observe::Ownership::Ours);
        }
    }

    #[test]
    fn observations_never_panic(
        j in job(),
        cm in option::of(config_map()),
        pods in vec(pod(), 0..4),
        code in option::of(int32()),
        task_uid in uid(),
        job_uid in uid(),
        job_reason in option::of(".{0,20}"),
    ) {
        let _ = observe::ownership(&j, &task_uid);
        let _ = observe::finish(&j);
        // A `Reason`: in the vocabulary by its type.
        let _ = observe::failure_reason(job_reason.as_deref(), code.is_some());
        match observe::accept_result(cm.as_ref(), &task_uid, &job_uid) {
            Ok(_) => {
                let c = cm.as_ref().and_then(|c| c.metadata.labels.as_ref());
                prop_assert_eq!(c.and_then(|l| l.get(labels::JOB_UID)), Some(&job_uid));
            }
            Err(why) => prop_assert!(!why.is_empty()),
        }
        if let Some(c) = &cm {
            let _ = observe::foreign(c, &task_uid, &job_uid);
        }
        let _ = observe::newest(&pods);
        prop_assert!(observe::live_pods(&pods) <= pods.len());
        for p in &pods {
            let _ = observe::exit_code(p);
            // A `Reason`, if any: in the vocabulary by its type.
            let _ = observe::waiting(p);
        }
        let _ = observe::last_exit_code(&pods);
        prop_assert!(!observe::describe_exit(code).is_empty());
    }
}
