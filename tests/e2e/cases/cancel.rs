//! Cancel: `spec.cancel: true` (the only mutable field, false to true only)
//! stops the Job gracefully; the program gets SIGTERM, writes a partial
//! result, and the Task ends Failed Cancelled with that result.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail, ensure};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};

const MINUTE: Duration = Duration::from_secs(60);

pub async fn cancel_stops_gracefully(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let log = JobLog::start(&ns.client, &ns.name);
    let script = r#"n=0; trap 'echo "partial-$n" > "$LONGTASK_RESULT"; exit 143' TERM; while true; do n=$((n+1)); echo "step $n"; sleep 0.2; done"#;
    ns.apply(&sh_task("stoppable", script, ""))?;
    ns.apply(&sh_task("early", "sleep 300", ""))?;
    let api = tasks(&ns.client, &ns.name);
    wait::condition(&api, "stoppable", "Running", MINUTE).await?;
    // Let it make some progress, then cancel.
    wait::until(MINUTE, "the program to print", || async {
        Ok(ns
            .k(&["logs", "job/stoppable"])
            .is_ok_and(|l| l.contains("step 3")))
    })
    .await?;
    // Other spec changes stay refused, with the existing message.
    match ns.k(&[
        "patch",
        "task",
        "stoppable",
        "--type=merge",
        "-p",
        r#"{"spec":{"retries":3}}"#,
    ]) {
        Ok(o) => bail!("a retries change was accepted: {o}"),
        Err(e) => ensure!(format!("{e:#}").contains("immutable"), "{e:#}"),
    }
    ns.cancel("stoppable")?;
    let t = wait::condition(&api, "stoppable", "Failed", MINUTE).await?;
    let st = &t["status"];
    ensure!(st["reason"] == "Cancelled", "status: {st}");
    let result = st["result"].as_str().unwrap_or_default();
    ensure!(result.starts_with("partial-"), "partial result: {st}");
    ensure!(!wait::has_condition(&t, "Complete"), "Complete too: {st}");
    // Back to false: refused.
    match ns.k(&[
        "patch",
        "task",
        "stoppable",
        "--type=merge",
        "-p",
        r#"{"spec":{"cancel":false}}"#,
    ]) {
        Ok(o) => bail!("cancel true→false was accepted: {o}"),
        Err(e) => ensure!(format!("{e:#}").contains("false to true"), "{e:#}"),
    }
    // A Task cancelled while its program sleeps without a trap: Cancelled, no result.
    wait::condition(&api, "early", "Running", MINUTE).await?;
    ns.k(&[
        "patch",
        "task",
        "early",
        "--type=merge",
        "-p",
        r#"{"spec":{"cancel":true}}"#,
    ])?;
    let t = wait::condition(&api, "early", "Failed", MINUTE).await?;
    ensure!(
        t["status"]["reason"] == "Cancelled",
        "early: {}",
        t["status"]
    );
    log.one_each(["stoppable", "early"])?;
    // The Job ran no new pod after the cancel.
    let job = ns.k(&["get", "job", "stoppable", "-o", "jsonpath={.spec.suspend}"])?;
    ensure!(job == "true", "Job suspend: {job:?}");
    Ok(())
}
