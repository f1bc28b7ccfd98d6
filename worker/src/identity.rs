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
    /// UID of the pod: stamped on every write, checked by the admission policy.
    pub pod_uid: String,
    /// The shard this pod runs, for a Task of more than one shard.
    pub shard: Option<u32>,
}

impl Identity {
    /// Name of the ConfigMap this run writes its result to.
    pub fn result_name(&self) -> String {
        match self.shard {
            Some(i) => crds::result::shard_config_map_name(&self.task_name, i),
            None => crds::result::config_map_name(&self.task_name),
        }
    }
}

/// The shard of a Task of several shards, from `$LONGTASK_SHARD` and
/// `$LONGTASK_SHARDS`; `None` for a single-shard Task.
pub fn shard(vars: &HashMap<String, String>) -> Result<Option<u32>, String> {
    let num = |k: &str| {
        vars.get(k).map(|v| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{k}={v:?} is not a number"))
        })
    };
    let shards = num(env::SHARDS).transpose()?.unwrap_or(1);
    if shards <= 1 {
        return Ok(None);
    }
    match num(env::SHARD).transpose()? {
        Some(i) if i < shards => Ok(Some(i)),
        Some(i) => Err(format!(
            "{}={i} is not below {}={shards}",
            env::SHARD,
            env::SHARDS
        )),
        None => Err(format!(
            "{} is unset in a Task of {shards} shards",
            env::SHARD
        )),
    }
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
        pod_uid: get(env::POD_UID),
        shard: None,
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
            (env::POD_UID, "pu"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(from_env(&vars).map(|i| i.job_uid), Ok("ju".to_owned()));
        vars.insert(env::JOB_UID.to_owned(), " ".to_owned());
        vars.remove(env::TASK_UID);
        assert_eq!(from_env(&vars), Err(vec![env::TASK_UID, env::JOB_UID]));
    }

    #[test]
    fn shards_name_their_result() {
        let vars = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(shard(&vars(&[])), Ok(None));
        assert_eq!(
            shard(&vars(&[(env::SHARD, "0"), (env::SHARDS, "1")])),
            Ok(None)
        );
        assert_eq!(
            shard(&vars(&[(env::SHARD, "3"), (env::SHARDS, "12")])),
            Ok(Some(3))
        );
        assert!(shard(&vars(&[(env::SHARD, "12"), (env::SHARDS, "12")])).is_err());
        assert!(shard(&vars(&[(env::SHARDS, "2")])).is_err());
        assert!(shard(&vars(&[(env::SHARD, "x"), (env::SHARDS, "2")])).is_err());
        let mut id = Identity {
            task_name: "t".into(),
            task_uid: "tu".into(),
            namespace: "ns".into(),
            job_uid: "ju".into(),
            pod_name: "p".into(),
            pod_uid: "pu".into(),
            shard: None,
        };
        assert_eq!(id.result_name(), "t-result");
        id.shard = Some(7);
        assert_eq!(id.result_name(), "t-result-7");
    }
}
