//! Checks the CRD schema already enforces at `kubectl apply`, repeated here so
//! a Task that slipped past them (an older CRD, a bypassed webhook) fails
//! with reason InvalidSpec instead of producing a broken Job; and one no
//! schema can express: Tasks do not run in the system namespaces.

use crds::Task;
use crds::bounds::{MAX_ENV_NAME_LEN, MAX_RETRIES, MAX_SHARDS};
use crds::names::{MAX_NAME_LEN, env};

// Namespaces where no Task runs. The operator's ClusterRole would let it
// create Jobs there (RBAC cannot leave namespaces out); the admission
// policy `longtask-operator-system-namespaces` refuses those writes, and
// this check gives such a Task a terminal status instead of retrying
// refused calls for ever.
pub use crds::names::SYSTEM_NAMESPACES;

/// `Ok` or a message naming the offending field.
pub fn validate(task: &Task) -> Result<(), String> {
    let name = task.metadata.name.as_deref().unwrap_or_default();
    metadata(task)?;
    program(&task.spec)?;
    limits(&task.spec)?;
    env_entries(&task.spec)?;
    shard_name(name, task.spec.shards)
}

/// Where the Task lives and what it is called.
fn metadata(task: &Task) -> Result<(), String> {
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
    Ok(())
}

/// The program to run.
fn program(spec: &crds::TaskSpec) -> Result<(), String> {
    match spec.command.first() {
        None => Err("spec.command is empty: name the program to run".to_owned()),
        Some(p) if p.is_empty() => {
            Err("spec.command[0] is empty: name the program to run".to_owned())
        }
        Some(_) => Ok(()),
    }
}

