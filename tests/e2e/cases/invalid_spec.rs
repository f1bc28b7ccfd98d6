//! Specs the Job API would refuse: what CEL can express is refused at
//! `kubectl apply`, naming the field; what only the Job API refuses ends the
//! Task Failed with reason InvalidSpec and the server's message, one Failed
//! Event, one create, and no retry loop, and it never holds up the queue.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, sh_task, tasks, wait};
use serde_json::Value;

use super::validation::refused;

const MINUTE: Duration = Duration::from_secs(60);

/// `kubectl apply --dry-run=server`: every check of a real apply (schema,
/// CEL), nothing stored.
fn accepted(ns: &TestNs, what: &str, yaml: &str) -> Result<()> {
    ns.kubectl
        .stdin(
            &["-n", &ns.name, "apply", "--dry-run=server", "-f", "-"],
            yaml,
        )
        .with_context(|| format!("{what}: refused, want it accepted"))?;
    Ok(())
}

fn env(lines: &str) -> String {
    format!("  env:\n{lines}")
}

fn resources(lines: &str) -> String {
    format!("  resources:\n{lines}")
}

pub async fn invalid_spec_refused_at_apply(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let t = |name: &str, extra: &str| sh_task(name, "true", extra);
    let bad: [(&str, String, &[&str]); 10] = [
        (
            "env name with '='",
            t("e1", &env("  - {name: \"1 bad=name\", value: x}\n")),
            &["spec.env", "\"1 bad=name\" is not valid", "printable ASCII"],
        ),
        (
            "empty env name",
            t("e2", &env("  - {name: \"\", value: x}\n")),
            &["spec.env", "is not valid"],
        ),
        (
            "value and valueFrom",
            t(
                "e3",
                &env(
                    "  - {name: BOTH, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n",
                ),
            ),
            &["spec.env", "\"BOTH\" sets both value and valueFrom"],
        ),
        (
            "valueFrom without a source",
            t("e4", &env("  - {name: NONE, valueFrom: {}}\n")),
            &["spec.env", "exactly one of fieldRef"],
        ),
        (
            "cpu: lots",
            t("q1", &resources("    requests: {cpu: lots}\n")),
            &["spec.resources.requests.cpu", "\"lots\" is not a quantity"],
        ),
        (
            "negative memory limit",
            t("q2", &resources("    limits: {memory: \"-1Gi\"}\n")),
            &["spec.resources.limits.memory", "-1Gi"],
        ),
        (
            "request above its limit",
            t(
                "q3",
                &resources("    requests: {cpu: \"2\", memory: 1Gi}\n    limits: {cpu: 1500m}\n"),
            ),
            &["spec.resources.requests.cpu (2) is above spec.resources.limits.cpu (1500m)"],
        ),
        (
            "integer request above its limit",
            t(
                "q4",
                &resources("    requests: {memory: 2048}\n    limits: {memory: 2k}\n"),
            ),
            &["spec.resources.requests.memory (2048) is above"],
        ),
        (
            "sharded name with a dot",
            t("a.b", "  shards: 2\n"),
            &["metadata.name of a sharded Task", "(no '.')"],
        ),
        (
            "sharded name too long for -<index>",
            t(&"s".repeat(62), "  shards: 10\n"),
            &[
                "metadata.name of a sharded Task",
                "61 characters for up to 10 shards",
            ],
        ),
    ];
    for (what, yaml, mention) in &bad {
        refused(&ns, what, yaml, mention)?;
    }
    // The boundaries: what the Job API accepts, CEL accepts.
    let good: [(&str, String); 8] = [
        (
            "relaxed env name",
            t("g1", &env("  - {name: \"1 odd.name-~!\", value: x}\n")),
        ),
        (
            "empty value with valueFrom",
            t(
                "g2",
                &env(
                    "  - {name: POD, value: \"\", valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n",
                ),
            ),
        ),
        (
            "request equal to its limit, integers and suffixes",
            t(
                "g3",
                &resources(
                    "    requests: {cpu: 1, memory: 1.5Gi}\n    limits: {cpu: 1000m, memory: 1536Mi}\n",
                ),
            ),
        ),
        (
            "a request without a limit, a limit without a request",
            t(
                "g4",
                &resources("    requests: {cpu: 100m}\n    limits: {memory: 64Mi}\n"),
            ),
        ),
        ("dotted name, not sharded", t("g5.with.dots", "")),
        (
            "61 characters, 10 shards",
            t(&"g".repeat(61), "  shards: 10\n"),
        ),
        (
            "59 characters, 1000 shards",
            t(&"h".repeat(59), "  shards: 1000\n"),
        ),
        ("63 characters, not sharded", t(&"i".repeat(63), "")),
    ];
    for (what, yaml) in &good {
        accepted(&ns, what, yaml)?;
    }
    let names = ns.k(&["get", "tasks", "-o", "name"])?;
    ensure!(names.trim().is_empty(), "tasks present: {names:?}");

    // A relaxed name CEL accepts, the Job API accepts too: the program sees it.
    ns.apply(&format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: relaxed\nspec:\n  command: [printenv, \"my.var 1\"]\n{}",
        env("  - {name: \"my.var 1\", value: seen}\n")
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let done = wait::condition(&api, "relaxed", "Finished", MINUTE).await?;
    let st = &done["status"];
    ensure!(st["phase"] == "Completed", "relaxed: {st}");
    ensure!(
        st["result"].as_str().map(str::trim) == Some("seen"),
        "relaxed: the program's environment lacks the variable: {st}"
    );
    Ok(())
}

/// `Failed` Events on Task `name`, with their counts.
async fn failed_events(ns: &TestNs, name: &str) -> Result<Vec<(String, i32, String)>> {
    let api: Api<Event> = Api::namespaced(ns.client.clone(), &ns.name);
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            let r = e.regarding.as_ref();
            r.and_then(|r| r.kind.as_deref()) == Some("Task")
                && r.and_then(|r| r.name.as_deref()) == Some(name)
                && e.reason.as_deref() == Some("Failed")
        })
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.series.as_ref().map_or(1, |s| s.count),
                e.note.unwrap_or_default(),
            )
        })
        .collect())
}

