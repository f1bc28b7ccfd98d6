//! Pure: the shape of a Task's Job — one pod, or an Indexed Job of shards —
//! the shard environment, and the labels copied for admission systems.

use std::collections::BTreeMap;

use crds::names::{self, annotations, env, labels};
use crds::{Task, TaskSpec};
use k8s_openapi::api::batch::v1::{
    JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector};

/// Completions, parallelism and retries (the template is filled in by the caller).
pub fn job_spec(spec: &TaskSpec) -> JobSpec {
    // A replacement pod starts only once the failed one is gone, so two runs
    // of the program never overlap because of a retry (and
    // backoffLimitPerIndex requires this policy).
    let pod_replacement_policy = Some("Failed".to_owned());
    if !spec.is_sharded() {
        return JobSpec {
            backoff_limit: Some(spec.retries),
            completions: Some(1),
            parallelism: Some(1),
            pod_replacement_policy,
            pod_failure_policy: Some(pod_failure_policy(spec)),
            ..JobSpec::default()
        };
    }
    JobSpec {
        completion_mode: Some("Indexed".to_owned()),
        completions: Some(spec.shards),
        parallelism: Some(spec.shard_parallelism()),
        // Retries count per shard: a shard that runs out fails alone, the
        // others carry on, and the Job then fails with FailedIndexes.
        backoff_limit_per_index: Some(spec.retries),
        pod_replacement_policy,
        pod_failure_policy: Some(pod_failure_policy(spec)),
        ..JobSpec::default()
    }
}

/// The Job's podFailurePolicy: first, a pod stopped by a disruption
/// (preemption, eviction, node drain: condition DisruptionTarget) is
/// ignored, so it runs again without using a retry; then an exit code of
/// the worker container listed in `spec.failOnExitCodes` fails the Job (a
/// sharded Task's index) at once. Everything else counts against the retries.
pub fn pod_failure_policy(spec: &TaskSpec) -> PodFailurePolicy {
    let mut rules = vec![PodFailurePolicyRule {
        action: "Ignore".to_owned(),
        on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
            type_: "DisruptionTarget".to_owned(),
            status: Some("True".to_owned()),
        }]),
        on_exit_codes: None,
    }];
    if !spec.fail_on_exit_codes.is_empty() {
        // The Job API wants the values sorted and unique.
        let mut codes = spec.fail_on_exit_codes.clone();
        codes.sort_unstable();
        codes.dedup();
        let action = if spec.is_sharded() {
            "FailIndex"
        } else {
            "FailJob"
        };
        rules.push(PodFailurePolicyRule {
            action: action.to_owned(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: Some(names::WORKER_CONTAINER.to_owned()),
                operator: "In".to_owned(),
                values: codes,
            }),
            on_pod_conditions: None,
        });
    }
    PodFailurePolicy { rules }
}

