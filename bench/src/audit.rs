//! API writes counted from the devcluster's audit log (JSON lines, level
//! Metadata, one `ResponseComplete` entry per finished write), and the
//! server-side times of the steps that take a new Task to `Running`.

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

/// What the audit log says of one namespace.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Namespace {
    /// The operator's and the workers' writes.
    pub writes: Writes,
    /// Every write in the namespace, whoever made it, refused ones (409s)
    /// included: the work the batch gave the API server.
    pub all_writes: u64,
    pub steps: Steps,
}

/// Per Task, ms, from the API server's own receive and response times:
/// the waits between a Task's create and its `Running` status, split into
/// the API server's time per call and the operator's time between calls
/// (which holds the watch delivery to the operator and its reconcile).
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Steps {
    pub task_create_ms: Vec<f64>,
    /// Task create answered -> the operator's Job create received.
    pub to_job_create_ms: Vec<f64>,
    pub job_create_ms: Vec<f64>,
    /// Job create answered -> the operator's first status patch received.
    pub to_status_ms: Vec<f64>,
    pub status_ms: Vec<f64>,
    /// Task create answered -> that status patch answered.
    pub created_to_running_ms: Vec<f64>,
}

/// A call's receive and response times, seconds.
type Span = (f64, f64);

#[derive(Default)]
struct TaskCalls {
    create: Option<Span>,
    job: Option<Span>,
    status: Option<Span>,
}

impl Steps {
    fn from_calls(calls: &HashMap<String, TaskCalls>) -> Steps {
        let mut s = Steps::default();
        let ms = |a: f64, b: f64| (b - a) * 1000.0;
        for c in calls.values() {
            let (Some(t), Some(j), Some(st)) = (c.create, c.job, c.status) else {
                continue;
            };
            s.task_create_ms.push(ms(t.0, t.1));
            s.to_job_create_ms.push(ms(t.1, j.0));
            s.job_create_ms.push(ms(j.0, j.1));
            s.to_status_ms.push(ms(j.1, st.0));
            s.status_ms.push(ms(st.0, st.1));
            s.created_to_running_ms.push(ms(t.1, st.1));
        }
        s
    }
}

fn seconds(v: &Value) -> Option<f64> {
    let t: k8s_openapi::jiff::Timestamp = v.as_str()?.parse().ok()?;
    Some(t.as_nanosecond() as f64 / 1e9)
}

const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// Reads the log: per namespace, the writes and the steps to `Running`.
pub fn read(log: &Path) -> Result<HashMap<String, Namespace>> {
    let f = std::fs::File::open(log).with_context(|| format!("open {}", log.display()))?;
    let mut out: HashMap<String, Namespace> = HashMap::new();
    let mut calls: HashMap<String, HashMap<String, TaskCalls>> = HashMap::new();
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
        let resource = obj["resource"].as_str().unwrap_or("?");
        let sub = obj["subresource"].as_str();
        let mut what = format!("{verb} {resource}");
        if let Some(sub) = sub {
            what.push('/');
            what.push_str(sub);
        }
        let code = v["responseStatus"]["code"].as_i64().unwrap_or(0);
        let refused = code >= 400;
        if refused {
            what.push_str(&format!(" ({code})"));
        }
        let n = out.entry(ns.to_owned()).or_default();
        n.all_writes += 1;
        if user == OPERATOR_USER {
            *n.writes.operator.entry(what).or_default() += 1;
        } else if user == worker_user {
            *n.writes.worker.entry(what).or_default() += 1;
        }
        // The bench names each Task's Job after it.
        // A refused write is work for the API server but no step.
        if refused {
            continue;
        }
        let (Some(name), Some(t0), Some(t1)) = (
            obj["name"].as_str(),
            seconds(&v["requestReceivedTimestamp"]),
            seconds(&v["stageTimestamp"]),
        ) else {
            continue;
        };
        let c = calls
            .entry(ns.to_owned())
            .or_default()
            .entry(name.to_owned())
            .or_default();
        let slot = match (resource, sub, verb) {
            ("tasks", None, "create") => &mut c.create,
            ("jobs", None, "create") if user == OPERATOR_USER => &mut c.job,
            ("tasks", Some("status"), "patch") if user == OPERATOR_USER => &mut c.status,
            _ => continue,
        };
        // The first one: a Task's first status write is the one to Running.
        if slot.is_none_or(|s| t0 < s.0) {
            *slot = Some((t0, t1));
        }
    }
    for (ns, c) in &calls {
        if let Some(n) = out.get_mut(ns) {
            n.steps = Steps::from_calls(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One log line; `call` is "verb resource[/sub] name".
    fn line(call: &str, user: &str, code: u16, t: (&str, &str)) -> String {
        let mut w = call.split(' ');
        let (verb, what, name) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
        let (res, sub) = match what.split_once('/') {
            Some((r, s)) => (r, format!(r#","subresource":"{s}""#)),
            None => (what, String::new()),
        };
        format!(
            r#"{{"stage":"ResponseComplete","verb":"{verb}","user":{{"username":"{user}"}},"objectRef":{{"resource":"{res}","namespace":"ns","name":"{name}"{sub}}},"responseStatus":{{"code":{code}}},"requestReceivedTimestamp":"2026-12-04T09:30:{}Z","stageTimestamp":"2026-12-04T09:30:{}Z"}}"#,
            t.0, t.1
        )
    }

    #[test]
    fn a_tasks_steps_and_every_write() {
        let op = OPERATOR_USER;
        let log = [
            line("create tasks a", "admin", 201, ("01.000", "01.050")),
            line("create jobs a", op, 201, ("01.150", "01.300")),
            // A refused write counts as work but is no step.
            line("patch pods/status a-x", "node", 409, ("01.310", "01.320")),
            // Completed, then Running: the earliest status write is the step.
            line("patch tasks/status a", op, 200, ("05.000", "05.010")),
            line("patch tasks/status a", op, 200, ("01.320", "01.400")),
            // A Task whose Job the log does not hold has no steps.
            line("create tasks b", "admin", 201, ("01.000", "01.050")),
        ]
        .join("\n");
        let dir = std::env::temp_dir().join(format!("bench-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.log");
        std::fs::write(&path, log).unwrap();
        let got = read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let ns = &got["ns"];
        assert_eq!(ns.all_writes, 6);
        assert_eq!(ns.writes.operator_total(), 3);
        let s = &ns.steps;
        let one = |v: &Vec<f64>| {
            assert_eq!(v.len(), 1, "{v:?}");
            v[0].round()
        };
        assert_eq!(one(&s.task_create_ms), 50.0);
        assert_eq!(one(&s.to_job_create_ms), 100.0);
        assert_eq!(one(&s.job_create_ms), 150.0);
        assert_eq!(one(&s.to_status_ms), 20.0);
        assert_eq!(one(&s.status_ms), 80.0);
        assert_eq!(one(&s.created_to_running_ms), 350.0);
    }
}
