//! Nodes fail under running Tasks (issue 25): a node dies (its kubelet,
//! containerd and containers killed at once by `devcluster node stop`, the
//! Node object left behind as after a crashed VM) and is then deleted or
//! tainted out-of-service; a node is drained; a node's kubelet evicts for
//! memory. Each time the program runs again on another node, with no
//! retry charged (`retries: 0`: a charged failure would fail the Task),
//! one Job, and a status that says why it moved.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, PYTHON_IMAGE, SYSTEM_NS, TestNs, sh_task, tasks, wait};
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);

/// A node without operator pods, so a fault there hits the Task alone.
async fn quiet_node(c: &Cluster) -> Result<String> {
    let ops: Api<Pod> = Api::namespaced(c.client.clone(), SYSTEM_NS);
    let busy: Vec<String> = ops
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|p| p.spec.and_then(|s| s.node_name))
        .collect();
    (0..3)
        .map(|i| format!("devcluster-node-{i}"))
        .find(|n| !busy.contains(n))
        .context("every node runs an operator pod")
}

/// `spec.podTemplate` preferring `node` (preferred, so the replacement
/// may go elsewhere).
fn prefer(node: &str) -> String {
    format!(
        "  podTemplate:\n    affinity:\n      nodeAffinity:\n        \
         preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 100\n          \
         preference:\n            matchExpressions:\n            - {{key: kubernetes.io/hostname, \
         operator: In, values: [{node}]}}\n"
    )
}

fn node_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.node_name.as_deref()
}

