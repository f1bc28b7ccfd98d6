//! Post-mortem that outlives the pod: the program's last 64 output lines
//! stay in status.logTail (and `kubectl describe task`) after the Job and
//! its pods are deleted (ttlSecondsAfterFinished).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};

pub async fn log_tail_outlives_the_pod(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let script = "for i in $(seq 1 100); do echo line-$i; done; sleep 0.5; echo 'boom: disk full' >&2; exit 4";
    ns.apply(&sh_task("crash", script, "  ttlSecondsAfterFinished: 1\n"))?;
    let api = tasks(&ns.client, &ns.name);
    wait::condition(&api, "crash", "Failed", Duration::from_secs(60)).await?;
    wait::until(
        Duration::from_secs(60),
        "the Job to be deleted by its TTL",
        || async { Ok(ns.k(&["get", "jobs", "-o", "name"])?.trim().is_empty()) },
    )
    .await?;
    let t = serde_json::to_value(api.get("crash").await?)?;
    let tail = t["status"]["logTail"].as_str().unwrap_or_default();
    let lines: Vec<&str> = tail.lines().collect();
    ensure!(lines.len() == 64, "{} lines: {tail:?}", lines.len());
    ensure!(
        lines.last() == Some(&"boom: disk full") && lines.contains(&"line-100"),
        "{tail:?}"
    );
    ensure!(
        !lines.contains(&"line-36"),
        "more than the last 64 lines: {tail:?}"
    );
    let described = ns.k(&["describe", "task", "crash"])?;
    ensure!(
        described.contains("boom: disk full"),
        "kubectl describe task:\n{described}"
    );
    Ok(())
}