/// Retries, times and shards within their bounds.
fn limits(spec: &crds::TaskSpec) -> Result<(), String> {
    if !(0..=MAX_RETRIES).contains(&spec.retries) {
        return Err(format!(
            "spec.retries is {}; it must be between 0 and {MAX_RETRIES}",
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
    Ok(())
}

/// Names the API server accepts (printable ASCII but '='), and `value` or
/// one `valueFrom` source.
fn env_entries(spec: &crds::TaskSpec) -> Result<(), String> {
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
    for e in &spec.env {
        let printable = e
            .name
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'=');
        if e.name.is_empty() || e.name.len() > MAX_ENV_NAME_LEN || !printable {
            return Err(format!(
                "spec.env: name {:?} is not valid: use 1 to {MAX_ENV_NAME_LEN} printable ASCII characters other than '=', e.g. MY_VAR",
                e.name
            ));
        }
        let Some(from) = &e.value_from else { continue };
        if e.value.as_deref().is_some_and(|v| !v.is_empty()) {
            return Err(format!(
                "spec.env: {:?} sets both value and valueFrom: give one of them",
                e.name
            ));
        }
        let sources = [
            from.field_ref.is_some(),
            from.resource_field_ref.is_some(),
            from.config_map_key_ref.is_some(),
            from.secret_key_ref.is_some(),
            from.file_key_ref.is_some(),
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            return Err(format!(
                "spec.env: {:?}: valueFrom must name exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef",
                e.name
            ));
        }
    }
    Ok(())
}

/// A sharded Task's pods take the host name `<name>-<index>`: a DNS label
/// (lowercase letters, digits, '-'; at most 63 characters) for every index.
fn shard_name(name: &str, shards: i32) -> Result<(), String> {
    if shards <= 1 {
        return Ok(());
    }
    let longest = format!("{name}-{}", shards - 1);
    let label = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !label || longest.len() > MAX_NAME_LEN {
        return Err(format!(
            "metadata.name: a Task with {shards} shards needs a name of at most {} characters, only lowercase letters, digits and '-' (no '.'): shard pod {longest:?} would not be a valid host name",
            MAX_NAME_LEN - (longest.len() - name.len())
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::TaskFixture;
    use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector};

    fn var(name: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: Some("v".into()),
            ..EnvVar::default()
        }
    }

    fn from_field(path: &str) -> EnvVar {
        EnvVar {
            name: "FROM_FIELD".into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: path.into(),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }
    }

    #[test]
    fn table() {
        let long = "a".repeat(64);
        let task = Task::test;
        let cases: Vec<(Task, Option<&str>)> = vec![
            (task().named("ok"), None),
            (task().named(&long), Some("metadata.name")),
            (task().command(&[]), Some("spec.command")),
            (task().command(&[""]), Some("spec.command[0]")),
            (task().retries(11), Some("spec.retries")),
            (task().timeout(0), Some("spec.timeoutSeconds")),
            (task().ttl(-1), Some("spec.ttlSecondsAfterFinished")),
            (task().start_timeout(0), Some("spec.startTimeoutSeconds")),
            (task().sharded(0), Some("spec.shards")),
            (task().sharded(i32::MAX), Some("spec.shards")),
            (task().sharded(1000), None),
            (task().sharded(4).parallelism(5), Some("spec.parallelism")),
            (task().parallelism(0), Some("spec.parallelism")),
            (
                task().env(vec![EnvVar {
                    name: "LONGTASK_RESULT".into(),
                    ..EnvVar::default()
                }]),
                Some("spec.env"),
            ),
            (task().env(vec![var("1 bad=name")]), Some("spec.env")),
            (task().env(vec![var("")]), Some("spec.env")),
            (task().env(vec![var("tab\there")]), Some("spec.env")),
            (task().env(vec![var("é")]), Some("spec.env")),
            (
                task().env(vec![var(&"A".repeat(MAX_ENV_NAME_LEN + 1))]),
                Some("spec.env"),
            ),
            // What the API server accepts since 1.34 (relaxed names).
            (task().env(vec![var("1 odd.name-~!")]), None),
            (
                task().env(vec![EnvVar {
                    value: Some("x".into()),
                    ..from_field("spec.nodeName")
                }]),
                Some("spec.env"),
            ),
            (
                task().env(vec![EnvVar {
                    value: Some(String::new()),
                    ..from_field("spec.nodeName")
                }]),
                None,
            ),
            (
                task().env(vec![EnvVar {
                    value_from: Some(EnvVarSource::default()),
                    ..var("EMPTY_SOURCE")
                }]),
                Some("spec.env"),
            ),
            (
                task().env(vec![{
                    let mut v = from_field("metadata.name");
                    v.value_from.as_mut().unwrap().secret_key_ref = Some(Default::default());
                    v
                }]),
                Some("spec.env"),
            ),
            // The Job API judges the field path itself (InvalidSpec on create).
            (task().env(vec![from_field("spec.nonexistent")]), None),
            (task().named("a.b").sharded(2), Some("metadata.name")),
            (task().named("a.b"), None),
            (task().named(&"a".repeat(61)).sharded(10), None),
            (
                task().named(&"a".repeat(62)).sharded(10),
                Some("metadata.name"),
            ),
            (task().named(&"a".repeat(61)).sharded(2), None),
            (
                task().named(&"a".repeat(62)).sharded(2),
                Some("metadata.name"),
            ),
            (task().named(&"a".repeat(63)), None),
            (
                task().named(&"a".repeat(60)).sharded(1000),
                Some("metadata.name"),
            ),
            (task().named(&"a".repeat(59)).sharded(1000), None),
            (task().in_ns("kube-system"), Some("metadata.namespace")),
            (task().in_ns("kube-public"), Some("metadata.namespace")),
            (task().in_ns("kube-node-lease"), Some("metadata.namespace")),
            (task().in_ns("default"), None),
            (task().in_ns("kube-systemx"), None),
        ];
        for (i, (t, want)) in cases.iter().enumerate() {
            match (validate(t), want) {
                (Ok(()), None) => {}
                (Err(m), Some(field)) => assert!(m.starts_with(field), "case {i}: {m}"),
                (got, want) => panic!("case {i}: got {got:?}, want {want:?}"),
            }
        }
    }
}
