//! The watches that wake reconciles: Tasks (into the cache the queue reads),
//! the Jobs and pods they own, their result ConfigMaps, and namespaces'
//! caps. The controller runs until SIGTERM/SIGINT.

pub mod triggers;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crds::Task;
use crds::names::annotations::MAX_ACTIVE_TASKS;
use crds::names::labels;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Controller};
use kube::runtime::reflector::{self, ObjectRef, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{debug, info, warn};

use crate::context::Context;
use crate::{cache, collector, reconcile, status};

/// Objects per page of a watch's initial list. kube's default (500) holds
/// 500 whole objects (a Job with its pod template, a Task with its result
/// and log tail) parsed at once before the caches slim them, and the
/// allocator keeps that peak: small pages keep a start beside a long
/// history near the steady state, for a few more requests (one per 100).
const LIST_PAGE: u32 = 100;

/// The pod watch leaves out finished pods: they never change again (the
/// final read lists a finished Job's pods from the API server), and a
/// finished Task keeps its pods by default, so caching them would grow
/// with history. A pod that finishes leaves the watch as a deletion.
const LIVE_PODS: &str = "status.phase!=Succeeded,status.phase!=Failed";

/// Runs the controller until SIGTERM/SIGINT, then lets running reconciles finish.
pub async fn run(client: Client, ctx: Arc<Context>, namespace: Option<&str>, concurrency: u16) {
    let (cron_wakes, cron_woken) = futures::channel::mpsc::unbounded();
    let (gone, deleted) = futures::channel::mpsc::channel(ctx.config.outputs.pending);
    let wires = Wires { cron_wakes, gone };
    let (controller, jobs) = controller(&client, namespace, concurrency, &ctx, wires);
    let store = controller.store();
    ctx.queue.set_tasks(store.clone());
    ctx.queue.set_jobs(jobs);
    // A Namespace (and an OutputStore) is cluster-scoped: watching only
    // one namespace, the operator makes only namespaced calls (its install
    // has Roles only), so it reads no Namespace, no namespace annotation,
    // and no OutputStore.
    let collector = namespace
        .is_none()
        .then(|| cluster_scoped(&client, &ctx, &store, deleted));
    ctx.metrics.watch_store(store.clone());
    let synced = Arc::new(AtomicBool::new(false));
    report_ready(store, ctx.metrics.clone(), synced.clone());
    info!(
        namespace = namespace.unwrap_or("<all>"),
        worker_image = %ctx.config.worker_image,
        "starting controller"
    );
    let running = controller
        .run(reconcile::reconcile, reconcile::error_policy, ctx.clone())
        .for_each(|res| async move {
            if let Err(e) = res {
                match e {
                    controller::Error::ObjectNotFound(_) => {}
                    e => warn!(error = %e, "controller"),
                }
            }
        });
    // kube's graceful shutdown first waits for the Task cache to sync: with
    // the API server unreachable that never happens. Nothing reconciles
    // before the sync, so stop at once then.
    let unsynced_stop = async {
        shutdown_signal().await;
        if synced.load(Ordering::Relaxed) {
            std::future::pending::<()>().await;
        }
    };
    // CronTasks read their runs from the Task cache this controller fills.
    let crons = tokio::spawn(crate::cron::run(
        client.clone(),
        ctx.clone(),
        namespace.map(str::to_owned),
        cron_woken,
    ));
    tokio::select! {
        () = running => info!("controller stopped"),
        () = unsynced_stop => info!("stopped before the Task cache synced"),
    }
    crons.abort();
    collector.iter().for_each(tokio::task::JoinHandle::abort);
}

/// The watches of an operator of every namespace, of cluster-scoped
/// objects: namespaces and `OutputStore`s; and the collector of deleted
/// Tasks' objects (which only stores make), handed them by `deleted`.
fn cluster_scoped(
    client: &Client,
    ctx: &Arc<Context>,
    tasks: &reflector::Store<Task>,
    deleted: futures::channel::mpsc::Receiver<collector::Gone>,
) -> tokio::task::JoinHandle<()> {
    ctx.queue
        .set_namespaces(watch_namespaces(client, ctx.clone()));
    ctx.caches.set_output_stores(watch_output_stores(client));
    tokio::spawn(collector::run(ctx.clone(), tasks.clone(), deleted))
}

/// Where the Task watch sends what it saw besides the controller: the
/// CronTasks whose runs changed, the deleted Tasks whose objects are to go.
struct Wires {
    cron_wakes: futures::channel::mpsc::UnboundedSender<ObjectRef<crds::CronTask>>,
    gone: futures::channel::mpsc::Sender<collector::Gone>,
}

/// A cache of the `OutputStore`s, kept by a watch for as long as the
/// controller runs. A changed store wakes no Task: the next one to start,
/// end or be collected reads it.
fn watch_output_stores(client: &Client) -> reflector::Store<crds::OutputStore> {
    let (reader, writer) = reflector::store();
    let api: Api<crds::OutputStore> = Api::all(client.clone());
    let stream = reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    );
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Err(e) = ev {
                warn!(error = %e, "OutputStore watch");
            }
        }
    });
    reader
}

