//! Cases of the middle level: `reconcile` of the operator's library, called
//! by the test with a `Context` of its own, against the devcluster.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use crds::names::annotations;
use crds::{Phase, Task};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use longtask_e2e::{Cluster, TestNs, WORKER_IMAGE, wait};
use longtask_operator::context::{Backoff, Config, Context, WorkerRbac};
use longtask_operator::job::build;
use longtask_operator::queue::Queue;
use longtask_operator::reconcile;
use longtask_operator::telemetry::events::Recorder;
use longtask_operator::telemetry::metrics::Metrics;

/// A Context as the operator's main builds one, with the test's client.
pub(crate) fn context(client: &Client) -> Arc<Context> {
    let reporter = Reporter {
        controller: "longtask-reconcile-test".to_owned(),
        instance: None,
    };
    Arc::new(Context {
        client: client.clone(),
        config: Config::new(WORKER_IMAGE.to_owned(), Duration::from_secs(10)),
        recorder: Recorder::new(client.clone(), reporter),
        metrics: Arc::new(Metrics::new()),
        backoff: Backoff::default(),
        queue: Queue::new(None, None),
        rbac: WorkerRbac::new(Duration::from_secs(600)),
        // No watches here: every read goes to the API server.
        caches: Default::default(),
    })
}

/// Creates a Task running a long `sleep` and returns it as stored.
async fn create_task(api: &Api<Task>, name: &str) -> Result<Task> {
    let task: Task = serde_json::from_value(serde_json::json!({
        "apiVersion": "longtask.dev/v1alpha1",
        "kind": "Task",
        "metadata": { "name": name },
        "spec": { "command": ["sleep", "600"] },
    }))?;
    Ok(api.create(&PostParams::default(), &task).await?)
}

pub(crate) async fn reconcile(task: &Task, ctx: &Arc<Context>) -> Result<Action> {
    reconcile::reconcile(Arc::new(task.clone()), ctx.clone())
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "reconcile: {}",
                longtask_operator::api::call_error::Chain(&e)
            )
        })
}

fn phase(t: &Task) -> Option<Phase> {
    t.status.as_ref().and_then(|s| s.phase)
}

fn job_uid(t: &Task) -> Option<&str> {
    t.status.as_ref().and_then(|s| s.job_uid.as_deref())
}

/// A Job of the Task already exists (created by an earlier reconcile that
/// died before its status write): the create meets AlreadyExists, the Job
/// there is taken as the Task's, and no second Job is made.
pub async fn job_create_meets_already_exists(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let ctx = context(&c.client);
    let tasks: Api<Task> = Api::namespaced(c.client.clone(), &ns.name);
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), &ns.name);
    let task = create_task(&tasks, "again").await?;
    let built = build::job(&task, WORKER_IMAGE)?;
    let first = jobs.create(&PostParams::default(), &built).await?;
    let first_uid = first.metadata.uid.context("Job without uid")?;

    // Whether the Job controller has made the pod yet: a Job without one is
    // looked at again within a minute (a refused pod wakes nothing), one
    // with a pod only by the safety net.
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), &ns.name);
    let selector = format!(
        "job-name={}",
        built.metadata.name.as_deref().unwrap_or_default()
    );
    let had_pod = !pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .is_empty();
    let action = reconcile(&task, &ctx).await?;
    let safety_net = Action::requeue(Duration::from_secs(300));
    let podless_look = (1..=60).any(|s| action == Action::requeue(Duration::from_secs(s)));
    ensure!(
        action == safety_net || (!had_pod && podless_look),
        "a running Task is looked at again by the safety net, or within a minute while its \
         Job has no pod (had a pod before: {had_pod}): {action:?}"
    );
    let now = tasks.get("again").await?;
    ensure!(
        phase(&now) == Some(Phase::Running),
        "phase {:?}",
        phase(&now)
    );
    ensure!(
        job_uid(&now) == Some(first_uid.as_str()),
        "the Task records the Job that was there ({first_uid}), not {:?}",
        job_uid(&now)
    );
    let all = jobs.list(&Default::default()).await?;
    ensure!(all.items.len() == 1, "{} Jobs", all.items.len());
    Ok(())
}

/// The reconcile works from a cached Task older than the server's: its
/// status write is refused (resourceVersion), nothing it computed is
/// written, it asks to look again; the next reconcile, from the newer
/// Task, writes the status, and the Job is the same one.
pub async fn status_write_meets_a_newer_task(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let ctx = context(&c.client);
    let tasks: Api<Task> = Api::namespaced(c.client.clone(), &ns.name);
    let stale = create_task(&tasks, "stale").await?;
    // Someone changes the Task after the cache saw it.
    let label = serde_json::json!({ "metadata": { "labels": { "touched": "yes" } } });
    tasks
        .patch("stale", &PatchParams::default(), &Patch::Merge(&label))
        .await?;

    let action = reconcile(&stale, &ctx).await?;
    ensure!(
        action == Action::requeue(Duration::from_secs(30)),
        "a stale write asks to look again shortly: {action:?}"
    );
    let now = tasks.get("stale").await?;
    ensure!(
        now.status.is_none(),
        "nothing was written from the stale Task: {:?}",
        now.status
    );
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), &ns.name);
    let job = jobs.get("stale").await.context("the Job was created")?;

    reconcile(&now, &ctx).await?;
    let after = tasks.get("stale").await?;
    ensure!(
        phase(&after) == Some(Phase::Running),
        "phase {:?}",
        phase(&after)
    );
    ensure!(
        job_uid(&after) == job.metadata.uid.as_deref(),
        "the same Job: {:?} vs {:?}",
        job_uid(&after),
        job.metadata.uid
    );
    Ok(())
}

