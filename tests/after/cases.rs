//! The cases of `spec.after`, each against the real API server, operator
//! and worker.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use kube::api::Api;
use longtask_e2e::tracks::Track;
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);

/// `spec.after` lines for `sh_task`'s extra spec: each upstream must succeed.
fn after(names: &[&str]) -> String {
    let mut s = "  after:\n".to_owned();
    for n in names {
        s.push_str(&format!("  - name: {n}\n"));
    }
    s
}

/// Waits until Task `name` is Pending, waiting for its upstreams, and
/// returns its status.
async fn pending(ns: &TestNs, name: &str) -> Result<Value> {
    let t = wait::condition(&tasks(&ns.client, &ns.name), name, "Waiting", MINUTE).await?;
    let st = t["status"].clone();
    ensure!(
        st["phase"] == "Pending" && st["reason"] == "WaitingForUpstream",
        "{name} waits, but not for its upstreams: {st}"
    );
    Ok(st)
}

/// Waits until Task `name` has Failed and returns its status.
async fn failed(ns: &TestNs, name: &str) -> Result<Value> {
    let t = wait::condition(&tasks(&ns.client, &ns.name), name, "Failed", MINUTE).await?;
    Ok(t["status"].clone())
}

/// The creation time of Job `name` and the completion time of Task
/// `upstream`, in that order: a downstream's Job must not be older.
async fn started_after(ns: &TestNs, name: &str, upstream: &str) -> Result<()> {
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    let job = jobs.get(name).await?;
    let created = job.metadata.creation_timestamp.context("job created")?.0;
    let up = ns.status(upstream).await?;
    let done: k8s_openapi::jiff::Timestamp = up["completedAt"]
        .as_str()
        .context("upstream completedAt")?
        .parse()?;
    ensure!(
        created >= done,
        "Job {name} created at {created}, before its upstream {upstream} completed at {done}"
    );
    Ok(())
}

