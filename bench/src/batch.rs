//! One batch: N bare Jobs or N Tasks created in a fresh namespace, timed by
//! the bench's own watches with local (monotonic) timestamps.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::cluster::WORKER_IMAGE;

/// The program both kinds run: the Task's result, or /dev/null for a bare Job.
pub const SCRIPT: &str = r#"echo ok > "$LONGTASK_RESULT""#;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Kind {
    Jobs,
    Tasks,
}

/// What one batch measured; durations in seconds, latencies in milliseconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Batch {
    pub kind: Kind,
    pub n: usize,
    pub namespace: String,
    pub makespan_s: f64,
    /// Task create returned → watch saw phase Running (Tasks only).
    pub running_ms: Vec<f64>,
    /// Task create returned → watch saw its Job (Tasks only).
    pub job_ms: Vec<f64>,
    /// Job or Task create returned → watch saw its (first) pod.
    pub pod_ms: Vec<f64>,
    /// Watch saw Job Complete → watch saw Task Completed (Tasks only).
    pub finish_ms: Vec<f64>,
    /// Jobs or Tasks that ended Failed.
    pub failed: usize,
}

/// First local time each object reached each state.
#[derive(Default)]
struct Seen {
    created: HashMap<String, Instant>,
    job_seen: HashMap<String, Instant>,
    pod_seen: HashMap<String, Instant>,
    running: HashMap<String, Instant>,
    job_done: HashMap<String, Instant>,
    task_done: HashMap<String, Instant>,
    failed: usize,
    job_failed: usize,
}

type Shared = Arc<Mutex<Seen>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Seen> {
    // A poisoned lock only means a watcher task panicked; the data is still usable.
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub fn tasks_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("longtask.dev", "v1alpha1", "Task");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "tasks");
    Api::namespaced_with(client.clone(), ns, &ar)
}

fn has_condition(status: Option<&Value>, type_: &str) -> bool {
    status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == type_ && c["status"] == "True")
        })
}

/// Spawns a watch on `api` that calls `on_apply` with each object it
/// shows (and when it arrived), and resolves `ready` once its initial list
/// is done; `what` names it in error lines.
pub fn spawn_watch<K>(
    api: Api<K>,
    what: &'static str,
    ready: oneshot::Sender<()>,
    mut on_apply: impl FnMut(K, Instant) + Send + 'static,
) -> JoinHandle<()>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send,
{
    tokio::spawn(async move {
        let mut ready = Some(ready);
        let mut s = watcher::watcher(api, watcher::Config::default()).boxed();
        while let Some(ev) = s.next().await {
            let now = Instant::now();
            match ev {
                Ok(Event::InitDone) => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Ok(Event::Apply(o) | Event::InitApply(o)) => on_apply(o, now),
                Ok(_) => {}
                Err(e) => eprintln!("bench: {what} watch: {e}"),
            }
        }
    })
}

/// Watches Jobs in `ns`; resolves `ready` once the initial list is done.
fn watch_jobs(
    client: &Client,
    ns: &str,
    seen: Shared,
    ready: oneshot::Sender<()>,
) -> JoinHandle<()> {
    let api: Api<Job> = Api::namespaced(client.clone(), ns);
    spawn_watch(api, "job", ready, move |job, now| {
        lock(&seen).job_seen.entry(job.name_any()).or_insert(now);
        let st = job.status.as_ref().map(serde_json::to_value).transpose();
        let st = st.ok().flatten();
        let done = has_condition(st.as_ref(), "Complete");
        let failed = has_condition(st.as_ref(), "Failed");
        if done || failed {
            let mut g = lock(&seen);
            if let Entry::Vacant(e) = g.job_done.entry(job.name_any()) {
                e.insert(now);
                g.job_failed += usize::from(failed && !done);
            }
        }
    })
}

/// Watches pods in `ns` (their Job's name from the Job controller's
/// label); resolves `ready` once the initial list is done.
fn watch_pods(
    client: &Client,
    ns: &str,
    seen: Shared,
    ready: oneshot::Sender<()>,
) -> JoinHandle<()> {
    let api: Api<PartialObjectMeta<Pod>> = Api::namespaced(client.clone(), ns);
    spawn_watch(api, "pod", ready, move |p, now| {
        if let Some(job) = p.labels().get("batch.kubernetes.io/job-name") {
            lock(&seen).pod_seen.entry(job.clone()).or_insert(now);
        }
    })
}