/// A watch config of the objects longtask labels with a Task's UID.
fn ours() -> watcher::Config {
    watcher::Config::default()
        .labels(labels::TASK_UID)
        .page_size(LIST_PAGE)
}

/// The controller on Tasks, woken by the Jobs and pods they own and by
/// their result ConfigMaps; and the cache of those Jobs (slimmed), which
/// the watch fills before it wakes their Tasks. Owned Jobs and pods wake a
/// Task only when what its status reads changed (`triggers.rs`); result
/// ConfigMaps on any change (their data is read on demand, so their watch
/// carries metadata only). Each watch fills its cache (`cache.rs`, the
/// Jobs' in the queue) before it wakes a Task, so the reconcile reads
/// there what woke it.
fn controller(
    client: &Client,
    ns: Option<&str>,
    concurrency: u16,
    ctx: &Arc<Context>,
    wires: Wires,
) -> (Controller<Task>, reflector::Store<Job>) {
    // The Tasks that wait for a Task that changed (`spec.after`): sent by
    // the Task watch, woken by the controller.
    let (upstream_wakes, woken) = futures::channel::mpsc::unbounded();
    let (task_stream, store) = task_watch(api(client, ns), ctx, wires, upstream_wakes);
    let (job_stream, job_store) = job_watch(api(client, ns), ctx.clone());
    let pod_stream = pod_watch(api(client, ns), ctx);
    let cms: Api<PartialObjectMeta<ConfigMap>> = api(client, ns);
    let versions = ctx.clone();
    let cm_stream = watcher(cms, ours())
        .default_backoff()
        .inspect(move |ev| {
            if let Ok(ev) = ev {
                versions.caches.index_result(ev);
            }
        })
        .touched_objects();
    let refusal_stream = refusal_watch(api(client, ns), ctx.clone());
    let moves = queue_moves(ctx, store.clone());
    let controller = Controller::for_stream(task_stream, store)
        .reconcile_on(moves)
        .reconcile_on(woken)
        .owns_stream(job_stream)
        .watches_stream(pod_stream, task_of_pod)
        .watches_stream(cm_stream, task_of_result)
        .watches_stream(refusal_stream, task_of_refused_job)
        .with_config(controller::Config::default().concurrency(concurrency))
        .shutdown_on_signal();
    (controller, job_store)
}

/// The Tasks that wake their reconciles, and the Task cache, which holds
/// what reconciles and the queue read, nothing more.
fn task_watch(
    tasks: Api<Task>,
    ctx: &Arc<Context>,
    wires: Wires,
    upstream_wakes: futures::channel::mpsc::UnboundedSender<ObjectRef<Task>>,
) -> (
    impl futures::Stream<Item = Result<Task, watcher::Error>> + Send + 'static,
    reflector::Store<Task>,
) {
    let (store, writer) = reflector::store();
    let before = store.clone();
    let on_end = ctx.clone();
    let on_delete = ctx.clone();
    let runs = ctx.clone();
    let Wires {
        cron_wakes,
        mut gone,
    } = wires;
    let stream = reflector(
        writer,
        watcher(tasks, watcher::Config::default().page_size(LIST_PAGE))
            .default_backoff()
            .modify(slim_task)
            .inspect(before_cache(before, on_end, upstream_wakes)),
    )
    // A Task deleted before it ended leaves its queue (or its slot). A
    // CronTask's run wakes its CronTask.
    .inspect(move |ev| {
        if let Ok(ev) = ev {
            runs.caches.index_task(ev);
        }
        if let Ok(watcher::Event::Delete(t)) = ev {
            if !t.is_terminal() {
                on_delete.queue.moved(&t.namespace().unwrap_or_default());
            }
            // Its objects go in the background; if too many wait, the sweep.
            if let Some(g) = collector::gone(&on_delete, t)
                && gone.try_send(g).is_err()
            {
                debug!("too many deleted Tasks' outputs to delete; the sweep collects them");
            }
        }
        if let Ok(watcher::Event::Apply(t) | watcher::Event::Delete(t)) = ev
            && let Some(cron) = crate::cron::owner_of(t)
        {
            let _ = cron_wakes.unbounded_send(cron);
        }
    })
    .applied_objects();
    (stream, store)
}

