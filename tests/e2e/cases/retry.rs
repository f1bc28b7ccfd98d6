//! What is worth retrying (issue 15): a pod evicted through the Eviction
//! API runs again without using a retry, and the Task shows the eviction;
//! an exit code listed in spec.failOnExitCodes fails at once while another
//! is retried; bad lists are refused at `kubectl apply`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, EvictParams, ListParams};
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};

use super::observe::events_of;
use super::validation::refused;

const MINUTE: Duration = Duration::from_secs(60);

/// Evicts the running pod of a Task with `retries: 0`: were the eviction
/// charged, the Task would fail. It completes in a second pod, with one
/// attempt, a disruption count of 1 naming the evicted pod, and a
/// Disrupted Event; the Job counts no failure. The program sleeps 40 s so
/// the eviction lands while it runs even when a loaded node reports the pod
/// `Running` late (with 15 s, on container nodes in CI, the first pod once
/// wrote its result before the eviction reached it).
pub async fn evicted_pod_uses_no_retry(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task(
        "evicted",
        r#"sleep 40; echo "done in $LONGTASK_POD_NAME" > "$LONGTASK_RESULT""#,
        "  retries: 0\n",
    ))?;
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let lp = ListParams::default().labels("longtask.dev/task-name=evicted");
    let running = |list: Vec<Pod>| {
        list.into_iter()
            .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .and_then(|p| p.metadata.name)
    };
    wait::until(MINUTE, "the first pod to run", || async {
        Ok(running(pods.list(&lp).await?.items).is_some())
    })
    .await?;
    let first = running(pods.list(&lp).await?.items).context("no running pod")?;
    // The Eviction API (policy/v1), as `kubectl drain` uses it.
    pods.evict(&first, &EvictParams::default())
        .await
        .with_context(|| format!("evicting {first}"))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "evicted", "Complete", Duration::from_secs(150)).await?;
    let st = &t["status"];
    ensure!(
        st["attempts"] == 1,
        "attempts charged for the eviction: {st}"
    );
    ensure!(st["disruptions"] == 1, "disruptions: {st}");
    let last = &st["lastDisruption"];
    ensure!(
        last["pod"] == first.as_str() && last["reason"] == "EvictionByEvictionAPI",
        "lastDisruption, want pod {first} evicted: {st}"
    );
    let result = st["result"].as_str().unwrap_or_default();
    ensure!(
        result.starts_with("done in ") && !result.contains(&first),
        "the result must come from the replacement pod, not {first}: {st}"
    );
    let job: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    let js = job.get("evicted").await?.status.unwrap_or_default();
    ensure!(
        js.failed.unwrap_or(0) == 0 && js.succeeded == Some(1),
        "the Job counted the eviction as a failure: {js:?}"
    );
    let events = events_of(&ns, "evicted").await?;
    let note = events
        .get("Disrupted")
        .and_then(|e| e.first())
        .and_then(|e| e.note.clone())
        .unwrap_or_default();
    ensure!(
        note.contains(&first) && note.contains("evicted") && note.contains("without using a retry"),
        "Disrupted Event: {note:?} (events: {:?})",
        events.keys().collect::<Vec<_>>()
    );
    ensure!(
        !events.contains_key("Retrying"),
        "an eviction is no retry: {:?}",
        events.keys().collect::<Vec<_>>()
    );
    Ok(())
}

