//! Faults around one Task: its worker SIGKILLed mid-run; its result
//! ConfigMap deleted before the operator read it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, operator, procs, sh_task, tasks, wait};

const MINUTE: Duration = Duration::from_secs(60);

/// The worker is killed with SIGKILL on each of its two attempts: retried
/// once (retries: 1), then Failed naming the signal.
pub async fn worker_sigkill(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let log = JobLog::start(&ns.client, &ns.name);
    let marker = format!("longtask-e2e-sigkill-{}", ns.name);
    ns.apply(&sh_task(
        "victim",
        &format!("sleep 300; echo {marker}"),
        "  retries: 1\n",
    ))?;
    let mut killed = Vec::new();
    let mut pods_done: Vec<String> = Vec::new();
    for attempt in 1..=2 {
        // The attempt's own pod, then its worker by the pod name in its
        // environment: never a process of an earlier attempt.
        let mut pid = None;
        wait::until(MINUTE, &format!("worker of attempt {attempt}"), || {
            let pods = ns.k(&[
                "get",
                "pods",
                "-l=job-name=victim",
                "-o=jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
            ]);
            let found = pods.ok().and_then(|names| {
                names
                    .lines()
                    .filter(|n| !n.is_empty() && !pods_done.iter().any(|d| d == n))
                    .find_map(|pod| {
                        let var = format!("LONGTASK_POD_NAME={pod}");
                        let pids: Vec<i32> = procs::workers_with(&marker, &killed)
                            .into_iter()
                            .filter(|p| procs::with_env("longtask-worker", &var).contains(p))
                            .collect();
                        pids.first().map(|p| (pod.to_owned(), *p))
                    })
            });
            let done = found.is_some();
            pid = found;
            async move { Ok(done) }
        })
        .await?;
        let (pod, pid) = pid.unwrap_or_default();
        procs::signal(pid, "KILL")?;
        killed.push(pid);
        pods_done.push(pod);
    }
    let t = wait::condition(&tasks(&ns.client, &ns.name), "victim", "Failed", MINUTE).await?;
    let st = &t["status"];
    ensure!(st["reason"] == "BackoffLimitExceeded", "reason: {st}");
    ensure!(
        st["attempts"] == 2 && st["exitCode"] == 137,
        "attempts/exitCode: {st}"
    );
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(
        msg.contains("SIGKILL"),
        "message does not name the signal: {msg}"
    );
    ensure!(
        !wait::has_condition(&t, "Complete"),
        "both Complete and Failed: {st}"
    );
    log.one_each(["victim"])?;
    Ok(())
}

/// Scales the operator Deployment (exclusive cases only).
pub(super) fn scale(c: &Cluster, replicas: u32) -> Result<()> {
    c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "scale",
        "deployment/longtask-operator",
        &format!("--replicas={replicas}"),
    ])?;
    Ok(())
}

/// The Job succeeds while no operator runs, and its result ConfigMap is
/// deleted before any operator read it: Failed ResultMissing, not Running.
pub async fn result_deleted_unread(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let log = JobLog::start(&ns.client, &ns.name);
    ns.apply(&sh_task(
        "unread",
        "sleep 3; echo precious > \"$LONGTASK_RESULT\"",
        "",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    wait::condition(&api, "unread", "Running", MINUTE).await?;
    scale(&c, 0)?;
    let res = async {
        wait::until(MINUTE, "no operator pods", || async {
            Ok(operator::pods(&c.client).await?.is_empty())
        })
        .await?;
        ns.k(&[
            "wait",
            "--for=condition=Complete",
            "job/unread",
            "--timeout=60s",
        ])?;
        ns.k(&["delete", "configmap", "unread-result"])?;
        anyhow::Ok(())
    }
    .await;
    scale(&c, 2)?;
    res?;
    let t = wait::condition(&api, "unread", "Failed", Duration::from_secs(90)).await?;
    let st = &t["status"];
    ensure!(st["reason"] == "ResultMissing", "status: {st}");
    ensure!(
        st["phase"] == "Failed" && st.get("result").is_none(),
        "status: {st}"
    );
    log.one_each(["unread"])?;
    c.wait_operator("60s")?;
    Ok(())
}