/// What the Task watch does with an event before the cache takes it,
/// compared with what the cache held: a Task's end moves its queue, and a
/// Task changed as the Tasks waiting for it (`spec.after`) see it wakes
/// them. Seen before, acted on after: the queue's walk and the waiters'
/// reconciles run once this poll is over, when the cache has the event.
fn before_cache(
    before: reflector::Store<Task>,
    ctx: Arc<Context>,
    wakes: futures::channel::mpsc::UnboundedSender<ObjectRef<Task>>,
) -> impl FnMut(&Result<watcher::Event<Task>, watcher::Error>) {
    move |ev| {
        let Ok(ev) = ev else { return };
        if let Some(ns) = ended_in(&before, ev) {
            ctx.queue.moved(&ns);
        }
        if let Some((ns, name)) = triggers::upstream_change(&before, ev) {
            for waiter in ctx.caches.waiters_of(&ns, &name) {
                let _ = wakes.unbounded_send(waiter);
            }
        }
    }
}

/// The namespace of a Task that `ev` shows terminal and the cache still
/// shows unfinished: its slot is free once the cache takes `ev`. The
/// Task's own end already moved its queue (`admit::drain`), but the
/// queued Tasks that move woke may have read the cache before it showed
/// the end, and waited behind a Task that was gone; nothing else would
/// wake them (a kept Job is not deleted).
fn ended_in(cache: &reflector::Store<Task>, ev: &watcher::Event<Task>) -> Option<String> {
    let (watcher::Event::Apply(t) | watcher::Event::InitApply(t)) = ev else {
        return None;
    };
    let cached = cache.get(&ObjectRef::from_obj(t))?;
    (t.is_terminal() && !cached.is_terminal()).then(|| t.namespace().unwrap_or_default())
}

/// The Jobs that wake their Tasks, and the Job cache, which holds
/// unfinished Jobs only (`unfinished_view`); the triggers see every event.
fn job_watch(
    jobs: Api<Job>,
    ctx: Arc<Context>,
) -> (
    impl futures::Stream<Item = Result<Job, watcher::Error>> + Send + 'static,
    reflector::Store<Job>,
) {
    let (job_store, mut job_writer) = reflector::store();
    let stream = triggers::changed(
        watcher(jobs, ours())
            .default_backoff()
            .modify(slim_job)
            .inspect(move |ev| {
                let Ok(ev) = ev else { return };
                match unfinished_view(ev) {
                    Some(gone) => job_writer.apply_watcher_event(&gone),
                    None => job_writer.apply_watcher_event(ev),
                }
                // A deleted Job frees the slot it held (its Task may be gone).
                if let watcher::Event::Delete(j) = ev {
                    ctx.queue.moved(&j.namespace().unwrap_or_default());
                    if let Some(uid) = j.metadata.uid.as_deref() {
                        ctx.caches.forget_refusals(uid);
                    }
                }
            }),
        triggers::job_key,
    );
    (stream, job_store)
}

