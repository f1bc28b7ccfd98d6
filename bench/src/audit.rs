//! API writes counted from the devcluster's audit log (JSON lines, level
//! Metadata, one `ResponseComplete` entry per finished write).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::Value;

use crate::cluster::OPERATOR_USER;

/// Writes in one namespace, by writer, then by "verb resource[/subresource]".
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Writes {
    pub operator: BTreeMap<String, u64>,
    pub worker: BTreeMap<String, u64>,
}

impl Writes {
    pub fn operator_total(&self) -> u64 {
        self.operator.values().sum()
    }
    /// The operator's writes but its Events (the goal counts those apart).
    pub fn operator_not_events(&self) -> u64 {
        self.operator
            .iter()
            .filter(|(k, _)| !k.ends_with(" events"))
            .map(|(_, n)| n)
            .sum()
    }
    pub fn worker_total(&self) -> u64 {
        self.worker.values().sum()
    }
}

const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// Counts the operator's and the workers' writes per namespace in the log.
pub fn count(log: &Path) -> Result<HashMap<String, Writes>> {
    let f = std::fs::File::open(log).with_context(|| format!("open {}", log.display()))?;
    let mut out: HashMap<String, Writes> = HashMap::new();
    for line in BufReader::new(f).lines() {
        let line = line?;
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["stage"] != "ResponseComplete" {
            continue;
        }
        let verb = v["verb"].as_str().unwrap_or_default();
        if !WRITE_VERBS.contains(&verb) {
            continue;
        }
        let obj = &v["objectRef"];
        let Some(ns) = obj["namespace"].as_str() else {
            continue;
        };
        let user = v["user"]["username"].as_str().unwrap_or_default();
        let worker_user = format!("system:serviceaccount:{ns}:longtask-worker");
        let mut what = format!("{verb} {}", obj["resource"].as_str().unwrap_or("?"));
        if let Some(sub) = obj["subresource"].as_str() {
            what.push('/');
            what.push_str(sub);
        }
        let code = v["responseStatus"]["code"].as_i64().unwrap_or(0);
        if code >= 400 {
            what.push_str(&format!(" ({code})"));
        }
        let w = out.entry(ns.to_owned()).or_default();
        if user == OPERATOR_USER {
            *w.operator.entry(what).or_default() += 1;
        } else if user == worker_user {
            *w.worker.entry(what).or_default() += 1;
        }
    }
    Ok(out)
}
