//! Who the worker works for, read from the environment the operator sets.

use std::collections::HashMap;
use std::num::ParseIntError;

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

/// Why the worker cannot tell which Task, Job and shard it runs for.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// Variables the operator always sets are unset or empty: the worker
    /// does not run in a longtask Job.
    #[error("{} unset", vars.join(", "))]
    Unset { vars: Vec<&'static str> },
    /// `$LONGTASK_SHARD` or `$LONGTASK_SHARDS` is not a number.
    #[error("{var}={value:?} is not a number")]
    NotANumber {
        var: &'static str,
        value: String,
        #[source]
        source: ParseIntError,
    },
    /// `$LONGTASK_SHARD` is not one of the Task's shards.
    #[error("{}={shard} is not below {}={shards}", env::SHARD, env::SHARDS)]
    ShardOutOfRange { shard: u32, shards: u32 },
    /// `$LONGTASK_SHARD` is missing in a Task of several shards.
    #[error("{} is unset in a Task of {shards} shards", env::SHARD)]
    ShardUnset { shards: u32 },
}

/// The shard of a Task of several shards, from `$LONGTASK_SHARD` and
/// `$LONGTASK_SHARDS`; `None` for a single-shard Task.
pub fn shard(vars: &HashMap<String, String>) -> Result<Option<u32>, IdentityError> {
    let num = |var: &'static str| {
        vars.get(var).map(|value| {
            value
                .trim()
                .parse::<u32>()
                .map_err(|source| IdentityError::NotANumber {
                    var,
                    value: value.clone(),
                    source,
                })
        })
    };
    let shards = num(env::SHARDS).transpose()?.unwrap_or(1);
    if shards <= 1 {
        return Ok(None);
    }
    match num(env::SHARD).transpose()? {
        Some(shard) if shard < shards => Ok(Some(shard)),
        Some(shard) => Err(IdentityError::ShardOutOfRange { shard, shards }),
        None => Err(IdentityError::ShardUnset { shards }),
    }
}

/// Reads the identity, shard included, from `vars`.
pub fn from_env(vars: &HashMap<String, String>) -> Result<Identity, IdentityError> {
    let mut unset = Vec::new();
    let mut get = |k: &'static str| match vars.get(k).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        Some(v) => v.to_owned(),
        None => {
            unset.push(k);
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
    if !unset.is_empty() {
        return Err(IdentityError::Unset { vars: unset });
    }
    Ok(Identity {
        shard: shard(vars)?,
        ..id
    })
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
        assert_eq!(
            from_env(&vars),
            Err(IdentityError::Unset {
                vars: vec![env::TASK_UID, env::JOB_UID]
            })
        );
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

    #[test]
    fn errors_name_the_variables() {
        let mut vars: HashMap<String, String> = [
            env::TASK_NAME,
            env::TASK_UID,
            env::NAMESPACE,
            env::JOB_UID,
            env::POD_NAME,
            env::POD_UID,
        ]
        .into_iter()
        .map(|k| (k.to_owned(), "x".to_owned()))
        .collect();
        vars.insert(env::SHARDS.to_owned(), "2".to_owned());
        let text = |vars: &HashMap<String, String>| from_env(vars).map_err(|e| e.to_string());
        let unset = format!("{} is unset in a Task of 2 shards", env::SHARD);
        assert_eq!(text(&vars), Err(unset));
        vars.insert(env::SHARD.to_owned(), "2".to_owned());
        let high = format!("{}=2 is not below {}=2", env::SHARD, env::SHARDS);
        assert_eq!(text(&vars), Err(high));
        vars.insert(env::SHARD.to_owned(), "one".to_owned());
        assert_eq!(
            text(&vars),
            Err(format!("{}=\"one\" is not a number", env::SHARD))
        );
        vars.insert(env::SHARD.to_owned(), "1".to_owned());
        assert_eq!(from_env(&vars).map(|i| i.shard), Ok(Some(1)));
        vars.remove(env::TASK_NAME);
        vars.remove(env::POD_UID);
        let missing = format!("{}, {} unset", env::TASK_NAME, env::POD_UID);
        assert_eq!(text(&vars), Err(missing));
    }
}
