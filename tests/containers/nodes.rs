//! A node dies under a running Task: its kubelet, containerd and
//! containers killed at once (`devcluster node stop`), the Node object
//! left behind as after a crashed VM.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, sh_task, tasks, wait};

const MINUTE: Duration = Duration::from_secs(60);

/// A node without operator pods, so the kill hits the Task alone.
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

/// While the node is silent the Task says so (Waiting NodeUnreachable,
/// a Warning Event naming the node); once the Node is deleted, as a
/// cloud's node controller does when the VM is gone, the pod is collected
/// and the program runs again on another node, with no retry charged
/// (`retries: 0`: a charged failure would fail the Task) and one Job.
/// Not yet asserted: `status.disruptions` (issue 25): the pod garbage
/// collector marks the pod Failed with DisruptionTarget in one write, and
/// the pod watch (live pods only) sees that as the pod leaving, so the
/// Task does not yet say why it moved.
pub async fn node_dies_under_a_running_task(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let node = quiet_node(&c).await?;
    let log = JobLog::start(&ns.client, &ns.name);
    let prefer = format!(
        "  podTemplate:\n    affinity:\n      nodeAffinity:\n        \
         preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 100\n          \
         preference:\n            matchExpressions:\n            - {{key: kubernetes.io/hostname, \
         operator: In, values: [{node}]}}\n"
    );
    let script = r#"echo "on $(hostname)"; sleep 40; echo moved > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task("lost", script, &prefer))?;
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let on_node = |p: &Pod| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node.as_str())
    };
    wait::until(MINUTE, "lost's pod running on the chosen node", || async {
        let list = pods
            .list(&ListParams::default().labels("job-name=lost"))
            .await?;
        Ok(list.items.iter().any(on_node))
    })
    .await?;
    let list = pods
        .list(&ListParams::default().labels("job-name=lost"))
        .await?;
    let first = list.items.into_iter().find(on_node).context("the pod")?;
    let stopped = Instant::now();
    c.devcluster(&["node", "stop", &node])?;
    let outcome = async {
        let t =
            wait::condition(&tasks(&ns.client, &ns.name), "lost", "Waiting", 2 * MINUTE).await?;
        let said = t["status"]["conditions"].to_string();
        ensure!(
            t["status"]["reason"] == "NodeUnreachable" && said.contains(&node),
            "lost: {}",
            t["status"]
        );
        let told = stopped.elapsed();
        let events = ns.k(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=lost,reason=Waiting",
            "-o",
            "jsonpath={.items[*].message}",
        ])?;
        ensure!(
            events.contains("NodeUnreachable") && events.contains(&node),
            "events: {events}"
        );
        ns.k(&["delete", "node", &node, "--wait=false"])?;
        let done =
            wait::condition(&tasks(&ns.client, &ns.name), "lost", "Complete", 4 * MINUTE).await?;
        let st = &done["status"];
        ensure!(
            st["result"].as_str().map(str::trim) == Some("moved")
                && st["attempts"] == 1
                && st["podName"].as_str() != first.metadata.name.as_deref(),
            "lost: {st}"
        );
        let last = pods
            .list(&ListParams::default().labels("job-name=lost"))
            .await?;
        let elsewhere = last.items.iter().any(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| n != node)
        });
        ensure!(elsewhere, "no pod ran on another node");
        log.one_each(["lost"])?;
        eprintln!(
            "node {node} stopped: Task told in {:.0?}, Completed elsewhere {:.0?} after the stop",
            told,
            stopped.elapsed()
        );
        Ok(())
    }
    .await;
    // Back for the cases after this one: the kubelet registers the Node again.
    let back = c.devcluster(&["node", "start", &node]);
    outcome.and(back.map(|_| ()))
}