/// Watches Tasks in `ns`; resolves `ready` once the initial list is done.
fn watch_tasks(
    client: &Client,
    ns: &str,
    seen: Shared,
    ready: oneshot::Sender<()>,
) -> JoinHandle<()> {
    spawn_watch(tasks_api(client, ns), "task", ready, move |t, now| {
        let phase = t.data.pointer("/status/phase").and_then(Value::as_str);
        let name = t.name_any();
        let mut g = lock(&seen);
        match phase {
            Some("Running") => {
                g.running.entry(name).or_insert(now);
            }
            Some(p @ ("Completed" | "Failed")) => {
                if let Entry::Vacant(e) = g.task_done.entry(name) {
                    e.insert(now);
                    g.failed += usize::from(p == "Failed");
                }
            }
            _ => {}
        }
    })
}

fn bare_job(name: &str) -> Result<Job> {
    // The same pod as a Task's Job (image, restart policy, volume, security
    // context, Job limits), but the command runs directly, without the
    // worker: a bare Job has no Task identity or result ConfigMap to write.
    Ok(serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "backoffLimit": 0, "completions": 1, "parallelism": 1,
            "podReplacementPolicy": "Failed",
            "template": { "spec": {
                "restartPolicy": "Never",
                "enableServiceLinks": false,
                "securityContext": { "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                                     "seccompProfile": { "type": "RuntimeDefault" } },
                "volumes": [{ "name": "longtask", "emptyDir": {} }],
                "containers": [{
                    "name": "worker",
                    "image": WORKER_IMAGE,
                    "command": ["sh", "-c", SCRIPT],
                    "env": [{ "name": "LONGTASK_RESULT", "value": "/dev/null" }],
                    "volumeMounts": [{ "name": "longtask", "mountPath": "/longtask" }],
                    "securityContext": { "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                         "capabilities": { "drop": ["ALL"] } }
                }]
            }}
        }
    }))?)
}

pub fn task(name: &str) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "longtask.dev/v1alpha1",
        "kind": "Task",
        "metadata": { "name": name },
        "spec": { "command": ["sh", "-c", SCRIPT] }
    }))?)
}

/// A Task whose pod no node takes (a nodeSelector no node matches): the
/// operator does all its work, the cluster runs nothing.
pub fn unplaceable_task(name: &str) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "longtask.dev/v1alpha1",
        "kind": "Task",
        "metadata": { "name": name },
        "spec": {
            "command": ["sh", "-c", SCRIPT],
            "podTemplate": { "nodeSelector": { "longtask.dev/bench": "nowhere" } }
        }
    }))?)
}

pub fn name(i: usize) -> String {
    format!("b-{i:05}")
}

