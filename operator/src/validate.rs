//! Checks the CRD schema already enforces at `kubectl apply`, repeated here so
//! a Task that slipped past them (an older CRD, a bypassed webhook) fails
//! with reason InvalidSpec instead of producing a broken Job; and one no
//! schema can express: Tasks do not run in the system namespaces.

use crds::Task;
use crds::names::{MAX_NAME_LEN, env};

/// Most shards a Task may have (as the CRD schema says).
const MAX_SHARDS: i32 = 1000;

/// Namespaces where no Task runs. The operator's ClusterRole would let it
/// create Jobs there (RBAC cannot leave namespaces out); the admission
/// policy `longtask-operator-system-namespaces` refuses those writes, and
/// this check gives such a Task a terminal status instead of retrying
/// refused calls for ever.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// `Ok` or a message naming the offending field.
pub fn validate(task: &Task) -> Result<(), String> {
    let namespace = task.metadata.namespace.as_deref().unwrap_or_default();
    if SYSTEM_NAMESPACES.contains(&namespace) {
        return Err(format!(
            "metadata.namespace is {namespace}: Tasks may not run in system namespaces ({}); create the Task in another namespace",
            SYSTEM_NAMESPACES.join(", ")
        ));
    }
    let name = task.metadata.name.as_deref().unwrap_or_default();
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "metadata.name is {} characters long; at most {MAX_NAME_LEN} are allowed because the Job takes the Task's name",
            name.len()
        ));
    }
    let spec = &task.spec;
    match spec.command.first() {
        None => return Err("spec.command is empty: name the program to run".to_owned()),
        Some(p) if p.is_empty() => {
            return Err("spec.command[0] is empty: name the program to run".to_owned());
        }
        Some(_) => {}
    }
    if !(0..=10).contains(&spec.retries) {
        return Err(format!(
            "spec.retries is {}; it must be between 0 and 10",
            spec.retries
        ));
    }
    if let Some(t) = spec.timeout_seconds.filter(|t| *t < 1) {
        return Err(format!("spec.timeoutSeconds is {t}; it must be at least 1"));
    }
    if let Some(t) = spec.ttl_seconds_after_finished.filter(|t| *t < 0) {
        return Err(format!(
            "spec.ttlSecondsAfterFinished is {t}; it must be at least 0"
        ));
    }
    if let Some(t) = spec.start_timeout_seconds.filter(|t| *t < 1) {
        return Err(format!(
            "spec.startTimeoutSeconds is {t}; it must be at least 1"
        ));
    }
    // A sharded Task's status has one entry per shard: unbounded shards
    // would mean an unbounded status (and loop).
    if !(1..=MAX_SHARDS).contains(&spec.shards) {
        return Err(format!(
            "spec.shards is {}; it must be between 1 and {MAX_SHARDS}",
            spec.shards
        ));
    }
    if let Some(p) = spec.parallelism.filter(|p| !(1..=spec.shards).contains(p)) {
        return Err(format!(
            "spec.parallelism is {p}; it must be between 1 and spec.shards ({})",
            spec.shards
        ));
    }
    if let Some(e) = spec
        .env
        .iter()
        .find(|e| e.name.starts_with(env::RESERVED_PREFIX))
    {
        return Err(format!(
            "spec.env: {} is reserved; names starting with {} belong to longtask",
            e.name,
            env::RESERVED_PREFIX
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::TaskSpec;
    use k8s_openapi::api::core::v1::EnvVar;

    fn task(name: &str, f: impl FnOnce(&mut TaskSpec)) -> Task {
        let mut spec = TaskSpec {
            command: vec!["sh".into()],
            args: vec![],
            env: vec![],
            resources: None,
            timeout_seconds: None,
            retries: 0,
            ttl_seconds_after_finished: None,
            start_timeout_seconds: None,
            cancel: false,
            priority: 0,
            shards: 1,
            parallelism: None,
        };
        f(&mut spec);
        Task::new(name, spec)
    }

    #[test]
    fn table() {
        let long = "a".repeat(64);
        let mut cases: Vec<(Task, Option<&str>)> = vec![
            (task("ok", |_| {}), None),
            (task(&long, |_| {}), Some("metadata.name")),
            (task("t", |s| s.command.clear()), Some("spec.command")),
            (
                task("t", |s| s.command = vec![String::new()]),
                Some("spec.command[0]"),
            ),
            (task("t", |s| s.retries = 11), Some("spec.retries")),
            (
                task("t", |s| s.timeout_seconds = Some(0)),
                Some("spec.timeoutSeconds"),
            ),
            (
                task("t", |s| s.ttl_seconds_after_finished = Some(-1)),
                Some("spec.ttlSecondsAfterFinished"),
            ),
            (
                task("t", |s| s.start_timeout_seconds = Some(0)),
                Some("spec.startTimeoutSeconds"),
            ),
            (task("t", |s| s.shards = 0), Some("spec.shards")),
            (task("t", |s| s.shards = i32::MAX), Some("spec.shards")),
            (task("t", |s| s.shards = 1000), None),
            (
                task("t", |s| {
                    s.shards = 4;
                    s.parallelism = Some(5)
                }),
                Some("spec.parallelism"),
            ),
            (
                task("t", |s| s.parallelism = Some(0)),
                Some("spec.parallelism"),
            ),
            (
                task("t", |s| {
                    s.env = vec![EnvVar {
                        name: "LONGTASK_RESULT".into(),
                        ..EnvVar::default()
                    }]
                }),
                Some("spec.env"),
            ),
        ];
        let in_ns = |ns: &str| {
            let mut t = task("t", |_| {});
            t.metadata.namespace = Some(ns.into());
            t
        };
        cases.extend([
            (in_ns("kube-system"), Some("metadata.namespace")),
            (in_ns("kube-public"), Some("metadata.namespace")),
            (in_ns("kube-node-lease"), Some("metadata.namespace")),
            (in_ns("default"), None),
            (in_ns("kube-systemx"), None),
        ]);
        for (i, (t, want)) in cases.iter().enumerate() {
            match (validate(t), want) {
                (Ok(()), None) => {}
                (Err(m), Some(field)) => assert!(m.starts_with(field), "case {i}: {m}"),
                (got, want) => panic!("case {i}: got {got:?}, want {want:?}"),
            }
        }
    }
}
