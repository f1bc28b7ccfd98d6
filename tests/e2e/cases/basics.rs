//! The lifecycle: success, failure with retries, deadline, deletion.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, ListParams};
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};

const MINUTE: Duration = Duration::from_secs(60);

pub async fn completes_with_result(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task(
        "hello",
        r#"echo "working on it"; printf 'the answer is 42' > "$LONGTASK_RESULT""#,
        "",
    ))?;
    // The way a user waits.
    ns.kubectl_wait(&["--for=condition=Complete", "task/hello", "--timeout=60s"])?;
    let task = serde_json::to_value(tasks(&ns.client, &ns.name).get("hello").await?)?;
    ensure!(
        task["status"]["phase"] == "Completed",
        "phase: {}",
        task["status"]
    );
    ensure!(
        task["status"]["result"] == "the answer is 42",
        "result: {}",
        task["status"]["result"]
    );
    ensure!(
        wait::has_condition(&task, "Finished"),
        "no Finished condition: {}",
        task["status"]
    );
    ensure!(
        task["status"]["jobName"] == "hello",
        "jobName: {}",
        task["status"]["jobName"]
    );
    let logs = ns.k(&["logs", "job/hello"])?;
    ensure!(
        logs.contains("working on it"),
        "kubectl logs job/hello: {logs:?}"
    );
    let table = ns.k(&["get", "tasks"])?;
    ensure!(table.contains("Completed"), "kubectl get tasks:\n{table}");
    Ok(())
}

pub async fn exit_code_with_retries(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task(
        "three",
        "echo failing >&2; exit 3",
        "  retries: 1\n",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let task = wait::condition(&api, "three", "Failed", MINUTE).await?;
    let st = &task["status"];
    ensure!(st["phase"] == "Failed", "phase: {st}");
    ensure!(st["attempts"] == 2, "attempts: {st}");
    ensure!(st["exitCode"] == 3, "exitCode: {st}");
    ensure!(st["reason"] == "BackoffLimitExceeded", "reason: {st}");
    ensure!(
        wait::has_condition(&task, "Finished"),
        "no Finished condition: {st}"
    );
    Ok(())
}

pub async fn timeout_is_deadline_exceeded(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task("slow", "sleep 30", "  timeoutSeconds: 2\n"))?;
    let api = tasks(&ns.client, &ns.name);
    let task = wait::condition(&api, "slow", "Failed", MINUTE).await?;
    ensure!(
        task["status"]["reason"] == "DeadlineExceeded",
        "status: {}",
        task["status"]
    );
    Ok(())
}

/// Deleting a running Task stops its program and removes its Job, pods and
/// result ConfigMap (owner references; the garbage collector does it).
pub async fn delete_stops_everything(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let marker = format!("longtask-e2e-delete-{}", ns.name);
    // The marker is in the program's own command line, so /proc shows it.
    ns.apply(&sh_task("doomed", &format!("sleep 300; echo {marker}"), ""))?;
    ns.apply(&sh_task("done", r#"echo ok > "$LONGTASK_RESULT""#, ""))?;
    let api = tasks(&ns.client, &ns.name);
    wait::condition(&api, "done", "Complete", MINUTE).await?;
    let cms: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    ensure!(
        cms.get_opt("done-result").await?.is_some(),
        "done-result ConfigMap missing"
    );
    wait::until(MINUTE, "the program to run", || async {
        Ok(processes_with(&marker) > 0)
    })
    .await?;

    for name in ["doomed", "done"] {
        api.delete(name, &DeleteParams::default()).await?;
    }
    wait::until(MINUTE, "the program to stop", || async {
        Ok(processes_with(&marker) == 0)
    })
    .await?;
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    // The garbage collector learns a new CRD's kinds within about 30 s.
    wait::until(
        Duration::from_secs(120),
        "Jobs, pods and ConfigMaps to go",
        || async {
            let j = jobs.list(&ListParams::default()).await?.items.len();
            let p = pods.list(&ListParams::default()).await?.items.len();
            let c = cms
                .list(&ListParams::default().labels("longtask.dev/task-uid"))
                .await?
                .items
                .len();
            Ok(j + p + c == 0)
        },
    )
    .await?;
    Ok(())
}

/// How many processes on this machine have `needle` in their command line.
fn processes_with(needle: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
        })
        .count()
}

/// Every sample in `manifests/samples/` reaches its documented end state.
pub async fn samples_reach_their_end_state(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let dir = longtask_e2e::root().join("manifests/samples");
    longtask_e2e::samples::reach_their_end_state(&ns, &dir, 5, &[]).await
}