/// The Task cache the queue plans from, for one namespace.
async fn task_store(client: &Client, ns: &str) -> Result<Store<Task>> {
    let (reader, writer) = reflector::store();
    let api: Api<Task> = Api::namespaced(client.clone(), ns);
    let stream =
        // Backoff: once the cluster is down, a watcher without it retries in a
        // busy loop, which kept this process spinning after its last case.
        reflector::reflector(
            writer,
            watcher(api, watcher::Config::default()).default_backoff(),
        )
        .applied_objects();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while stream.next().await.is_some() {}
    });
    reader.wait_until_ready().await?;
    Ok(reader)
}

/// Waits until the cache shows Task `name` as `check` wants it.
async fn cached(
    store: &Store<Task>,
    ns: &str,
    name: &str,
    what: &str,
    check: fn(&Task) -> bool,
) -> Result<()> {
    let key = ObjectRef::new(name).within(ns);
    wait::until(Duration::from_secs(30), what, || {
        let t = store.get(&key);
        async move { Ok(t.is_some_and(|t| check(&t))) }
    })
    .await
}

/// Under a namespace cap of 1: the first Task runs, the second is Queued;
/// when the first ends (its Job deleted: JobLost), its own reconcile
/// starts the second's Job at once, without the second being reconciled.
pub async fn queued_task_starts_when_a_slot_frees(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(c.client.clone());
    let cap = serde_json::json!({ "metadata": { "annotations": {
        annotations::MAX_ACTIVE_TASKS: "1" } } });
    namespaces
        .patch(&ns.name, &PatchParams::default(), &Patch::Merge(&cap))
        .await?;
    let ctx = context(&c.client);
    let store = task_store(&c.client, &ns.name).await?;
    ctx.queue.set_tasks(store.clone());
    let tasks: Api<Task> = Api::namespaced(c.client.clone(), &ns.name);
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), &ns.name);

    let first = create_task(&tasks, "first").await?;
    // Created a second later: the queue orders by age.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = create_task(&tasks, "second").await?;
    cached(&store, &ns.name, "second", "both Tasks cached", |_| true).await?;

    reconcile(&first, &ctx).await?;
    cached(&store, &ns.name, "first", "first cached as Running", |t| {
        job_uid(t).is_some()
    })
    .await?;
    reconcile(&second, &ctx).await?;
    let queued = tasks.get("second").await?;
    ensure!(
        phase(&queued) == Some(Phase::Queued),
        "second: phase {:?}",
        phase(&queued)
    );
    ensure!(
        jobs.get_opt("second").await?.is_none(),
        "no Job while queued"
    );
    cached(&store, &ns.name, "second", "second cached as Queued", |t| {
        phase(t) == Some(Phase::Queued)
    })
    .await?;

    jobs.delete("first", &DeleteParams::background()).await?;
    wait::until(Duration::from_secs(30), "first's Job gone", || {
        let jobs = jobs.clone();
        async move { Ok(jobs.get_opt("first").await?.is_none()) }
    })
    .await?;
    let running = tasks.get("first").await?;
    reconcile(&running, &ctx).await?;
    let ended = tasks.get("first").await?;
    ensure!(
        phase(&ended) == Some(Phase::Failed),
        "first: phase {:?}",
        phase(&ended)
    );
    ensure!(
        jobs.get_opt("second").await?.is_some(),
        "the first Task's end started the second's Job"
    );
    Ok(())
}

/// `kubectl longtask` against a cluster without the Task API says that
/// longtask is not installed and how to install it (not "not found").
pub async fn plugin_says_longtask_is_not_installed(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let crd = longtask_e2e::root().join("manifests/crd.yaml");
    let crd = crd.to_str().context("path")?;
    c.kubectl.run(&["delete", "-f", crd, "--wait=true"])?;
    let out = c.kubectl.plugin(&ns.name, &["get", "anything"]);
    // Put it back whatever happened, before judging.
    c.kubectl.run(&["apply", "--server-side", "-f", crd])?;
    c.wait_crd_established()?;
    let out = out?;
    ensure!(out.code == Some(1), "exit code {:?}", out.code);
    ensure!(
        out.stderr
            .contains("longtask is not installed in this cluster")
            && out
                .stderr
                .contains("kubectl apply --server-side -k manifests/"),
        "stderr: {}",
        out.stderr
    );
    Ok(())
}
