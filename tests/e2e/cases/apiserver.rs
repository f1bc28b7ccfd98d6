//! The API server restarted mid-run (SIGTERM, then SIGKILL): watches
//! resume, the operator does not crash-loop (a replica may restart once), every Task ends exactly once
//! with its result, and each had exactly one Job.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, root, sh_task, tasks, wait};

fn restart_apiserver(c: &Cluster, kill: bool) -> Result<()> {
    let mut cmd = Command::new(root().join("devcluster/devcluster"));
    cmd.args(["restart", "--dir"]).arg(&c.dir);
    if kill {
        cmd.arg("--kill");
    }
    let status = cmd
        .arg("apiserver")
        .status()
        .context("run devcluster restart")?;
    if !status.success() {
        bail!("devcluster restart apiserver: {status}");
    }
    Ok(())
}

/// Sum of the operator containers' restart counts.
fn operator_restarts(c: &Cluster) -> Result<u64> {
    let out = c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/name=longtask-operator",
        "-o",
        "jsonpath={range .items[*]}{.status.containerStatuses[0].restartCount}{\"\\n\"}{end}",
    ])?;
    Ok(out
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .sum())
}

pub async fn apiserver_restarted(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 6;
    let restarts_before = operator_restarts(&c)?;
    let log = JobLog::start(&ns.client, &ns.name);
    // Tasks that outlast both restarts, and one that ends between them.
    let docs: Vec<String> = (0..N)
        .map(|i| {
            let secs = if i == 0 { 1 } else { 20 + i };
            sh_task(
                &format!("steady-{i}"),
                &format!("sleep {secs}; echo steady-{i} > \"$LONGTASK_RESULT\""),
                "",
            )
        })
        .collect();
    ns.apply(&docs.join("---\n"))?;
    let api = tasks(&ns.client, &ns.name);
    wait::until(Duration::from_secs(30), "all Tasks Running", || {
        let api = api.clone();
        async move {
            let l = api.list(&Default::default()).await?;
            Ok(l.items.len() == N && l.items.iter().all(|t| !t.data["status"]["phase"].is_null()))
        }
    })
    .await?;
    restart_apiserver(&c, false)?;
    restart_apiserver(&c, true)?;
    for i in 0..N {
        let t = wait::condition(
            &api,
            &format!("steady-{i}"),
            "Complete",
            Duration::from_secs(120),
        )
        .await?;
        ensure!(
            t["status"]["result"].as_str().map(str::trim) == Some(&format!("steady-{i}")),
            "steady-{i}: {}",
            t["status"]
        );
    }
    let names: Vec<String> = (0..N).map(|i| format!("steady-{i}")).collect();
    log.one_each(names.iter().map(String::as_str))?;
    // A leader that cannot renew its Lease while the API server is away
    // steps down by exiting (as client-go's leader election does), so each
    // replica may restart once; more than that is a crash loop.
    let restarts = operator_restarts(&c)? - restarts_before;
    println!("apiserver_restarted: operator containers restarted {restarts} times");
    ensure!(
        restarts <= 2,
        "operator containers restarted {restarts} times: a crash loop"
    );
    c.wait_operator("60s")?;
    Ok(())
}