/// The Job controller's FailedCreate Events of Jobs (the API server
/// refused a pod), kept in the refusal cache: they wake the Task of the
/// Job (named after it), which reads why from the cache. The watch is
/// filtered by the API server; a Job not longtask's wakes at most a
/// reconcile that finds no such Task.
fn refusal_watch(
    events: Api<CoreEvent>,
    ctx: Arc<Context>,
) -> impl futures::Stream<Item = Result<CoreEvent, watcher::Error>> + Send + 'static {
    let cfg = watcher::Config::default()
        .fields("reason=FailedCreate,involvedObject.kind=Job")
        .page_size(LIST_PAGE);
    watcher(events, cfg)
        .default_backoff()
        .inspect(move |ev| {
            if let Ok(ev) = ev {
                ctx.caches.index_refusal(ev);
            }
        })
        .touched_objects()
}

/// Maps a FailedCreate Event of a Job to the Task of that name.
fn task_of_refused_job(ev: CoreEvent) -> Option<ObjectRef<Task>> {
    let job = &ev.involved_object;
    Some(ObjectRef::new(job.name.as_deref()?).within(job.namespace.as_deref()?))
}

/// The live pods that wake their Tasks, kept in the pod cache and its
/// index.
fn pod_watch(
    pods: Api<Pod>,
    ctx: &Arc<Context>,
) -> impl futures::Stream<Item = Result<Pod, watcher::Error>> + Send + 'static {
    let (pod_store, pod_writer) = reflector::store();
    ctx.caches.set_pods(pod_store);
    let indexed = ctx.clone();
    triggers::changed(
        reflector(
            pod_writer,
            watcher(pods, ours().fields(LIVE_PODS))
                .default_backoff()
                .modify(cache::slim_pod),
        )
        .inspect(move |ev| {
            if let Ok(ev) = ev {
                indexed.caches.index_pod(ev);
            }
        }),
        triggers::pod_key,
    )
}

/// Where the queue moved, its queued Tasks are looked at again. The moves
/// waiting together (a namespace's Jobs deleted in a burst) are merged
/// first, so the cache is walked once per namespace, not once per move.
fn queue_moves(
    ctx: &Context,
    queued: reflector::Store<Task>,
) -> futures::stream::BoxStream<'static, ObjectRef<Task>> {
    ctx.queue
        .take_moves()
        .map(|rx| {
            rx.ready_chunks(1024)
                .flat_map(move |scopes| {
                    let refs: Vec<ObjectRef<Task>> = merge_scopes(scopes)
                        .iter()
                        .flat_map(|scope| queued_in(&queued, scope.as_deref()))
                        .collect();
                    futures::stream::iter(refs)
                })
                .boxed()
        })
        .unwrap_or_else(|| futures::stream::empty().boxed())
}

/// The distinct scopes of `moves`: every namespace (None) alone when it is
/// among them, since it covers the rest.
fn merge_scopes(moves: Vec<Option<String>>) -> Vec<Option<String>> {
    let scopes: std::collections::BTreeSet<Option<String>> = moves.into_iter().collect();
    if scopes.contains(&None) {
        return vec![None];
    }
    scopes.into_iter().collect()
}

/// The Tasks waiting for a slot under longtask's own caps, in `namespace`
/// or in all (None).
fn queued_in(store: &reflector::Store<Task>, namespace: Option<&str>) -> Vec<ObjectRef<Task>> {
    store
        .state()
        .iter()
        .filter(|t| namespace.is_none_or(|n| t.metadata.namespace.as_deref() == Some(n)))
        .filter(|t| status::is_queue_full(t))
        .map(|t| ObjectRef::from_obj(&**t))
        .collect()
}

/// Keeps of a watched Job what the triggers, the queue and the status
/// read: its identity, owner, creation time, the labels and annotations
/// of longtask and Kueue, `spec.suspend` and its status counts and
/// conditions; not the pod template, managed fields or finalizers. A
/// reconcile reads its Task's running Job from the cache, so a look costs
/// no API call.
fn slim_job(j: &mut Job) {
    let m = &mut j.metadata;
    m.managed_fields = None;
    m.finalizers = None;
    retain_keys(&mut m.labels, |k| {
        k.starts_with(crds::names::GROUP_PREFIX) || k.starts_with(KUEUE_PREFIX)
    });
    retain_keys(&mut m.annotations, |k| {
        k.starts_with(crds::names::GROUP_PREFIX)
    });
    j.spec = j.spec.take().map(|s| JobSpec {
        suspend: s.suspend,
        ..JobSpec::default()
    });
    if let Some(st) = j.status.as_mut() {
        st.uncounted_terminated_pods = None;
    }
}