/// A → B → C, applied downstream first: C waits for B (not yet created),
/// B for A; then each runs in order, B's program reading A's result and
/// C's printing B's, with its exit code.
pub async fn chain_hands_results_down(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let started = Instant::now();
    let jobs = Track::unfinished_jobs(&ns.client, &ns.name);
    let c_script = r#"printf 'b said %s, exit %s' "$(cat "$LONGTASK_INPUTS/b/result")" "$(cat "$LONGTASK_INPUTS/b/exit-code")" > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task("c", c_script, &after(&["b"])))?;
    let st = pending(&ns, "c").await?;
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(
        msg == "waiting for upstream b to be created",
        "message: {msg:?}"
    );
    let b_script = r#"echo $(( $(cat "$LONGTASK_INPUTS/a/result") * 3 )) > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task("b", b_script, &after(&["a"])))?;
    pending(&ns, "b").await?;
    // Waiting Tasks have no Job: nothing holds a pod or quota.
    ensure!(
        jobs.order().is_empty(),
        "Jobs while waiting: {:?}",
        jobs.order()
    );
    ns.apply(&sh_task("a", "echo 2 > \"$LONGTASK_RESULT\"", ""))?;
    let api = tasks(&ns.client, &ns.name);
    let c = wait::condition(&api, "c", "Complete", 2 * MINUTE).await?;
    let result = c["status"]["result"].as_str().unwrap_or_default();
    ensure!(result == "b said 6, exit 0", "C's result: {result:?}");
    ensure!(
        jobs.order() == ["a", "b", "c"],
        "Jobs made in the order {:?}",
        jobs.order()
    );
    started_after(&ns, "b", "a").await?;
    started_after(&ns, "c", "b").await?;
    println!(
        "chain_hands_results_down: a -> b -> c, C printed {result:?}, {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// An upstream that fails: its downstream (condition Succeeded) fails at
/// once, UpstreamFailed, with no Job and no pod ever made for it; one with
/// condition Finished runs and reads the upstream's exit code.
pub async fn upstream_failure_fails_without_a_pod(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let jobs = Track::unfinished_jobs(&ns.client, &ns.name);
    let pods = Track::running_pods(&ns.client, &ns.name, None);
    let finished = "  after:\n  - name: up\n    condition: Finished\n";
    let read_code = r#"cat "$LONGTASK_INPUTS/up/exit-code" > "$LONGTASK_RESULT""#;
    ns.apply(
        &[
            sh_task("down", "echo never", &after(&["up"])),
            sh_task("either", read_code, finished),
        ]
        .join("---\n"),
    )?;
    pending(&ns, "down").await?;
    ns.apply(&sh_task("up", "sleep 1; exit 3", ""))?;
    let st = failed(&ns, "down").await?;
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(
        st["reason"] == "UpstreamFailed" && msg.contains("upstream up failed"),
        "down: {st}"
    );
    let api = tasks(&ns.client, &ns.name);
    let either = wait::condition(&api, "either", "Complete", MINUTE).await?;
    ensure!(
        either["status"]["result"] == "3",
        "either read: {}",
        either["status"]["result"]
    );
    let (made, ran) = (jobs.order(), pods.order());
    ensure!(
        !made.iter().any(|j| j == "down"),
        "a Job for down: {made:?}"
    );
    ensure!(
        !ran.iter().any(|p| p.starts_with("down-")),
        "a pod for down: {ran:?}"
    );
    println!("upstream_failure_fails_without_a_pod: down {msg:?}; Jobs {made:?}");
    Ok(())
}

/// ring-a → ring-b → ring-c → ring-a: every Task of the cycle fails
/// DependencyCycle, none runs. (Not x, y, z: YAML reads `y` as a boolean.)
pub async fn cycle_fails_every_task(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let jobs = Track::unfinished_jobs(&ns.client, &ns.name);
    let ring = ["ring-a", "ring-b", "ring-c"];
    let docs: Vec<String> = (0..3)
        .map(|i| sh_task(ring[i], "true", &after(&[ring[(i + 1) % 3]])))
        .collect();
    ns.apply(&docs.join("---\n"))?;
    for name in ring {
        let st = failed(&ns, name).await?;
        ensure!(st["reason"] == "DependencyCycle", "{name}: {st}");
        let msg = st["message"].as_str().unwrap_or_default();
        ensure!(
            msg.contains(" -> "),
            "{name}'s message names no cycle: {msg}"
        );
    }
    ensure!(jobs.order().is_empty(), "Jobs: {:?}", jobs.order());
    println!("cycle_fails_every_task: {ring:?} Failed DependencyCycle, no Job");
    Ok(())
}

/// A downstream whose upstream does not exist waits for it and runs once
/// it is created; one whose upstream never comes fails when
/// `startTimeoutSeconds` runs out.
pub async fn missing_upstream_created_later(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let bounded = format!("{}  startTimeoutSeconds: 3\n", after(&["never"]));
    ns.apply(
        &[
            sh_task(
                "waits",
                "cat \"$LONGTASK_INPUTS/late/result\" > \"$LONGTASK_RESULT\"",
                &after(&["late"]),
            ),
            sh_task("gives-up", "true", &bounded),
        ]
        .join("---\n"),
    )?;
    pending(&ns, "waits").await?;
    let st = failed(&ns, "gives-up").await?;
    ensure!(st["reason"] == "UpstreamMissing", "gives-up: {st}");
    // Still waiting after the other one gave up.
    pending(&ns, "waits").await?;
    ns.apply(&sh_task("late", "echo here > \"$LONGTASK_RESULT\"", ""))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "waits", "Complete", MINUTE).await?;
    ensure!(t["status"]["result"] == "here\n", "waits: {}", t["status"]);
    println!("missing_upstream_created_later: gives-up {}", st["message"]);
    Ok(())
}

/// The API server refuses a Task that waits for itself, or names an
/// upstream twice, and a CronTask template with `after`.
pub async fn refused_at_apply(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let own = ns.apply(&sh_task("me", "true", &after(&["me"])));
    let err = format!(
        "{:#}",
        own.err().context("a Task after itself was accepted")?
    );
    ensure!(err.contains("may not name the Task itself"), "{err}");
    let twice = ns.apply(&sh_task("twice", "true", &after(&["a", "a"])));
    let err = format!(
        "{:#}",
        twice.err().context("a duplicate upstream was accepted")?
    );
    ensure!(err.contains("Duplicate value"), "{err}");
    let cron = "apiVersion: longtask.dev/v1alpha1\nkind: CronTask\nmetadata:\n  name: nightly\nspec:\n  schedule: '@daily'\n  taskTemplate:\n    spec:\n      command: [\"true\"]\n      after:\n      - name: a\n";
    let err = format!(
        "{:#}",
        ns.apply(cron)
            .err()
            .context("a CronTask with after was accepted")?
    );
    ensure!(
        err.contains("taskTemplate.spec.after is not supported"),
        "{err}"
    );
    Ok(())
}

/// 1 → 50 → 1: the root's result reaches 50 Tasks, each adds its index,
/// and the last sums the 50 results.
pub async fn fan_in_sums_fifty(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 50;
    let started = Instant::now();
    let mids: Vec<String> = (0..N).map(|i| format!("mid-{i:02}")).collect();
    let mut docs = vec![sh_task(
        "sum",
        r#"s=0; for d in "$LONGTASK_INPUTS"/*/; do s=$((s + $(cat "$d/result"))); done; echo $s > "$LONGTASK_RESULT""#,
        &after(&mids.iter().map(String::as_str).collect::<Vec<_>>()),
    )];
    for (i, m) in mids.iter().enumerate() {
        let script = format!(
            r#"echo $(( $(cat "$LONGTASK_INPUTS/root/result") + {i} )) > "$LONGTASK_RESULT""#
        );
        docs.push(sh_task(m, &script, &after(&["root"])));
    }
    docs.push(sh_task("root", "echo 1 > \"$LONGTASK_RESULT\"", ""));
    ns.apply(&docs.join("---\n"))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "sum", "Complete", 5 * MINUTE).await?;
    // Each of the 50 adds its index to the root's 1.
    let want: usize = (0..N).map(|i| 1 + i).sum();
    ensure!(
        t["status"]["result"] == format!("{want}\n"),
        "sum: {}",
        t["status"]
    );
    println!(
        "fan_in_sums_fifty: 1 -> {N} -> 1 summed {want} in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The operator killed while Tasks wait: what it had seen is in their
/// status, so after the restart a downstream whose upstream completed runs
/// once (its Job made after that completion), and one whose upstream was
/// deleted while no operator ran fails UpstreamDeleted.
pub async fn restart_keeps_what_was_seen(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let started = Instant::now();
    let jobs = Track::unfinished_jobs(&ns.client, &ns.name);
    let read_u = r#"cat "$LONGTASK_INPUTS/u/result" > "$LONGTASK_RESULT""#;
    ns.apply(
        &[
            sh_task("u", "sleep 4; echo 5 > \"$LONGTASK_RESULT\"", ""),
            sh_task("d", read_u, &after(&["u"])),
            sh_task("v", "sleep 600", ""),
            sh_task("orphan", "true", &after(&["v"])),
        ]
        .join("---\n"),
    )?;
    let st = pending(&ns, "orphan").await?;
    ensure!(
        st["upstreams"][0]["name"] == "v" && st["upstreams"][0]["uid"].is_string(),
        "orphan recorded no upstream: {st}"
    );
    pending(&ns, "d").await?;
    longtask_e2e::operator::delete_pods(&c.kubectl)?;
    ns.k(&["delete", "task", "v", "--wait=false"])?;
    let st = failed(&ns, "orphan").await?;
    ensure!(st["reason"] == "UpstreamDeleted", "orphan: {st}");
    let api = tasks(&ns.client, &ns.name);
    let d = wait::condition(&api, "d", "Complete", 2 * MINUTE).await?;
    ensure!(d["status"]["result"] == "5\n", "d: {}", d["status"]);
    started_after(&ns, "d", "u").await?;
    let made = jobs.order();
    ensure!(
        made.iter().filter(|j| *j == "d").count() == 1 && !made.iter().any(|j| j == "orphan"),
        "Jobs: {made:?}"
    );
    println!(
        "restart_keeps_what_was_seen: d ran once after u, orphan {}; {:.1}s",
        st["message"],
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The leader killed twice while a 1 → 10 → 1 graph runs: every Task has
/// exactly one Job in its life, each made after its upstreams completed,
/// and the sink sums what the ten handed down.
pub async fn leader_killed_mid_graph(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 10;
    let started = Instant::now();
    let log = longtask_e2e::jobs::JobLog::start(&ns.client, &ns.name);
    let mids: Vec<String> = (0..N).map(|i| format!("m-{i}")).collect();
    let names: Vec<&str> = mids.iter().map(String::as_str).collect();
    let mut docs = vec![sh_task(
        "sink",
        r#"s=0; for d in "$LONGTASK_INPUTS"/*/; do s=$((s + $(cat "$d/result"))); done; echo $s > "$LONGTASK_RESULT""#,
        &after(&names),
    )];
    for (i, m) in mids.iter().enumerate() {
        let script = format!(
            r#"sleep 2; echo $(( $(cat "$LONGTASK_INPUTS/root/result") + {i} )) > "$LONGTASK_RESULT""#
        );
        docs.push(sh_task(m, &script, &after(&["root"])));
    }
    docs.push(sh_task(
        "root",
        "sleep 2; echo 1 > \"$LONGTASK_RESULT\"",
        "",
    ));
    ns.apply(&docs.join("---\n"))?;
    let api = tasks(&ns.client, &ns.name);
    // Once while the root runs, once when the root is done and the ten run.
    longtask_e2e::operator::delete_pods(&c.kubectl)?;
    wait::condition(&api, "root", "Complete", 2 * MINUTE).await?;
    longtask_e2e::operator::delete_pods(&c.kubectl)?;
    let t = wait::condition(&api, "sink", "Complete", 3 * MINUTE).await?;
    let want: usize = (0..N).map(|i| 1 + i).sum();
    ensure!(
        t["status"]["result"] == format!("{want}\n"),
        "sink: {}",
        t["status"]
    );
    log.one_each(names.iter().copied().chain(["root", "sink"]))?;
    for m in &names {
        started_after(&ns, m, "root").await?;
        started_after(&ns, "sink", m).await?;
    }
    println!(
        "leader_killed_mid_graph: 1 -> {N} -> 1 with two kills, one Job each, in order, sum {want}; {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
