//! Retention (issue 15): finished Tasks are deleted, with their Jobs, pods
//! and result ConfigMaps, after spec.deleteAfterSeconds or the namespace's
//! longtask.dev/delete-finished-after, and a namespace annotated
//! longtask.dev/keep-finished: N keeps only its newest N finished Tasks.
//! Without either, Tasks stay.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use longtask_e2e::{Cluster, TestNs, openmetrics, sh_task, tasks, wait};

use longtask_e2e::operator::{leader_pod, scrape};
use serde_json::Value;

use super::observe::events_of;

const MINUTE: Duration = Duration::from_secs(60);

/// Names of the Jobs, pods and ConfigMaps of Task `name` still in `ns`.
async fn leftovers(ns: &TestNs, name: &str) -> Result<Vec<String>> {
    let lp = ListParams::default().labels(&format!("longtask.dev/task-name={name}"));
    let mut out = Vec::new();
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    if jobs.get_opt(name).await?.is_some() {
        out.push(format!("job/{name}"));
    }
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    for p in pods.list(&lp).await?.items {
        out.push(format!("pod/{}", p.metadata.name.unwrap_or_default()));
    }
    let cms: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    if cms.get_opt(&format!("{name}-result")).await?.is_some() {
        out.push(format!("configmap/{name}-result"));
    }
    Ok(out)
}

/// Waits until Task `name` and everything it owned are gone.
async fn gone(ns: &TestNs, name: &str, timeout: Duration) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    wait::until(
        timeout,
        &format!("Task {name} and its objects deleted"),
        || async {
            Ok(api.get_opt(name).await?.is_none() && leftovers(ns, name).await?.is_empty())
        },
    )
    .await
}

/// The `Deleted` Event of Task `name` (waited for: Events are sent after
/// the delete) and how long after `finished` (its status, as read while it
/// existed) it was published, with its note.
async fn deleted_after(ns: &TestNs, name: &str, finished: &Value) -> Result<(f64, String)> {
    let completed: Timestamp = finished["status"]["completedAt"]
        .as_str()
        .context("status.completedAt")?
        .parse()?;
    let deadline = std::time::Instant::now() + MINUTE;
    let ev = loop {
        if let Some(ev) = events_of(ns, name)
            .await?
            .remove("Deleted")
            .and_then(|mut v| v.pop())
        {
            break ev;
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "no Deleted Event on {name} within {MINUTE:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let at = ev.event_time.context("eventTime")?.0;
    let after = at.duration_since(completed).as_secs_f64();
    Ok((after, ev.note.unwrap_or_default()))
}

/// spec.deleteAfterSeconds deletes a finished Task and its objects after
/// its time; the namespace's delete-finished-after applies to Tasks that
/// set none; a Task's own longer time wins. Whether a Task went too early
/// is judged by its `Deleted` Event's time against its completedAt (both
/// the operator's clock, this machine's), not by when this case happens
/// to look: a busy runner looked 20 s late.
pub async fn retention_deletes_after_time(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.k(&[
        "annotate",
        "namespace",
        &ns.name,
        "longtask.dev/delete-finished-after=20",
    ])?;
    let write = r#"echo kept > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task("own", write, "  deleteAfterSeconds: 15\n"))?;
    ns.apply(&sh_task("by-namespace", write, ""))?;
    ns.apply(&sh_task("long", write, "  deleteAfterSeconds: 3600\n"))?;
    let api = tasks(&ns.client, &ns.name);
    let mut finished = Vec::new();
    for t in ["own", "by-namespace", "long"] {
        finished.push(wait::condition(&api, t, "Complete", MINUTE).await?);
    }
    for (name, value, secs, rule) in [
        ("own", &finished[0], 15.0, "spec.deleteAfterSeconds (15s)"),
        (
            "by-namespace",
            &finished[1],
            20.0,
            "annotation longtask.dev/delete-finished-after",
        ),
    ] {
        gone(&ns, name, MINUTE).await?;
        let (after, note) = deleted_after(&ns, name, value).await?;
        println!("retention: {name} deleted {after:.1}s after it finished: {note}");
        ensure!(
            after >= secs,
            "{name} deleted {after:.1}s after it finished, before its {secs}s"
        );
        ensure!(
            after < secs + 30.0,
            "{name} deleted only {after:.1}s after it finished ({secs}s)"
        );
        ensure!(
            note.contains(rule),
            "{name}'s Deleted Event does not name {rule:?}: {note:?}"
        );
    }
    let long = api.get_opt("long").await?;
    ensure!(
        long.is_some(),
        "long (deleteAfterSeconds: 3600) was deleted"
    );
    ensure!(
        leftovers(&ns, "long")
            .await?
            .contains(&"configmap/long-result".to_owned()),
        "long's result ConfigMap is gone"
    );
    Ok(())
}

/// A namespace annotated keep-finished: 2 keeps its 2 newest finished
/// Tasks while more finish; a running Task does not count, and the older
/// ones go with their objects.
pub async fn retention_keeps_newest(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let deleted = |f: &[openmetrics::Family]| {
        openmetrics::value(f, "longtask_tasks_deleted_total", &[("rule", "keep")])
    };
    let pod = leader_pod(&c).await?;
    let before = deleted(&scrape(&c, &pod).await?);
    ns.k(&[
        "annotate",
        "namespace",
        &ns.name,
        "longtask.dev/keep-finished=2",
    ])?;
    let api = tasks(&ns.client, &ns.name);
    ns.apply(&sh_task("slow", "sleep 600", ""))?;
    let names = ["k1", "k2", "k3", "k4", "k5"];
    for (i, name) in names.iter().enumerate() {
        ns.apply(&sh_task(name, r#"echo done > "$LONGTASK_RESULT""#, ""))?;
        wait::condition(&api, name, "Complete", MINUTE).await?;
        // The newest two finished stay; every older one goes.
        let keep = &names[i.saturating_sub(1)..=i];
        for old in &names[..i.saturating_sub(1)] {
            gone(&ns, old, MINUTE).await?;
        }
        for k in keep {
            ensure!(
                api.get_opt(k).await?.is_some(),
                "{k} deleted, though among the newest 2 finished (after {name})"
            );
        }
    }
    ensure!(
        api.get_opt("slow").await?.is_some(),
        "the running Task was deleted"
    );
    let left: Vec<String> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|t| t.metadata.name)
        .collect();
    ensure!(left == ["k4", "k5", "slow"], "Tasks left: {left:?}");
    let after = deleted(&scrape(&c, &pod).await?);
    ensure!(
        after >= before + 3.0,
        "longtask_tasks_deleted_total{{rule=keep}} {before} -> {after}, want 3 more"
    );
    ns.k(&["delete", "task", "slow", "--wait=false"])?;
    Ok(())
}