/// How many times the operator logged a refused create of Job `name` in
/// this namespace (its JSON log: one line per create the server refused).
async fn refused_creates(c: &Cluster, ns: &TestNs, name: &str) -> Result<usize> {
    let pod = longtask_e2e::operator::leader_pod(c).await?;
    let log = c.kubectl.run(&["-n", SYSTEM_NS, "logs", &pod])?;
    Ok(log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| {
            v["message"] == "the API server refused the Job"
                && v["namespace"] == ns.name.as_str()
                && v["job"] == name
        })
        .count())
}

/// Waits for `name` to fail with InvalidSpec; checks the server's words in
/// its message and one Warning Failed Event; returns the Task.
async fn fails_invalid(ns: &TestNs, name: &str, server_says: &[&str]) -> Result<Value> {
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, name, "Failed", MINUTE).await?;
    let st = &t["status"];
    ensure!(
        st["phase"] == "Failed" && st["reason"] == "InvalidSpec",
        "{name}: {st}"
    );
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(
        msg.starts_with("the API server refused the Task's Job: "),
        "{name}: message {msg:?}"
    );
    for s in server_says {
        ensure!(msg.contains(s), "{name}: message lacks {s:?}: {msg:?}");
    }
    ensure!(st["jobName"].is_null(), "{name}: a Job was recorded: {st}");
    let deadline = Instant::now() + MINUTE;
    loop {
        let evs = failed_events(ns, name).await?;
        if let [(kind, count, note)] = evs.as_slice() {
            ensure!(
                kind == "Warning" && *count == 1 && note.contains("InvalidSpec"),
                "{name}: Failed Event {evs:?}"
            );
            break;
        }
        ensure!(evs.len() <= 1, "{name}: Failed Events {evs:?}");
        ensure!(Instant::now() < deadline, "{name}: no Failed Event");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(t)
}