/// What the Job cache takes of a watch event in place of `ev`, when not
/// `ev` itself: a finished Job leaves it (a deletion). A finished Job
/// never changes again and is read once more at most, by its Task's final
/// read (then from the API server); finished Tasks keep their Jobs by
/// default, so caching them would grow with history. The triggers still
/// see the event: the Job's end wakes its Task.
fn unfinished_view(ev: &watcher::Event<Job>) -> Option<watcher::Event<Job>> {
    match ev {
        watcher::Event::Apply(j) | watcher::Event::InitApply(j)
            if status::observe::finish(j).is_some() =>
        {
            Some(watcher::Event::Delete(j.clone()))
        }
        _ => None,
    }
}

/// Labels Kueue sets or reads on a Job (`kueue.x-k8s.io/queue-name`).
const KUEUE_PREFIX: &str = "kueue.x-k8s.io/";

/// Drops the entries of `map` whose key `keep` refuses (and the map, when
/// nothing is left).
fn retain_keys(
    map: &mut Option<std::collections::BTreeMap<String, String>>,
    keep: impl Fn(&str) -> bool,
) {
    if let Some(m) = map.as_mut() {
        m.retain(|k, _| keep(k));
        if m.is_empty() {
            *map = None;
        }
    }
}

/// Marks the operator ready once the Task cache has synced. Polls with a
/// timeout: the store's readiness signal wakes only its most recent
/// waiter, and the controller itself waits on it too.
fn report_ready(
    store: reflector::Store<Task>,
    metrics: Arc<crate::telemetry::metrics::Metrics>,
    synced: Arc<AtomicBool>,
) {
    tokio::spawn(async move {
        loop {
            match tokio::time::timeout(Duration::from_secs(1), store.wait_until_ready()).await {
                Ok(Ok(())) => {
                    synced.store(true, Ordering::Relaxed);
                    metrics.set_ready();
                    info!("Task cache synced; ready");
                    break;
                }
                Ok(Err(_)) => break,
                Err(_) => {}
            }
        }
    });
}

/// A cache of namespaces' metadata (their max-active-tasks annotation and
/// UID), kept by a watch for as long as the controller runs. A changed cap
/// moves the namespace's queue.
fn watch_namespaces(
    client: &Client,
    ctx: Arc<Context>,
) -> kube::runtime::reflector::Store<kube::core::PartialObjectMeta<Namespace>> {
    let (reader, writer) = kube::runtime::reflector::store();
    let api: Api<kube::core::PartialObjectMeta<Namespace>> = Api::all(client.clone());
    let cfg = watcher::Config::default().page_size(LIST_PAGE);
    let stream = kube::runtime::reflector(writer, watcher(api, cfg).default_backoff());
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut caps: HashMap<String, Option<String>> = HashMap::new();
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(watcher::Event::Apply(ns) | watcher::Event::InitApply(ns)) => {
                    let cap = ns.annotations().get(MAX_ACTIVE_TASKS).cloned();
                    let name = ns.name_any();
                    if caps.get(&name).is_some_and(|old| *old != cap) {
                        ctx.queue.moved(&name);
                    }
                    caps.insert(name, cap);
                }
                Ok(watcher::Event::Delete(ns)) => {
                    caps.remove(&ns.name_any());
                }
                Ok(_) => {}
                Err(e) => warn!(error = %e, "namespace watch"),
            }
        }
    });
    reader
}

/// Maps a pod of a Task's Job to that Task (by the label on the pod template).
fn task_of_pod(pod: Pod) -> Option<ObjectRef<Task>> {
    let name = pod.labels().get(labels::TASK_NAME)?;
    Some(ObjectRef::new(name).within(&pod.namespace()?))
}