/// The Task's link labels plus its `kueue.x-k8s.io/` labels (queue name,
/// priority class), so that Kueue can admit the Job.
pub fn job_labels(task: &Task, link: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = link.clone();
    for (k, v) in task.metadata.labels.iter().flatten() {
        if k.starts_with(labels::KUEUE_PREFIX) {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// The Task's Kueue annotations (`kueue.x-k8s.io/`, `provreq.kueue.x-k8s.io/`,
/// e.g. `kueue.x-k8s.io/job-min-parallelism`), which Kueue reads from the Job;
/// `None` when it has none.
pub fn job_annotations(task: &Task) -> Option<BTreeMap<String, String>> {
    let out: BTreeMap<String, String> = task
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| {
            k.starts_with(annotations::KUEUE_PREFIX)
                || k.starts_with(annotations::KUEUE_PROVREQ_PREFIX)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!out.is_empty()).then_some(out)
}

/// `LONGTASK_SHARD` (the completion index through the downward API, or "0")
/// and `LONGTASK_SHARDS`.
pub fn shard_env(shards: i32) -> Vec<EnvVar> {
    let plain = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value: Some(value),
        ..EnvVar::default()
    };
    let index = if shards > 1 {
        EnvVar {
            name: env::SHARD.to_owned(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!(
                        "metadata.annotations['{}']",
                        annotations::JOB_COMPLETION_INDEX
                    ),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }
    } else {
        plain(env::SHARD, "0".to_owned())
    };
    vec![index, plain(env::SHARDS, shards.to_string())]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::TaskFixture;
    use crate::job::build;

    #[test]
    fn plain_task_is_one_pod() {
        let s = build::job(&Task::test(), "w").unwrap().spec.unwrap();
        assert_eq!(
            (s.completions, s.parallelism, s.backoff_limit),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(s.completion_mode, None);
        assert_eq!(s.backoff_limit_per_index, None);
    }

    #[test]
    fn sharded_task_is_an_indexed_job() {
        let t = Task::test().sharded(12).parallelism(4);
        let s = build::job(&t, "w").unwrap().spec.unwrap();
        assert_eq!(s.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((s.completions, s.parallelism), (Some(12), Some(4)));
        assert_eq!(
            (s.backoff_limit_per_index, s.backoff_limit),
            (Some(1), None)
        );
        assert_eq!(s.pod_replacement_policy.as_deref(), Some("Failed"));
        let env = s.template.spec.unwrap().containers[0].env.clone().unwrap();
        let shard = env.iter().find(|e| e.name == env::SHARD).unwrap();
        let path = &shard
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path;
        assert_eq!(
            path,
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
        let shards = env.iter().find(|e| e.name == env::SHARDS).unwrap();
        assert_eq!(shards.value.as_deref(), Some("12"));
        let t = Task::test().sharded(12);
        let s = build::job(&t, "w").unwrap().spec.unwrap();
        assert_eq!(s.parallelism, Some(12));
    }

    /// (task, rules as (action, what they match)).
    #[test]
    fn failure_policy_table() {
        let ignore = ("Ignore", "DisruptionTarget=True".to_owned());
        let cases: Vec<(Task, Vec<(&str, String)>)> = vec![
            (Task::test(), vec![ignore.clone()]),
            (
                Task::test().fail_on(&[78, 2, 64]),
                vec![
                    ignore.clone(),
                    ("FailJob", "worker In [2, 64, 78]".to_owned()),
                ],
            ),
            (
                Task::test().sharded(3).fail_on(&[5]),
                vec![ignore.clone(), ("FailIndex", "worker In [5]".to_owned())],
            ),
            (Task::test().sharded(3), vec![ignore.clone()]),
        ];
        for (i, (task, want)) in cases.into_iter().enumerate() {
            let s = build::job(&task, "w").unwrap().spec.unwrap();
            let got: Vec<(&str, String)> = s
                .pod_failure_policy
                .as_ref()
                .unwrap()
                .rules
                .iter()
                .map(|r| {
                    let what = match (&r.on_pod_conditions, &r.on_exit_codes) {
                        (Some(c), None) => c
                            .iter()
                            .map(|p| format!("{}={}", p.type_, p.status.as_deref().unwrap_or("")))
                            .collect::<Vec<_>>()
                            .join(","),
                        (None, Some(e)) => format!(
                            "{} {} {:?}",
                            e.container_name.as_deref().unwrap_or("*"),
                            e.operator,
                            e.values
                        ),
                        _ => "both or neither".to_owned(),
                    };
                    (r.action.as_str(), what)
                })
                .collect();
            assert_eq!(got, want, "case {i}");
            // podFailurePolicy needs these; the Job API refuses it otherwise.
            assert_eq!(
                s.pod_replacement_policy.as_deref(),
                Some("Failed"),
                "case {i}"
            );
            let pod = s.template.spec.unwrap();
            assert_eq!(pod.restart_policy.as_deref(), Some("Never"), "case {i}");
            assert_eq!(pod.containers[0].name, names::WORKER_CONTAINER, "case {i}");
        }
    }

    #[test]
    fn kueue_labels_reach_the_job() {
        let t = Task::test()
            .labelled("kueue.x-k8s.io/queue-name", "team-a")
            .labelled("app", "x");
        let l = build::job(&t, "w").unwrap().metadata.labels.unwrap();
        assert_eq!(
            l.get("kueue.x-k8s.io/queue-name").map(String::as_str),
            Some("team-a")
        );
        assert!(!l.contains_key("app"));
        assert!(l.contains_key(labels::TASK_UID));
    }

    #[test]
    fn kueue_annotations_reach_the_job() {
        let mut t = Task::test().labelled("kueue.x-k8s.io/priority-class", "high");
        t.metadata.annotations = Some(BTreeMap::from([
            (
                "kueue.x-k8s.io/job-min-parallelism".to_owned(),
                "2".to_owned(),
            ),
            (
                "provreq.kueue.x-k8s.io/ValidUntilSeconds".to_owned(),
                "60".to_owned(),
            ),
            (
                "kubectl.kubernetes.io/last-applied-configuration".to_owned(),
                "{}".to_owned(),
            ),
        ]));
        let meta = build::job(&t, "w").unwrap().metadata;
        let a = meta.annotations.unwrap();
        assert_eq!(
            a.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "kueue.x-k8s.io/job-min-parallelism",
                "provreq.kueue.x-k8s.io/ValidUntilSeconds"
            ]
        );
        let l = meta.labels.unwrap();
        assert_eq!(
            l.get("kueue.x-k8s.io/priority-class").map(String::as_str),
            Some("high")
        );
        assert_eq!(
            build::job(&Task::test(), "w").unwrap().metadata.annotations,
            None
        );
    }
}
