//! Who the worker works for, read from the environment the operator sets.

use std::collections::HashMap;

use crds::names::env;

/// The Task, Job and pod this run belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub task_name: String,
    pub task_uid: String,
    pub namespace: String,
    pub job_uid: String,
    pub pod_name: String,
}

/// Reads the identity from `vars`; `Err` lists the variables that are missing.
pub fn from_env(vars: &HashMap<String, String>) -> Result<Identity, Vec<&'static str>> {
    let mut missing = Vec::new();
    let mut get = |k: &'static str| match vars.get(k).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        Some(v) => v.to_owned(),
        None => {
            missing.push(k);
            String::new()
        }
    };
    let id = Identity {
        task_name: get(env::TASK_NAME),
        task_uid: get(env::TASK_UID),
        namespace: get(env::NAMESPACE),
        job_uid: get(env::JOB_UID),
        pod_name: get(env::POD_NAME),
    };
    if missing.is_empty() {
        Ok(id)
    } else {
        Err(missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_and_missing() {
        let mut vars: HashMap<String, String> = [
            (env::TASK_NAME, "t"),
            (env::TASK_UID, "tu"),
            (env::NAMESPACE, "ns"),
            (env::JOB_UID, "ju"),
            (env::POD_NAME, "p"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(from_env(&vars).map(|i| i.job_uid), Ok("ju".to_owned()));
        vars.insert(env::JOB_UID.to_owned(), " ".to_owned());
        vars.remove(env::TASK_UID);
        assert_eq!(from_env(&vars), Err(vec![env::TASK_UID, env::JOB_UID]));
    }
}