/// Keeps out of the Task cache what no reconcile reads: managed fields, the
/// last-applied annotation, and a terminal Task's result, logs and messages
/// (a terminal Task is never reconciled; the queue reads only its phase).
fn slim_task(t: &mut Task) {
    t.managed_fields_mut().clear();
    t.annotations_mut()
        .remove("kubectl.kubernetes.io/last-applied-configuration");
    if t.is_terminal() {
        slim_finished_spec(t);
    }
    if t.is_terminal()
        && let Some(s) = t.status.take()
    {
        // Conditions that agree with the phase are kept as their True ones
        // without messages (so `settle` sees at no cost that nothing is to
        // be set right); ones that disagree are kept whole, and `settle`
        // reads the Task to set them right.
        let conditions = if status::conditions_agree(&s) {
            s.conditions
                .into_iter()
                .filter(|c| c.status == "True")
                .map(|c| Condition {
                    message: String::new(),
                    ..c
                })
                .collect()
        } else {
            s.conditions
        };
        t.status = Some(crds::TaskStatus {
            conditions,
            phase: s.phase,
            reason: s.reason,
            job_name: s.job_name,
            job_uid: s.job_uid,
            started_at: s.started_at,
            completed_at: s.completed_at,
            attempts: s.attempts,
            exit_code: s.exit_code,
            observed_generation: s.observed_generation,
            // Where its objects are and its download Secret, for their
            // renewal and collection; not the list of files.
            outputs: s.outputs.map(|o| crds::OutputsStatus {
                files: Vec::new(),
                ..o
            }),
            ..crds::TaskStatus::default()
        });
    }
}

/// A finished Task's spec is read for its retention only
/// (`deleteAfterSeconds`; `settle` reads the whole Task when it must), and
/// its labels and annotations by nothing: they leave the cache. What the
/// program ran and in which pod (command, env, pod template) can be large.
fn slim_finished_spec(t: &mut Task) {
    t.metadata.labels = None;
    t.metadata.annotations = None;
    // `after` is read of a finished Task only by a cycle search, through
    // a Task failed for the cycle (`after::cycle`).
    let for_cycle = t
        .status
        .as_ref()
        .is_some_and(|s| s.known_reason() == Some(crds::Reason::DependencyCycle));
    let s = &mut t.spec;
    if !for_cycle {
        s.after = Vec::new();
    }
    s.command = Vec::new();
    s.args = Vec::new();
    s.env = Vec::new();
    s.volume_mounts = Vec::new();
    s.fail_on_exit_codes = Vec::new();
    s.image = None;
    s.working_dir = None;
    s.security_context = None;
    s.pod_template = None;
    s.resources = None;
}

/// Maps a result ConfigMap to the Task that owns it.
fn task_of_result(cm: PartialObjectMeta<ConfigMap>) -> Option<ObjectRef<Task>> {
    let owner = cm
        .owner_references()
        .iter()
        .find(|o| o.kind == crds::names::KIND && o.api_version == crds::names::API_VERSION)?;
    Some(ObjectRef::new(&owner.name).within(&cm.namespace()?))
}

fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests {
    use crds::{Phase, Task};
    use k8s_openapi::api::batch::v1::Job;
    use kube::ResourceExt;

    use super::{ended_in, merge_scopes, slim_job, slim_task, triggers};
    use crate::fixtures::{JobFixture, ResultFixture, TaskFixture, obs};
    use crate::status::{self, desired};

    /// A Task's end moves its queue when the cache takes it: not when the
    /// cache already had it ended, not for a Task still running, not for a
    /// Task the cache never had (the first list).
    #[test]
    fn an_end_the_cache_has_not_seen_moves_the_queue() {
        use kube::runtime::reflector;
        use kube::runtime::watcher::Event;
        let running = Task::test().running();
        let ended = Task::test().status(crds::TaskStatus {
            phase: Some(Phase::Completed),
            ..crate::fixtures::running()
        });
        let (store, mut writer) = reflector::store();
        assert_eq!(ended_in(&store, &Event::Apply(ended.clone())), None);
        writer.apply_watcher_event(&Event::Apply(running.clone()));
        assert_eq!(ended_in(&store, &Event::Apply(running.clone())), None);
        assert_eq!(
            ended_in(&store, &Event::Apply(ended.clone())),
            Some("ns".into())
        );
        assert_eq!(
            ended_in(&store, &Event::InitApply(ended.clone())),
            Some("ns".into())
        );
        assert_eq!(ended_in(&store, &Event::Delete(ended.clone())), None);
        writer.apply_watcher_event(&Event::Apply(ended.clone()));
        assert_eq!(ended_in(&store, &Event::Apply(ended)), None);
    }

    #[test]
    fn moves_merge_per_namespace_and_all_covers_every_one() {
        let ns = |n: &str| Some(n.to_owned());
        assert_eq!(
            merge_scopes(vec![ns("b"), ns("a"), ns("b"), ns("a")]),
            vec![ns("a"), ns("b")]
        );
        assert_eq!(merge_scopes(vec![ns("a"), None, ns("b")]), vec![None]);
    }

    /// A slimmed Job wakes its Task exactly when the whole one would, and
    /// keeps what the queue reads (its Task label, its owner).
    #[test]
    fn slim_jobs_trigger_as_whole_ones() {
        for job in [
            JobFixture::ours().build(),
            JobFixture::ours().untouched().build(),
            JobFixture::ours().active(1).build(),
            JobFixture::ours().suspended().build(),
            JobFixture::ours().failed_pods(2).active(1).build(),
            JobFixture::ours().complete().build(),
            JobFixture::ours().failed("BackoffLimitExceeded").build(),
            JobFixture::ours()
                .completed_indexes("0-2")
                .failed_indexes("3")
                .build(),
        ] {
            let mut slim = job.clone();
            slim_job(&mut slim);
            assert_eq!(triggers::job_key(&slim), triggers::job_key(&job), "{job:?}");
            assert_eq!(
                slim.metadata.owner_references,
                job.metadata.owner_references
            );
            let uid = |j: &k8s_openapi::api::batch::v1::Job| {
                j.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(crds::names::labels::TASK_UID).cloned())
            };
            assert_eq!(uid(&slim), uid(&job));
            assert!(slim.spec.as_ref().is_none_or(|s| s.template.spec.is_none()));
        }
    }

    /// The Job cache holds running Jobs only; a finished one leaves it,
    /// during a relist too.
    #[test]
    fn finished_jobs_leave_the_job_cache() {
        use kube::runtime::watcher::Event;
        let (store, mut writer) = kube::runtime::reflector::store::<Job>();
        let mut feed = |ev: Event<Job>| match super::unfinished_view(&ev) {
            Some(gone) => writer.apply_watcher_event(&gone),
            None => writer.apply_watcher_event(&ev),
        };
        let named = |name: &str, j: JobFixture| {
            let mut j = j.build();
            j.metadata.name = Some(name.into());
            j.metadata.namespace = Some("ns".into());
            j
        };
        feed(Event::Init);
        feed(Event::InitApply(named("run", JobFixture::ours().active(1))));
        feed(Event::InitApply(named(
            "done",
            JobFixture::ours().complete(),
        )));
        feed(Event::InitDone);
        let names = || {
            let mut n: Vec<String> = store.state().iter().map(|j| j.name_any()).collect();
            n.sort();
            n
        };
        assert_eq!(names(), ["run"]);
        feed(Event::Apply(named(
            "run",
            JobFixture::ours().failed("BackoffLimitExceeded"),
        )));
        assert!(names().is_empty());
        feed(Event::Apply(named("new", JobFixture::ours())));
        assert_eq!(names(), ["new"]);
    }

    /// A finished Task in the cache keeps conditions that still show they
    /// agree with its phase (so re-looking at it costs no API call), and
    /// loses its result and messages; a running one is kept whole.
    #[test]
    fn slim_terminal_tasks_still_agree() {
        let job = JobFixture::ours().complete().build();
        let result = ResultFixture::new("42").build();
        let done = desired(&Task::test(), &obs(Some(&job), Some(&result), &[])).status;
        assert_eq!(done.phase, Some(Phase::Completed));
        assert!(status::conditions_agree(&done));
        let mut t = Task::test().status(done);
        slim_task(&mut t);
        let s = t.status.as_ref().expect("status");
        assert!(status::conditions_agree(s), "{:?}", s.conditions);
        assert!(s.result.is_none() && s.message.is_none());
        assert!(s.conditions.iter().all(|c| c.message.is_empty()));
        assert!(
            s.conditions.iter().all(|c| c.status == "True"),
            "{:?}",
            s.conditions
        );

        let mut running = Task::test().status(crate::fixtures::running());
        let before = running.status.clone();
        slim_task(&mut running);
        assert_eq!(running.status, before);
    }
}