/// Creates `n` objects with `inflight` requests at once, recording when
/// each create returned.
async fn create_all(
    client: &Client,
    ns: &str,
    kind: Kind,
    n: usize,
    inflight: usize,
    seen: &Shared,
) -> Result<()> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let tasks = tasks_api(client, ns);
    stream::iter(0..n)
        .map(|i| {
            let (jobs, tasks, seen) = (jobs.clone(), tasks.clone(), seen.clone());
            async move {
                let nm = name(i);
                let pp = PostParams::default();
                match kind {
                    Kind::Jobs => drop(jobs.create(&pp, &bare_job(&nm)?).await?),
                    Kind::Tasks => drop(tasks.create(&pp, &task(&nm)?).await?),
                }
                lock(&seen).created.insert(nm, Instant::now());
                anyhow::Ok(())
            }
        })
        .buffer_unordered(inflight)
        .try_collect::<()>()
        .await
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs one batch in namespace `ns` (which must exist) and waits for all of it.
pub async fn run(
    client: &Client,
    ns: &str,
    kind: Kind,
    n: usize,
    inflight: usize,
) -> Result<Batch> {
    let seen: Shared = Arc::default();
    let (jtx, jrx) = oneshot::channel();
    let (ttx, trx) = oneshot::channel();
    let (ptx, prx) = oneshot::channel();
    let mut watches = vec![
        watch_jobs(client, ns, seen.clone(), jtx),
        watch_pods(client, ns, seen.clone(), ptx),
    ];
    if kind == Kind::Tasks {
        watches.push(watch_tasks(client, ns, seen.clone(), ttx));
    } else {
        drop(ttx);
    }
    let res = async {
        tokio::time::timeout(Duration::from_secs(30), jrx)
            .await
            .context("job watch never listed")??;
        tokio::time::timeout(Duration::from_secs(30), prx)
            .await
            .context("pod watch never listed")??;
        if kind == Kind::Tasks {
            tokio::time::timeout(Duration::from_secs(30), trx)
                .await
                .context("task watch never listed")??;
        }
        let t0 = Instant::now();
        create_all(client, ns, kind, n, inflight, &seen).await?;
        let limit = Duration::from_secs(120 + n as u64);
        loop {
            let done = {
                let g = lock(&seen);
                match kind {
                    Kind::Jobs => g.job_done.len(),
                    Kind::Tasks => g.task_done.len(),
                }
            };
            if done >= n {
                break;
            }
            if t0.elapsed() > limit {
                bail!("{kind:?} batch in {ns}: only {done}/{n} finished after {limit:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let g = lock(&seen);
        let ends = match kind {
            Kind::Jobs => &g.job_done,
            Kind::Tasks => &g.task_done,
        };
        let last = ends.values().max().copied().unwrap_or(t0);
        let mut b = Batch {
            kind,
            n,
            namespace: ns.to_owned(),
            makespan_s: last.duration_since(t0).as_secs_f64(),
            running_ms: Vec::new(),
            job_ms: Vec::new(),
            pod_ms: Vec::new(),
            finish_ms: Vec::new(),
            failed: match kind {
                Kind::Jobs => g.job_failed,
                Kind::Tasks => g.failed,
            },
        };
        for (nm, created) in &g.created {
            // Signed: a watch event may beat the create's response.
            if let Some(p) = g.pod_seen.get(nm) {
                b.pod_ms.push(signed_ms(*created, *p));
            }
            if kind == Kind::Tasks {
                if let Some(r) = g.running.get(nm) {
                    b.running_ms.push(signed_ms(*created, *r));
                }
                if let Some(j) = g.job_seen.get(nm) {
                    b.job_ms.push(signed_ms(*created, *j));
                }
            }
        }
        if kind == Kind::Tasks {
            for (nm, job) in &g.job_done {
                if let Some(t) = g.task_done.get(nm) {
                    b.finish_ms.push(signed_ms(*job, *t));
                }
            }
        }
        Ok(b)
    }
    .await;
    for w in watches {
        w.abort();
    }
    res
}

fn signed_ms(from: Instant, to: Instant) -> f64 {
    if to >= from {
        ms(to - from)
    } else {
        -ms(from - to)
    }
}

/// Creates the Tasks `build(name(i))` for `i` in `range`, `inflight` at a
/// time; each then gets `status` (a merge patch of its status), when given.
pub async fn create_tasks(
    api: &Api<DynamicObject>,
    range: std::ops::Range<usize>,
    inflight: usize,
    build: fn(&str) -> Result<DynamicObject>,
    status: Option<fn(&str) -> serde_json::Value>,
) -> Result<()> {
    use kube::api::{Patch, PatchParams};
    stream::iter(range)
        .map(|i| {
            let api = api.clone();
            async move {
                let nm = name(i);
                api.create(&PostParams::default(), &build(&nm)?)
                    .await
                    .with_context(|| format!("create Task {nm}"))?;
                if let Some(status) = status {
                    api.patch_status(&nm, &PatchParams::default(), &Patch::Merge(status(&nm)))
                        .await
                        .with_context(|| format!("patch status of Task {nm}"))?;
                }
                anyhow::Ok(())
            }
        })
        .buffer_unordered(inflight)
        .try_collect::<()>()
        .await
}

/// How many Tasks of an `Api` have been seen in one phase, counted by a
/// watch (polling lists of thousands would load the API server that is
/// being measured). The watch stops when this is dropped.
pub struct PhaseCount {
    seen: tokio::sync::watch::Receiver<usize>,
    watch: JoinHandle<()>,
}

impl PhaseCount {
    /// Starts the watch and waits until it has listed what exists.
    pub async fn start(api: &Api<DynamicObject>, phase: &'static str) -> Result<PhaseCount> {
        let (tx, seen) = tokio::sync::watch::channel(0usize);
        let (listed_tx, listed) = oneshot::channel();
        let mut names = std::collections::HashSet::new();
        let watch = spawn_watch(api.clone(), "task", listed_tx, move |t, _| {
            if t.data.pointer("/status/phase").and_then(Value::as_str) == Some(phase) {
                names.insert(t.name_any());
                let _ = tx.send(names.len());
            }
        });
        let count = PhaseCount { seen, watch };
        tokio::time::timeout(Duration::from_secs(30), listed)
            .await
            .context("task watch never listed")??;
        Ok(count)
    }

    /// Waits until `n` Tasks were seen in the phase.
    pub async fn reach(&mut self, n: usize, limit: Duration) -> Result<()> {
        if tokio::time::timeout(limit, self.seen.wait_for(|c| *c >= n))
            .await
            .is_err()
        {
            bail!(
                "only {} of {n} Tasks seen so after {limit:?}",
                *self.seen.borrow()
            );
        }
        Ok(())
    }
}

impl Drop for PhaseCount {
    fn drop(&mut self) {
        self.watch.abort();
    }
}
