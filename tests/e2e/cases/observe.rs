//! What users see: progress in status, Events per transition, /metrics
//! through the API server's pod proxy, JSON logs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, openmetrics, operator, sh_task, tasks, wait};
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);

/// A program reporting 10 steps shows rising percents while it runs.
pub async fn progress_rises(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let script = r#"for i in 1 2 3 4 5 6 7 8 9 10; do sleep 2.5; echo "$i/10 step $i" >> "$LONGTASK_PROGRESS"; done; echo ok > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task("steps", script, ""))?;
    let api = tasks(&ns.client, &ns.name);
    let deadline = Instant::now() + 2 * MINUTE;
    let mut seen: Vec<i64> = Vec::new();
    let mut eta = false;
    let mut table = String::new();
    loop {
        ensure!(
            Instant::now() < deadline,
            "timed out; percents seen {seen:?}"
        );
        let t = serde_json::to_value(api.get("steps").await?)?;
        let st = &t["status"];
        if st["phase"] == "Running"
            && let Some(p) = st["progress"]["percent"].as_i64()
        {
            if seen.last() != Some(&p) {
                seen.push(p);
                table = ns.k(&["get", "task", "steps"])?;
            }
            eta |= st["progress"]["eta"].is_string();
        }
        if wait::has_condition(&t, "Finished") {
            ensure!(st["phase"] == "Completed", "status: {st}");
            ensure!(st["progress"]["percent"] == 100, "final progress: {st}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("progress: percents seen while running {seen:?}");
    ensure!(seen.len() >= 3, "too few progress updates: {seen:?}");
    ensure!(seen.windows(2).all(|w| w[0] < w[1]), "not rising: {seen:?}");
    ensure!(eta, "no eta while running");
    ensure!(
        table.contains("PROGRESS") && table.contains('%'),
        "kubectl get task:\n{table}"
    );
    Ok(())
}

/// Events of kind Task named `name` in `ns`: reason → how many Event objects.
pub(super) async fn events_of(ns: &TestNs, name: &str) -> Result<BTreeMap<String, Vec<Event>>> {
    let api: Api<Event> = Api::namespaced(ns.client.clone(), &ns.name);
    let mut out: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for e in api.list(&ListParams::default()).await?.items {
        let r = e.regarding.as_ref();
        if r.and_then(|r| r.kind.as_deref()) == Some("Task")
            && r.and_then(|r| r.name.as_deref()) == Some(name)
        {
            out.entry(e.reason.clone().unwrap_or_default())
                .or_default()
                .push(e);
        }
    }
    Ok(out)
}

/// Each transition publishes one Event on the Task, once.
pub async fn events_tell_the_story(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task("ok", "echo ok", ""))?;
    ns.apply(&sh_task("flaky", "exit 3", "  retries: 1\n"))?;
    ns.apply(&sh_task(
        "huge",
        "echo never",
        "  resources:\n    requests:\n      cpu: \"1000\"\n",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    wait::condition(&api, "huge", "Waiting", MINUTE).await?;
    ns.k(&[
        "patch",
        "task",
        "huge",
        "--type=merge",
        "-p",
        r#"{"spec":{"cancel":true}}"#,
    ])?;
    let want: [(&str, &[&str]); 3] = [
        ("ok", &["Started", "Completed"]),
        ("flaky", &["Started", "Retrying", "Failed"]),
        ("huge", &["Started", "Waiting", "Cancelled"]),
    ];
    for (name, _) in want {
        wait::condition(&api, name, "Finished", MINUTE).await?;
    }
    for (name, reasons) in want {
        let deadline = Instant::now() + MINUTE;
        let got = loop {
            let got = events_of(&ns, name).await?;
            if reasons.iter().all(|r| got.contains_key(*r)) {
                break got;
            }
            ensure!(
                Instant::now() < deadline,
                "{name}: Events {:?}, want {reasons:?}",
                got.keys().collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        for (reason, evs) in &got {
            let repeats = evs
                .iter()
                .map(|e| e.series.as_ref().map_or(1, |s| s.count))
                .sum::<i32>();
            ensure!(
                repeats == 1,
                "{name}: Event {reason} published {repeats} times"
            );
        }
        let wanted: Vec<&str> = got.keys().map(String::as_str).collect();
        println!("events: {name}: {wanted:?}");
    }
    let retry = &events_of(&ns, "flaky").await?["Retrying"][0];
    let note = retry.note.clone().unwrap_or_default();
    ensure!(
        note.contains("attempt 2") && note.contains("exit code 3"),
        "Retrying note: {note}"
    );
    let described = ns.k(&["describe", "task", "flaky"])?;
    ensure!(
        described.contains("Retrying") && described.contains("BackoffLimitExceeded"),
        "kubectl describe task flaky:\n{described}"
    );
    Ok(())
}

/// /metrics parses as OpenMetrics and its counters move as Tasks finish.
pub async fn metrics_move(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let pod = operator::leader_pod(&c).await?;
    let before = operator::scrape(&c, &pod).await?;
    // This namespace's own series: other cases' Tasks (in their own
    // namespaces) cannot move them, and the namespace is new, so each must
    // go from absent (0) to exactly 1.
    let mine = |f: &[openmetrics::Family], outcome, reason| {
        openmetrics::value(
            f,
            "longtask_task_results_total",
            &[
                ("namespace", ns.name.as_str()),
                ("outcome", outcome),
                ("reason", reason),
            ],
        )
    };
    let done = |f: &[openmetrics::Family]| mine(f, "completed", "Succeeded");
    let failed = |f: &[openmetrics::Family]| mine(f, "failed", "BackoffLimitExceeded");
    ns.apply(&sh_task("good", "echo ok", ""))?;
    ns.apply(&sh_task("bad", "exit 1", ""))?;
    let api = tasks(&ns.client, &ns.name);
    for n in ["good", "bad"] {
        wait::condition(&api, n, "Finished", MINUTE).await?;
    }
    // The counter moves just after the status write the wait saw: scrape
    // until both moved (or 10 s passed), then require exactly 1 each.
    let last = std::sync::Mutex::new(Vec::new());
    let moved = wait::until(Duration::from_secs(10), "own results counted", || async {
        let f = operator::scrape(&c, &pod).await?;
        let both = done(&f) >= 1.0 && failed(&f) >= 1.0;
        *last.lock().unwrap() = f;
        Ok(both)
    })
    .await;
    let after = last.into_inner().unwrap();
    if after.is_empty() {
        moved?;
    }
    let names: Vec<&str> = after.iter().map(|f| f.name.as_str()).collect();
    for want in [
        "longtask_tasks",
        "longtask_task_results",
        "longtask_task_duration_seconds",
        "longtask_task_queue_seconds",
        "longtask_job_to_task_seconds",
        "longtask_reconciles",
        "longtask_reconcile_duration_seconds",
        "longtask_api_requests",
        "longtask_events",
    ] {
        ensure!(names.contains(&want), "{want} missing from {names:?}");
    }
    ensure!(
        done(&before) == 0.0 && done(&after) == 1.0,
        "completed/Succeeded in {}: {} -> {}, want 0 -> 1",
        ns.name,
        done(&before),
        done(&after)
    );
    ensure!(
        failed(&before) == 0.0 && failed(&after) == 1.0,
        "failed/BackoffLimitExceeded in {}: {} -> {}, want 0 -> 1",
        ns.name,
        failed(&before),
        failed(&after)
    );
    // The histograms carry no namespace (bounded labels), so other cases'
    // Tasks move them too: these only show that they are fed at all.
    let count = |f: &[openmetrics::Family], n| openmetrics::value(f, n, &[]);
    for h in [
        "longtask_task_duration_seconds_count",
        "longtask_job_to_task_seconds_count",
    ] {
        ensure!(
            count(&after, h) >= count(&before, h) + 2.0,
            "{h} did not move"
        );
    }
    let completed = openmetrics::value(&after, "longtask_tasks", &[("phase", "Completed")]);
    ensure!(
        completed >= 1.0,
        "longtask_tasks{{phase=Completed}} = {completed}"
    );
    println!(
        "metrics: {} families; results completed/Succeeded {} -> {}, failed/BackoffLimitExceeded {} -> {}",
        after.len(),
        done(&before),
        done(&after),
        failed(&before),
        failed(&after)
    );
    Ok(())
}

/// With --log-format json every line is JSON, and reconcile lines carry the
/// Task's namespace and name.
pub async fn logs_are_json(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task("logged", "echo ok", ""))?;
    let api = tasks(&ns.client, &ns.name);
    wait::condition(&api, "logged", "Finished", MINUTE).await?;
    let pod = operator::leader_pod(&c).await?;
    let mut ours = 0;
    let mut lines = 0;
    let deadline = Instant::now() + MINUTE;
    while ours == 0 {
        if Instant::now() > deadline {
            bail!(
                "no reconcile line for {}/logged in the log of {pod}",
                ns.name
            );
        }
        let log = c.kubectl.run(&["-n", SYSTEM_NS, "logs", &pod])?;
        (ours, lines) = (0, 0);
        for line in log.lines() {
            lines += 1;
            let v: Value =
                serde_json::from_str(line).with_context(|| format!("not JSON: {line:?}"))?;
            let Some(span) = v.get("span").filter(|s| s["name"] == "reconcile") else {
                continue;
            };
            ensure!(
                span["namespace"].is_string() && span["task"].is_string(),
                "reconcile line without namespace/task: {line}"
            );
            if span["namespace"] == ns.name.as_str() && span["task"] == "logged" {
                ours += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "logs: {lines} JSON lines, {ours} reconcile lines for {}/logged",
        ns.name
    );
    Ok(())
}
