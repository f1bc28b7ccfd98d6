//! Stuck pending made visible: a pod that cannot start, or that the API
//! server refuses, shows Waiting=True with the scheduler's, the node's or
//! the API server's reason and message (also in
//! `kubectl get tasks`), and spec.startTimeoutSeconds fails it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, WORKER_IMAGE, sh_task, tasks, wait};
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);

fn waiting(t: &Value) -> Option<(String, String)> {
    t["status"]["conditions"].as_array()?.iter().find_map(|c| {
        (c["type"] == "Waiting" && c["status"] == "True").then(|| {
            (
                c["reason"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
    })
}

/// Applies `name` (waits for ever) and `name-t` (startTimeoutSeconds: 3)
/// with `extra` spec lines; checks Waiting on the first and the failure of
/// the second, both with `reason`.
async fn stuck(ns: &TestNs, name: &str, extra: &str, reason: &str) -> Result<()> {
    ns.apply(&sh_task(name, "echo never", extra))?;
    ns.apply(&sh_task(
        &format!("{name}-t"),
        "echo never",
        &format!("{extra}  startTimeoutSeconds: 3\n"),
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, name, "Waiting", MINUTE).await?;
    let (r, m) = waiting(&t).unwrap_or_default();
    ensure!(r == reason && !m.is_empty(), "{name}: Waiting {r:?} {m:?}");
    ensure!(t["status"]["phase"] == "Running", "{name}: {}", t["status"]);
    let table = ns.k(&["get", "tasks", name])?;
    ensure!(
        table.contains("WAITING") && table.contains(&m[..m.len().min(20)]),
        "{name}: kubectl get tasks:\n{table}"
    );
    let t = wait::condition(&api, &format!("{name}-t"), "Failed", MINUTE).await?;
    let st = &t["status"];
    ensure!(st["reason"] == reason, "{name}-t: {st}");
    ensure!(
        st["message"]
            .as_str()
            .unwrap_or_default()
            .contains("startTimeoutSeconds (3s)"),
        "{name}-t: {st}"
    );
    Ok(())
}

pub async fn unschedulable_and_config_error_visible(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let log = JobLog::start(&ns.client, &ns.name);
    stuck(
        &ns,
        "huge",
        "  resources:\n    requests:\n      cpu: \"1000\"\n",
        "Unschedulable",
    )
    .await?;
    stuck(
        &ns,
        "noconfig",
        "  env:\n    - name: X\n      valueFrom:\n        configMapKeyRef: {name: missing-config, key: x}\n",
        "CreateContainerConfigError",
    )
    .await?;
    // Root in a namespace whose Pod Security level is restricted: the API
    // server refuses the pods, which the Job controller tells only in its
    // FailedCreate Events (the operator's watch of them wakes the Task).
    stuck(
        &ns,
        "asroot",
        "  podTemplate:\n    securityContext: {runAsUser: 0, runAsNonRoot: false}\n",
        "PodRefused",
    )
    .await?;
    // The timed-out Tasks' Jobs are stopped (suspended), not left pending.
    for n in ["huge-t", "noconfig-t", "asroot-t"] {
        let s = ns.k(&["get", "job", n, "-o", "jsonpath={.spec.suspend}"])?;
        ensure!(s == "true", "{n}: Job suspend {s:?}");
    }
    log.one_each([
        "huge",
        "huge-t",
        "noconfig",
        "noconfig-t",
        "asroot",
        "asroot-t",
    ])?;
    Ok(())
}

/// Sets the operator's worker image and waits until a pod that has it
/// leads: a rollout is done while the old leader may still lead (and
/// create Jobs with the old image) until it has stopped.
async fn set_worker_image(c: &Cluster, image: &str) -> Result<()> {
    c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "set",
        "env",
        "deployment/longtask-operator",
        &format!("LONGTASK_WORKER_IMAGE={image}"),
    ])?;
    c.wait_operator("120s")?;
    wait::until(
        Duration::from_secs(120),
        "a leader with the new worker image",
        || async {
            let Some(leader) = longtask_e2e::operator::leader(&c.client).await?.0 else {
                return Ok(false);
            };
            let pods = longtask_e2e::operator::pods(&c.client).await?;
            Ok(pods.iter().any(|p| {
                p.metadata.name.as_deref() == Some(leader.as_str())
                    && p.metadata.deletion_timestamp.is_none()
                    && p.spec
                        .as_ref()
                        .and_then(|s| s.containers.first())
                        .and_then(|c| c.env.as_ref())
                        .is_some_and(|env| {
                            env.iter().any(|e| {
                                e.name == "LONGTASK_WORKER_IMAGE"
                                    && e.value.as_deref() == Some(image)
                            })
                        })
            }))
        },
    )
    .await
}

/// The operator is configured with a worker image that does not exist.
pub async fn image_pull_failure_visible(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    set_worker_image(&c, "longtask-worker:does-not-exist").await?;
    let res = stuck(&ns, "noimage", "", "ImagePullFailed").await;
    set_worker_image(&c, WORKER_IMAGE).await?;
    res
}
