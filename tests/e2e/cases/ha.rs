//! High availability: two operator replicas, one leader by Lease. The
//! standby takes over within 15 s when the leader's pod is deleted or its
//! process frozen (SIGSTOP); a frozen leader that wakes up stops leading.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, operator, procs, sh_task, tasks, wait};

const FAILOVER_LIMIT: Duration = Duration::from_secs(15);

/// Waits until the Lease names a holder other than `old` and returns it.
pub async fn new_leader(c: &Cluster, old: Option<&str>, within: Duration) -> Result<String> {
    let got: std::sync::Mutex<Option<String>> = Default::default();
    wait::until(within, "a new leader", || async {
        let (h, _) = operator::leader(&c.client).await?;
        if h.is_some() && h.as_deref() != old {
            *got.lock().unwrap() = h;
            return Ok(true);
        }
        Ok(false)
    })
    .await?;
    let got = got.lock().unwrap().clone();
    got.context("no leader")
}

async fn completes(ns: &TestNs, name: &str) -> Result<()> {
    ns.apply(&sh_task(
        name,
        &format!("echo {name} > \"$LONGTASK_RESULT\""),
        "",
    ))?;
    let t = wait::condition(
        &tasks(&ns.client, &ns.name),
        name,
        "Complete",
        Duration::from_secs(60),
    )
    .await?;
    ensure!(
        t["status"]["result"].as_str().map(str::trim) == Some(name),
        "{name}: {}",
        t["status"]
    );
    Ok(())
}

pub async fn leader_failover(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let log = JobLog::start(&ns.client, &ns.name);
    let first = new_leader(&c, None, Duration::from_secs(60)).await?;
    wait::until(Duration::from_secs(60), "two operator pods", || async {
        Ok(operator::pods(&c.client).await?.len() == 2)
    })
    .await?;
    completes(&ns, "before").await?;

    // 1. The leader's pod is deleted.
    c.kubectl
        .run(&["-n", SYSTEM_NS, "delete", "pod", &first, "--wait=false"])?;
    let t0 = Instant::now();
    let second = new_leader(&c, Some(&first), FAILOVER_LIMIT).await?;
    let deleted = t0.elapsed();
    completes(&ns, "after-delete").await?;

    // 2. The new leader's process is frozen.
    wait::until(
        Duration::from_secs(60),
        "two operator pods again",
        || async { Ok(operator::pods(&c.client).await?.len() == 2) },
    )
    .await?;
    let pids = procs::with_env("longtask-operator", &format!("POD_NAME={second}"));
    ensure!(pids.len() == 1, "operator process of {second}: {pids:?}");
    let pid = pids[0];
    procs::signal(pid, "STOP")?;
    let t0 = Instant::now();
    let third = new_leader(&c, Some(&second), FAILOVER_LIMIT).await;
    let frozen = t0.elapsed();
    let thaw = procs::signal(pid, "CONT");
    let third = third?;
    thaw?;
    completes(&ns, "after-freeze").await?;
    // The thawed former leader notices it missed its renew deadline and exits.
    wait::until(
        Duration::from_secs(20),
        "the thawed leader to exit",
        || async {
            Ok(!std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")))
        },
    )
    .await?;
    let (holder, _) = operator::leader(&c.client).await?;
    ensure!(
        holder.as_deref() == Some(third.as_str()),
        "leader now {holder:?}, want {third}"
    );
    completes(&ns, "after-thaw").await?;
    log.one_each(["before", "after-delete", "after-freeze", "after-thaw"])?;
    println!(
        "leader_failover: pod deleted → new leader in {:.1}s; process frozen → new leader in {:.1}s",
        deleted.as_secs_f64(),
        frozen.as_secs_f64()
    );
    ensure!(frozen < FAILOVER_LIMIT && deleted < FAILOVER_LIMIT);
    // The Deployment stays Available throughout (the standby is ready).
    c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "wait",
        "--for=condition=Available",
        "deployment/longtask-operator",
        "--timeout=60s",
    ])?;
    Ok(())
}

/// The operator's Lease requests go to the API server's leader-election
/// priority level by the FlowSchema the install makes
/// (manifests/flow-schema.yaml), so a saturated API server does not queue
/// a renewal behind the leader's own reconcile calls: the API server's
/// count of requests that schema dispatched there grows while the leader
/// renews.
pub async fn lease_has_its_own_priority_level(c: Arc<Cluster>, _ns: TestNs) -> Result<()> {
    let dispatched = || -> Result<f64> {
        let metrics = c.kubectl.run(&["get", "--raw", "/metrics"])?;
        Ok(metrics
            .lines()
            .filter(|l| {
                l.starts_with("apiserver_flowcontrol_dispatched_requests_total{")
                    && l.contains("flow_schema=\"longtask-operator-leader-election\"")
                    && l.contains("priority_level=\"leader-election\"")
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    };
    let before = dispatched()?;
    wait::until(
        Duration::from_secs(60),
        "Lease requests in leader-election",
        || async { Ok(dispatched()? > before) },
    )
    .await
    .with_context(|| {
        format!(
            "{before} dispatched before; the FlowSchemas: {}",
            flow_schemas(&c)
        )
    })?;
    Ok(())
}

fn flow_schemas(c: &Cluster) -> String {
    c.kubectl
        .run(&["get", "flowschemas"])
        .unwrap_or_else(|e| format!("{e:#}"))
}