pub async fn invalid_spec_from_the_job_api(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    // Only the Job API knows which downward-API fields exist, and that an
    // extended resource needs a limit equal to its request.
    ns.apply(&sh_task(
        "bad-ref",
        "echo never",
        &env("  - {name: FROM, valueFrom: {fieldRef: {fieldPath: spec.nonexistent}}}\n"),
    ))?;
    ns.apply(&sh_task(
        "gpu",
        "echo never",
        &resources("    requests: {example.com/gpu: \"1\"}\n"),
    ))?;
    let cases: [(&str, &[&str]); 2] = [
        (
            "bad-ref",
            &[
                "is invalid",
                "].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.nonexistent\"",
                "field label not supported",
            ],
        ),
        ("gpu", &["is invalid", "Limit must be set"]),
    ];
    let mut seen = Vec::new();
    for (name, says) in cases {
        let t = fails_invalid(&ns, name, says).await?;
        seen.push((name, t["metadata"]["resourceVersion"].clone()));
    }
    let jobs = ns.k(&["get", "jobs", "-o", "name"])?;
    ensure!(jobs.trim().is_empty(), "Jobs exist: {jobs}");
    // No retry loop: over 10 s the operator tries no create again and
    // writes nothing more to the Tasks.
    let first: Vec<usize> = {
        let mut v = Vec::new();
        for (name, _) in &seen {
            v.push(refused_creates(&c, &ns, name).await?);
        }
        v
    };
    ensure!(
        first.iter().all(|n| *n == 1),
        "refused creates per Task {first:?}, want one each"
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    let api = tasks(&ns.client, &ns.name);
    for (name, rv) in &seen {
        let now = serde_json::to_value(api.get(name).await?)?;
        ensure!(
            now["metadata"]["resourceVersion"] == *rv,
            "{name} was written again: {}",
            now["status"]
        );
        let n = refused_creates(&c, &ns, name).await?;
        ensure!(n == 1, "{name}: {n} refused creates after 10 s, want 1");
        let evs = failed_events(&ns, name).await?;
        ensure!(
            evs.len() == 1 && evs[0].1 == 1,
            "{name}: Failed Events {evs:?}"
        );
    }
    println!("invalid spec: bad-ref and gpu failed InvalidSpec after one refused create each");
    Ok(())
}

/// Under a cap, a Task whose Job the server refuses fails on its own and the
/// Task behind it starts: the refusal never blocks the queue nor fails the
/// Task whose admission met it.
pub async fn invalid_spec_leaves_the_queue(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.cap_active(1)?;
    let api = tasks(&ns.client, &ns.name);
    ns.apply(&sh_task("holder", "sleep 300", ""))?;
    wait::condition(&api, "holder", "Running", MINUTE).await?;
    ns.apply(&sh_task(
        "bad",
        "echo never",
        &format!(
            "  priority: 5\n{}",
            env("  - {name: FROM, valueFrom: {fieldRef: {fieldPath: spec.nonexistent}}}\n")
        ),
    ))?;
    ns.apply(&sh_task("after", "echo ok > \"$LONGTASK_RESULT\"", ""))?;
    for name in ["bad", "after"] {
        wait::until(MINUTE, &format!("{name} Queued"), || {
            let api = api.clone();
            async move {
                let t = serde_json::to_value(api.get(name).await?)?;
                Ok(t["status"]["phase"] == "Queued")
            }
        })
        .await?;
    }
    // Frees the slot: the operator's drain meets bad's refusal first.
    ns.k(&[
        "patch",
        "task",
        "holder",
        "--type=merge",
        "-p",
        r#"{"spec":{"cancel":true}}"#,
    ])?;
    fails_invalid(
        &ns,
        "bad",
        &["fieldPath: Invalid value: \"spec.nonexistent\""],
    )
    .await?;
    let t = wait::condition(&api, "after", "Finished", MINUTE).await?;
    ensure!(
        t["status"]["phase"] == "Completed"
            && t["status"]["result"].as_str().map(str::trim) == Some("ok"),
        "after: {}",
        t["status"]
    );
    let h = wait::condition(&api, "holder", "Finished", MINUTE).await?;
    ensure!(
        h["status"]["reason"] == "Cancelled",
        "holder: {}",
        h["status"]
    );
    Ok(())
}