/// An exit code in spec.failOnExitCodes fails the Task at once, with the
/// reason naming the rule, though retries are left; another exit code is
/// retried as spec.retries says.
pub async fn listed_exit_code_fails_at_once(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task(
        "fatal",
        "echo 'bad input' >&2; exit 3",
        "  retries: 3\n  failOnExitCodes: [64, 3]\n",
    ))?;
    ns.apply(&sh_task(
        "flaky",
        "exit 4",
        "  retries: 1\n  failOnExitCodes: [3]\n",
    ))?;
    // Shard 1 exits 3: it fails at once (FailIndex), the others complete.
    ns.apply(&sh_task(
        "sharded",
        r#"[ "$LONGTASK_SHARD" = 1 ] && exit 3; echo ok > "$LONGTASK_RESULT""#,
        "  shards: 3\n  retries: 2\n  failOnExitCodes: [3]\n",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "fatal", "Failed", MINUTE).await?;
    let st = &t["status"];
    ensure!(
        st["reason"] == "FailOnExitCode" && st["exitCode"] == 3 && st["attempts"] == 1,
        "want FailOnExitCode after one attempt: {st}"
    );
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(
        msg.contains("code 3")
            && msg.contains("spec.failOnExitCodes")
            && msg.contains("without retrying"),
        "the message must name the rule: {msg:?}"
    );
    let failed = t["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Failed").cloned())
        .unwrap_or_default();
    ensure!(
        failed["reason"] == "FailOnExitCode",
        "Failed condition: {failed}"
    );
    let t = wait::condition(&api, "flaky", "Failed", MINUTE).await?;
    let st = &t["status"];
    ensure!(
        st["reason"] == "BackoffLimitExceeded" && st["exitCode"] == 4 && st["attempts"] == 2,
        "exit code 4 is not listed: retried once, then BackoffLimitExceeded: {st}"
    );
    let t = wait::condition(&api, "sharded", "Failed", MINUTE).await?;
    let st = &t["status"];
    ensure!(
        st["reason"] == "FailOnExitCode"
            && st["shards"]["failed"] == 1
            && st["shards"]["succeeded"] == 2
            && st["attempts"] == 3,
        "shard 1 fails at once, the other two complete, 3 pods in all: {st}"
    );
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(msg.contains("shards 1 exited"), "message: {msg:?}");
    Ok(())
}

/// Bad lists are refused at `kubectl apply` with a message naming the
/// field, and the list is as immutable as the rest of the spec.
pub async fn bad_exit_code_lists_refused(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    for (what, list, words) in [
        (
            "zero",
            "[1, 0]",
            &["spec.failOnExitCodes", "0 means success"][..],
        ),
        (
            "duplicate",
            "[3, 7, 3]",
            &["spec.failOnExitCodes", "Duplicate value: 3"],
        ),
        ("above 255", "[256]", &["spec.failOnExitCodes", "1 to 255"]),
        ("negative", "[-1]", &["spec.failOnExitCodes", "1 to 255"]),
    ] {
        refused(
            &ns,
            what,
            &sh_task("codes", "true", &format!("  failOnExitCodes: {list}\n")),
            words,
        )?;
    }
    refused(
        &ns,
        "deleteAfterSeconds -1",
        &sh_task("keep", "true", "  deleteAfterSeconds: -1\n"),
        &["spec.deleteAfterSeconds"],
    )?;
    ns.apply(&sh_task("fixed", "sleep 1", "  failOnExitCodes: [3]\n"))?;
    refused(
        &ns,
        "failOnExitCodes changed",
        &sh_task("fixed", "sleep 1", "  failOnExitCodes: [3, 4]\n"),
        &["immutable"],
    )?;
    refused(
        &ns,
        "failOnExitCodes removed",
        &sh_task("fixed", "sleep 1", ""),
        &["immutable"],
    )?;
    refused(
        &ns,
        "deleteAfterSeconds added",
        &sh_task(
            "fixed",
            "sleep 1",
            "  failOnExitCodes: [3]\n  deleteAfterSeconds: 5\n",
        ),
        &["immutable"],
    )?;
    let explain = ns.k(&["explain", "task.spec.failOnExitCodes"])?;
    ensure!(
        explain.contains("without using") && explain.contains("Default"),
        "kubectl explain task.spec.failOnExitCodes:\n{explain}"
    );
    let explain = ns.k(&["explain", "task.status.disruptions"])?;
    ensure!(
        explain.contains("eviction"),
        "kubectl explain task.status.disruptions:\n{explain}"
    );
    Ok(())
}