/// Waits until a pod of Job `job` runs on `node`; its name.
async fn running_on(ns: &TestNs, job: &str, node: &str) -> Result<String> {
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let lp = ListParams::default().labels(&format!("job-name={job}"));
    let on_node = |p: &Pod| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            && node_of(p) == Some(node)
    };
    let deadline = Instant::now() + 2 * MINUTE;
    loop {
        let list = pods.list(&lp).await?;
        if let Some(name) = list
            .items
            .into_iter()
            .find(on_node)
            .and_then(|p| p.metadata.name)
        {
            return Ok(name);
        }
        ensure!(
            Instant::now() < deadline,
            "{job}'s pod not running on {node} within 2 minutes:\n{}",
            ns.dump()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Task `name` ended `Complete` with `result`, one attempt, its last pod
/// on a node other than `node`, and one disruption: the pod `first`, for
/// one of `reasons`.
async fn moved(
    ns: &TestNs,
    name: &str,
    result: &str,
    first: &str,
    node: &str,
    reasons: &[&str],
) -> Result<Value> {
    let done = wait::condition(&tasks(&ns.client, &ns.name), name, "Complete", 4 * MINUTE).await?;
    let st = done["status"].clone();
    ensure!(
        st["result"].as_str().map(str::trim) == Some(result)
            && st["attempts"] == 1
            && st["podName"].as_str() != Some(first),
        "{name}: {st}"
    );
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let last = pods
        .list(&ListParams::default().labels(&format!("job-name={name}")))
        .await?;
    let elsewhere = last
        .items
        .iter()
        .any(|p| node_of(p).is_some_and(|n| n != node));
    ensure!(elsewhere, "{name}: no pod ran on another node than {node}");
    let d = &st["lastDisruption"];
    ensure!(
        st["disruptions"] == 1 && d["pod"] == first && reasons.iter().any(|r| d["reason"] == *r),
        "{name}: the status does not say why it moved (want pod {first}, one of {reasons:?}): {st}"
    );
    Ok(st)
}

/// The Task's Disrupted Event names the pod and says `how`.
fn disrupted_event(ns: &TestNs, name: &str, first: &str, how: &str) -> Result<()> {
    let events = ns.k(&[
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.name={name},reason=Disrupted"),
        "-o",
        "jsonpath={.items[*].message}",
    ])?;
    ensure!(
        events.contains(first) && events.contains(how) && events.contains("without using a retry"),
        "{name}: Disrupted Event, want {first} {how}: {events:?}"
    );
    Ok(())
}

/// Stops `node` under a running Task `name` and waits until the Task says
/// so (Waiting NodeUnreachable and a Warning Event, both naming the
/// node); the first pod's name, and how long the telling took.
async fn stop_under(
    c: &Cluster,
    ns: &TestNs,
    name: &str,
    node: &str,
) -> Result<(String, Duration)> {
    let script = r#"echo "on $(hostname)"; sleep 20; echo moved > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task(name, script, &prefer(node)))?;
    let first = running_on(ns, name, node).await?;
    let stopped = Instant::now();
    c.devcluster(&["node", "stop", node])?;
    let t = wait::condition(&tasks(&ns.client, &ns.name), name, "Waiting", 2 * MINUTE).await?;
    let said = t["status"]["conditions"].to_string();
    ensure!(
        t["status"]["reason"] == "NodeUnreachable" && said.contains(node),
        "{name}: {}",
        t["status"]
    );
    let told = stopped.elapsed();
    let events = ns.k(&[
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.name={name},reason=Waiting"),
        "-o",
        "jsonpath={.items[*].message}",
    ])?;
    ensure!(
        events.contains("NodeUnreachable") && events.contains(node),
        "events: {events}"
    );
    Ok((first, told))
}

/// While the node is silent the Task says so (Waiting NodeUnreachable,
/// a Warning Event naming the node); once the Node is deleted, as a
/// cloud's node controller does when the VM is gone, the pod is collected
/// and the program runs again on another node, and the status says why it
/// moved: the pod garbage collector marks the pod Failed with
/// DisruptionTarget in one write, which the watch of live pods sees only
/// as the pod leaving (the operator reads the pods again then).
pub async fn node_dies_under_a_running_task(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let node = quiet_node(&c).await?;
    let log = JobLog::start(&ns.client, &ns.name);
    let outcome = async {
        let (first, told) = stop_under(&c, &ns, "lost", &node).await?;
        let stopped = Instant::now() - told;
        ns.k(&["delete", "node", &node, "--wait=false"])?;
        moved(&ns, "lost", "moved", &first, &node, &["DeletionByPodGC"]).await?;
        disrupted_event(&ns, "lost", &first, "garbage collector")?;
        log.one_each(["lost"])?;
        eprintln!(
            "node {node} stopped: Task told in {told:.0?}, Completed elsewhere {:.0?} after the stop",
            stopped.elapsed()
        );
        Ok(())
    }
    .await;
    // Back for the cases after this one: the kubelet registers the Node again.
    let back = c.devcluster(&["node", "start", &node]);
    outcome.and(back.map(|_| ()))
}

const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// Bare metal's non-graceful node shutdown: the node dies, and an admin
/// (or a fencing agent) taints it `node.kubernetes.io/out-of-service`
/// once it is known to be off. The taint evicts its pods at once, the pod
/// garbage collector removes them though the kubelet never confirms, and
/// the Task completes on another node without a retry.
pub async fn out_of_service_taint_moves_the_task(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let node = quiet_node(&c).await?;
    let log = JobLog::start(&ns.client, &ns.name);
    let outcome = async {
        let (first, _) = stop_under(&c, &ns, "fenced", &node).await?;
        let tainted = Instant::now();
        ns.k(&[
            "taint",
            "node",
            &node,
            &format!("{OUT_OF_SERVICE}=nodeshutdown:NoExecute"),
        ])?;
        moved(
            &ns,
            "fenced",
            "moved",
            &first,
            &node,
            &["DeletionByTaintManager", "DeletionByPodGC"],
        )
        .await?;
        log.one_each(["fenced"])?;
        eprintln!(
            "node {node} out of service: Completed elsewhere {:.0?} after the taint",
            tainted.elapsed()
        );
        Ok(())
    }
    .await;
    let untaint = ns.k(&["taint", "node", &node, &format!("{OUT_OF_SERVICE}-")]);
    let back = c.devcluster(&["node", "start", &node]);
    outcome.and(untaint.map(|_| ())).and(back.map(|_| ()))
}

/// `kubectl drain` of the node running a Task: the eviction API stops the
/// pod, and the program runs again on another node without a retry; the
/// node is cordoned meanwhile, so the replacement cannot come back to it.
pub async fn drain_moves_the_task(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let node = quiet_node(&c).await?;
    let log = JobLog::start(&ns.client, &ns.name);
    let script = r#"echo "on $(hostname)"; sleep 20; echo moved > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task("drained", script, &prefer(&node)))?;
    let outcome = async {
        let first = running_on(&ns, "drained", &node).await?;
        let started = Instant::now();
        ns.k(&[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--force",
            "--timeout=120s",
        ])?;
        let drained = started.elapsed();
        moved(&ns, "drained", "moved", &first, &node, &["EvictionByEvictionAPI"]).await?;
        disrupted_event(&ns, "drained", &first, "evicted")?;
        log.one_each(["drained"])?;
        eprintln!(
            "node {node} drained in {drained:.0?}: Completed elsewhere {:.0?} after the drain began",
            started.elapsed()
        );
        Ok(())
    }
    .await;
    let back = ns.k(&["uncordon", &node]);
    outcome.and(back.map(|_| ()))
}

/// The node's kubelet evicts the Task's pod for memory: the node is booted
/// with 500 MiB allocatable and `memory.available<200Mi` as its hard
/// eviction threshold, and the program takes 620 MiB. The eviction uses
/// no retry, the Disrupted Event says the node stopped it and why, and
/// the program completes on another node (one with memory to spare).
pub async fn memory_pressure_eviction_uses_no_retry(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let node = quiet_node(&c).await?;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let capacity = nodes
        .get(&node)
        .await?
        .status
        .and_then(|s| s.capacity)
        .and_then(|c| c.get("memory").cloned())
        .context("node capacity")?;
    let cap_mib = mebibytes(&capacity.0)?;
    let log = JobLog::start(&ns.client, &ns.name);
    let outcome = async {
        c.devcluster(&["node", "stop", &node])?;
        c.devcluster(&[
            "node",
            "start",
            &node,
            &format!("--system-reserved-memory={}Mi", cap_mib - 700),
            "--eviction-hard=memory.available=200Mi",
        ])?;
        wait::until(MINUTE, "allocatable memory of 500 MiB", || async {
            let alloc = nodes.get(&node).await?.status.and_then(|s| s.allocatable);
            let mem = alloc.and_then(|a| a.get("memory").cloned());
            Ok(mem.is_some_and(|m| mebibytes(&m.0).ok() == Some(500)))
        })
        .await?;
        let program = "import os, time\n\
                       hog = bytearray(b'x') * (620 << 20)\n\
                       print('holding', len(hog) >> 20, 'MiB on', os.uname().nodename, flush=True)\n\
                       time.sleep(45)\n\
                       open(os.environ['LONGTASK_RESULT'], 'w').write('survived')\n";
        ns.apply(&format!(
            "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: hog\nspec:\n  \
             image: {PYTHON_IMAGE}\n  imagePullPolicy: Never\n  command: [python3, -c, {program:?}]\n  \
             retries: 0\n{}",
            prefer(&node)
        ))?;
        let first = running_on(&ns, "hog", &node).await?;
        let started = Instant::now();
        moved(&ns, "hog", "survived", &first, &node, &["TerminationByKubelet"]).await?;
        disrupted_event(&ns, "hog", &first, "kubelet")?;
        disrupted_event(&ns, "hog", &first, "memory")?;
        log.one_each(["hog"])?;
        eprintln!(
            "node {node} under memory pressure: Completed elsewhere {:.0?} after the pod ran",
            started.elapsed()
        );
        Ok(())
    }
    .await;
    // Boot the node again with its defaults for the cases after this one.
    let _ = c.devcluster(&["node", "stop", &node]);
    let back = c.devcluster(&["node", "start", &node]);
    outcome.and(back.map(|_| ()))
}

/// Mebibytes in a memory quantity as nodes report it (`Ki`, `Mi`, `Gi`
/// or bytes).
fn mebibytes(q: &str) -> Result<i64> {
    let (num, shift) = [("Ki", -10), ("Mi", 0), ("Gi", 10)]
        .iter()
        .find_map(|(suffix, s)| q.strip_suffix(suffix).map(|n| (n, *s)))
        .unwrap_or((q, -20));
    let n: i64 = num
        .parse()
        .with_context(|| format!("memory quantity {q}"))?;
    Ok(if shift >= 0 { n << shift } else { n >> -shift })
}

/// A node cut off from the network, not dead: its pods run on unseen. The
/// Task tolerates `unreachable` for 10 s, so the node controller evicts
/// its pod; the pod stays Terminating (its kubelet cannot confirm), and
/// `podReplacementPolicy: Failed` holds the replacement back: never two
/// copies of the program at once, however long the cut. Once the cut
/// heals the kubelet ends the old pod, and the program runs again
/// without using a retry.
pub async fn partitioned_node_gets_no_twin(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const CUT: u64 = 75;
    let node = quiet_node(&c).await?;
    let log = JobLog::start(&ns.client, &ns.name);
    let tolerate = "    tolerations:\n    \
        - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 10}\n    \
        - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 10}\n";
    let script = r#"echo "on $(hostname)"; sleep 30; echo once > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task(
        "island",
        script,
        &format!("{}{tolerate}", prefer(&node)),
    ))?;
    let first = running_on(&ns, "island", &node).await?;
    let cut = Instant::now();
    c.devcluster(&["net", "cut", &node, "--seconds", &CUT.to_string()])?;
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let lp = ListParams::default().labels("job-name=island");
    let mut evicted = false;
    // Through the cut: one pod of the Job at a time, the old one marked
    // for deletion once the node controller evicts it.
    while cut.elapsed() < Duration::from_secs(CUT - 5) {
        let list = pods.list(&lp).await?.items;
        ensure!(
            list.len() <= 1,
            "a twin while {node} is cut off ({:.0?} in): {:?}",
            cut.elapsed(),
            list.iter()
                .map(|p| p.metadata.name.clone())
                .collect::<Vec<_>>()
        );
        evicted |= list.iter().any(|p| p.metadata.deletion_timestamp.is_some());
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    ensure!(
        evicted,
        "the pod on {node} was never evicted during a {CUT} s cut"
    );
    let t = wait::condition(
        &tasks(&ns.client, &ns.name),
        "island",
        "Complete",
        4 * MINUTE,
    )
    .await?;
    let st = &t["status"];
    ensure!(
        st["attempts"] == 1
            && st["disruptions"] == 1
            && st["lastDisruption"]["pod"] == first.as_str()
            && st["result"].as_str().map(str::trim) == Some("once"),
        "island: {st}"
    );
    log.one_each(["island"])?;
    eprintln!(
        "node {node} cut off for {CUT} s: no twin; Completed {:.0?} after the cut began",
        cut.elapsed()
    );
    Ok(())
}
