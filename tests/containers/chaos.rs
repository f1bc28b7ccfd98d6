//! Chaos on container nodes (issue 25): Tasks are created in batches while,
//! one at a time and in a seeded random order, a node dies and comes back
//! (after the node controller evicted its pods), the leader's pod is
//! deleted, and etcd is SIGKILLed and started again. Afterwards every Task
//! is Completed with its own result, in one attempt (`retries: 0`, so a
//! disruption charged as a failure would fail it), and had one Job.
//! `LONGTASK_CHAOS_TASKS` (150) and `LONGTASK_CHAOS_SEED` (the time) replay
//! a run: `cargo test -p longtask-e2e --test containers -- chaos`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use longtask_e2e::chaos::{Lcg, env_u64};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, operator, sh_task, tasks, wait};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// `node stop`, the node controller evicts its pods (they tolerate
    /// `unreachable` for 10 s), `node start`.
    NodeCycle(u64),
    LeaderKilled,
    EtcdKilled,
}

/// Pods leave a dead node 10 s after the node controller taints it, not
/// after the default 300 s.
const TOLERATE: &str = "  podTemplate:\n    tolerations:\n    \
    - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 10}\n    \
    - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 10}\n";

pub async fn faults_at_random(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let n = env_u64("LONGTASK_CHAOS_TASKS", 150) as usize;
    let seed = env_u64(
        "LONGTASK_CHAOS_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs(),
    );
    println!(
        "chaos on container nodes: {n} Tasks, seed {seed} (LONGTASK_CHAOS_SEED={seed} replays)"
    );
    let mut rng = Lcg(seed);
    let log = JobLog::start(&ns.client, &ns.name);
    let docs: Vec<String> = (0..n)
        .map(|i| {
            let secs = 5 + rng.next(26);
            sh_task(
                &format!("chaos-{i}"),
                &format!("sleep {secs}; echo ok-{i} > \"$LONGTASK_RESULT\""),
                &format!("  retries: 0\n{TOLERATE}"),
            )
        })
        .collect();
    // Each kind at least once, in a seeded order, then seeded draws.
    let mut plan = [
        Fault::NodeCycle(rng.next(3)),
        Fault::LeaderKilled,
        Fault::EtcdKilled,
    ];
    for i in (1..plan.len()).rev() {
        plan.swap(i, rng.next(i as u64 + 1) as usize);
    }
    let api = tasks(&ns.client, &ns.name);
    let started = Instant::now();
    // While the Tasks are created, a batch at a time, one fault after
    // each batch; then the cluster is left alone until every Task ended.
    let mut batches = docs.chunks(15);
    let mut done_faults: Vec<(Fault, Duration)> = Vec::new();
    loop {
        let batch = batches.next();
        if let Some(b) = batch {
            apply_retrying(&ns, &b.join("---\n")).await?;
        }
        if batch.is_none() && done_faults.len() >= plan.len() {
            break;
        }
        let fault = match plan.get(done_faults.len()) {
            Some(f) => *f,
            None => match rng.next(3) {
                0 => Fault::NodeCycle(rng.next(3)),
                1 => Fault::LeaderKilled,
                _ => Fault::EtcdKilled,
            },
        };
        let t0 = Instant::now();
        inflict(&c, fault).await?;
        let took = t0.elapsed();
        println!("chaos: {fault:?} took {took:.1?}");
        done_faults.push((fault, took));
        tokio::time::sleep(Duration::from_secs(2 + rng.next(4))).await;
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let list = api.list(&ListParams::default()).await?;
        let finished = longtask_e2e::finished(&list.items);
        if finished == n {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "seed {seed}: only {finished} of {n} Tasks finished 10 minutes after the last of {} faults",
                done_faults.len()
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let elapsed = started.elapsed();
    let mut wrong = Vec::new();
    let mut disruptions = 0;
    for i in 0..n {
        let name = format!("chaos-{i}");
        let st = api.get(&name).await?.data["status"].clone();
        disruptions += st["disruptions"].as_i64().unwrap_or(0);
        let right = st["phase"] == "Completed"
            && st["result"].as_str().map(str::trim) == Some(&format!("ok-{i}"))
            && st["attempts"] == 1;
        if !right {
            wrong.push(format!("{name}: {st}"));
        }
    }
    let dup = (0..n)
        .filter(|i| log.uids(&format!("chaos-{i}")).len() != 1)
        .count();
    println!(
        "chaos on container nodes: {n} Tasks in {:.0}s, seed {seed}, {} faults ({}), \
         {} wrong or lost, {dup} with other than one Job, {disruptions} disruptions counted",
        elapsed.as_secs_f64(),
        done_faults.len(),
        done_faults
            .iter()
            .map(|(f, t)| format!("{f:?} {:.0}s", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", "),
        wrong.len()
    );
    ensure!(
        wrong.is_empty() && dup == 0,
        "seed {seed}: {dup} duplicated, wrong or lost: {wrong:#?}"
    );
    c.wait_operator("120s")?;
    Ok(())
}

/// `kubectl apply`, sent again while the API server refuses (etcd down).
async fn apply_retrying(ns: &TestNs, yaml: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match ns.apply(yaml) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() < deadline => {
                println!("chaos: apply refused, again: {e:#}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn inflict(c: &Cluster, fault: Fault) -> Result<()> {
    match fault {
        Fault::NodeCycle(i) => {
            let node = format!("devcluster-node-{i}");
            c.devcluster(&["node", "stop", &node])?;
            let nodes: Api<Node> = Api::all(c.client.clone());
            wait::until(
                Duration::from_secs(120),
                &format!("{node} tainted unreachable"),
                || async {
                    let n = nodes.get(&node).await?;
                    let taints = n.spec.and_then(|s| s.taints).unwrap_or_default();
                    Ok(taints.iter().any(|t| {
                        t.key == "node.kubernetes.io/unreachable" && t.effect == "NoExecute"
                    }))
                },
            )
            .await?;
            // The Tasks' pods tolerate the taint for 10 s, then are evicted.
            tokio::time::sleep(Duration::from_secs(15)).await;
            c.devcluster(&["node", "start", &node])?;
        }
        Fault::LeaderKilled => {
            let (leader, _) = operator::leader(&c.client).await?;
            let leader = leader.context("no leader to kill")?;
            c.kubectl
                .run(&["-n", SYSTEM_NS, "delete", "pod", &leader, "--wait=false"])?;
            wait::until(Duration::from_secs(60), "a new leader", || async {
                let (h, _) = operator::leader(&c.client).await?;
                Ok(h.is_some_and(|h| h != leader))
            })
            .await?;
        }
        Fault::EtcdKilled => {
            c.restart("etcd", true)?;
        }
    }
    Ok(())
}
