//! The reconciler's read caches of cluster facts, filled by the
//! controller's watches before they wake a Task: the live pods of Tasks'
//! Jobs (slimmed, indexed by Task; a pod that has finished never changes
//! again, so the watch leaves it out, and memory follows the work that
//! runs, not the history kept) and which result ConfigMaps exist (a name
//! and a version each, not the object: a finished Task keeps its result,
//! so this grows with history and is kept to two strings). A reconcile
//! reads them instead of the API server while its Task runs; what it
//! reads as final (the pods whose exit codes the last status keeps) comes
//! from the API server. And which version of its result a running Task's
//! status shows, so an unchanged result is not read again. Never Task
//! state: a restart lists them again (and reads each result once more).

mod key;
mod refusals;
pub mod upstreams;

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

use crds::names::{self, labels};
use crds::{OutputStore, Task};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;

use crate::status::observe;
use crate::store::ready;

/// Past this many Tasks with a result shown, the notes are dropped (a
/// Task deleted while it ran leaves its note behind): one more read each.
const SHOWN_MAX: usize = 100_000;

/// Past this many Tasks marked as having lost a pod, the marks are dropped
/// (a Task that ended or went before its next pod read leaves its mark):
/// at worst one more pod list each, where the marks would hold memory.
const DEPARTED_MAX: usize = 4096;

/// The caches, set once the controller's watches are made.
#[derive(Default)]
pub struct Caches {
    pods: OnceLock<Store<Pod>>,
    /// The pod cache's keys by Task, so a reconcile finds its pods without
    /// walking every pod (kube's store has no index).
    pod_index: Mutex<PodIndex>,
    /// The resourceVersion of each result ConfigMap, by namespace/name.
    results: Mutex<Versions>,
    /// Per running Task (UID), the resourceVersion of its result
    /// ConfigMap that its status shows (read, then written or unchanged).
    shown: Mutex<HashMap<String, String>>,
    /// Tasks (UIDs) a pod of which left the pod cache since their last
    /// reconcile: see `Caches::take_departed`.
    departed: Mutex<HashSet<String>>,
    /// The Task cache's keys of CronTasks' runs, by CronTask, so a
    /// CronTask finds its runs without walking every Task.
    runs: Mutex<RunIndex>,
    /// The Tasks that wait for upstreams (`spec.after`), by upstream.
    upstreams: Mutex<upstreams::UpstreamIndex>,
    /// The `OutputStore`s (cluster-scoped: only when the operator watches
    /// every namespace).
    output_stores: OnceLock<Store<OutputStore>>,
    /// Why the API server refuses Jobs' pods (the Job controller's
    /// FailedCreate Events), by Job UID.
    refusals: Mutex<refusals::Refusals>,
}

impl Caches {
    pub fn set_pods(&self, store: Store<Pod>) {
        let _ = self.pods.set(store);
    }

    pub fn set_output_stores(&self, store: Store<OutputStore>) {
        let _ = self.output_stores.set(store);
    }

    /// The `OutputStore` cache, once its watch has listed every store;
    /// `None` before, and where no store is read (one namespace watched).
    pub fn output_stores(&self) -> Option<&Store<OutputStore>> {
        ready(self.output_stores.get()?)
    }

    /// True when this operator reads `OutputStore`s at all.
    pub fn reads_output_stores(&self) -> bool {
        self.output_stores.get().is_some()
    }

    /// Keeps the result versions in step with the result watch; called
    /// with each event before it wakes a Task.
    pub fn index_result(&self, ev: &Event<PartialObjectMeta<ConfigMap>>) {
        if let Ok(mut versions) = self.results.lock() {
            versions.apply(ev);
        }
    }

    /// Keeps the refusals in step with the watch of FailedCreate Events;
    /// called with each event before it wakes a Task.
    pub fn index_refusal(&self, ev: &Event<CoreEvent>) {
        if let Ok(mut r) = self.refusals.lock() {
            r.apply(ev);
        }
    }

    /// The newest message of the Job controller's FailedCreate Events of
    /// Job `job_uid`: why the API server refuses its pods. `None` when
    /// there is none, or before the watch has listed them.
    pub fn refusal(&self, job_uid: &str) -> Option<String> {
        self.refusals.lock().ok()?.of(job_uid)
    }

    /// Job `job_uid` was deleted: its refusals are no longer kept.
    pub fn forget_refusals(&self, job_uid: &str) {
        if let Ok(mut r) = self.refusals.lock() {
            r.forget(job_uid);
        }
    }

    /// The pods of Job `job` of the Task with UID `task_uid`, when the pod
    /// cache and its index have synced; `None` before (ask the API server).
    pub fn pods(&self, namespace: &str, task_uid: &str, job: &Job) -> Option<Vec<Pod>> {
        let store = ready(self.pods.get()?)?;
        let job_uid = job.metadata.uid.as_deref()?;
        let keys = self.pod_index.lock().ok()?.of(task_uid)?;
        Some(
            keys.iter()
                .filter_map(|k| store.get(k))
                .filter(|p| {
                    p.metadata.namespace.as_deref() == Some(namespace)
                        && observe::controlled_by(&p.metadata, job_uid)
                })
                .map(|p| Pod::clone(&p))
                .collect(),
        )
    }

    /// Keeps the run and upstream indexes in step with the Task watch; called with each
    /// event right after the Task store took it.
    pub fn index_task(&self, ev: &Event<Task>) {
        if let Ok(mut index) = self.runs.lock() {
            index.apply(ev);
        }
        if let Ok(mut index) = self.upstreams.lock() {
            index.apply(ev);
        }
    }

    /// The Tasks that wait for the Task `name` of `namespace` (through
    /// `spec.after`) and have not started.
    pub fn waiters_of(&self, namespace: &str, name: &str) -> Vec<ObjectRef<Task>> {
        self.upstreams
            .lock()
            .map(|index| index.waiters_of(namespace, name))
            .unwrap_or_default()
    }

    /// The keys of the Tasks whose controller is the CronTask with UID
    /// `cron_uid`, once the index has synced; `None` before.
    pub fn runs_of(&self, cron_uid: &str) -> Option<Vec<ObjectRef<Task>>> {
        let index = self.runs.lock().ok()?;
        index.synced.then(|| {
            index
                .by_owner
                .get(cron_uid)
                .map(|keys| keys.iter().cloned().collect())
                .unwrap_or_default()
        })
    }

    /// How many runs of CronTasks are active (not finished) in `namespace`,
    /// once the index has synced; `None` before.
    pub fn active_runs_in(&self, namespace: &str) -> Option<usize> {
        let index = self.runs.lock().ok()?;
        index
            .synced
            .then(|| index.active.get(namespace).map_or(0, HashSet::len))
    }

    /// Keeps the pod index in step with the pod watch; called with each
    /// event right after the pod store took it.
    pub fn index_pod(&self, ev: &Event<Pod>) {
        if let Ok(mut index) = self.pod_index.lock() {
            index.apply(ev);
        }
        if let Event::Delete(p) = ev
            && let Some(task) = p.labels().get(labels::TASK_UID)
            && let Ok(mut d) = self.departed.lock()
        {
            if d.len() >= DEPARTED_MAX {
                d.clear();
            }
            d.insert(task.clone());
        }
    }

    /// True once after a pod of Task `task_uid` left the pod cache (it
    /// finished, or was deleted): the next reconcile reads its pods from
    /// the API server. The watch of live pods tells only that the pod
    /// left, with the object as it was before: the pod garbage collector
    /// marks a pod Failed with its DisruptionTarget condition in one write
    /// (its node was deleted), so only a read shows why, before the Job
    /// controller lets the pod go (its pod-tracking finalizer). A restart
    /// between the two loses that count, never a retry: the Job's
    /// podFailurePolicy ignores the failure either way.
    pub fn take_departed(&self, task_uid: &str) -> bool {
        self.departed.lock().is_ok_and(|mut d| d.remove(task_uid))
    }

    /// Undoes `take_departed` when the read it asked for failed.
    pub fn mark_departed(&self, task_uid: &str) {
        if let Ok(mut d) = self.departed.lock() {
            d.insert(task_uid.to_owned());
        }
    }

    /// False when the cache has synced and holds no result ConfigMap
    /// `name`, or the very version the status of Task `task_uid` shows:
    /// nothing new to read (its next change wakes the Task). True
    /// otherwise.
    pub fn result_is_new(&self, namespace: &str, name: &str, task_uid: &str) -> bool {
        let shown = self.shown.lock().ok();
        let seen = shown.as_ref().and_then(|m| m.get(task_uid));
        self.results
            .lock()
            .map_or(true, |v| v.may_differ(namespace, name, seen))
    }

    /// The status of Task `task_uid` now shows version `rv` of its result.
    pub fn result_shown(&self, task_uid: &str, rv: String) {
        if let Ok(mut m) = self.shown.lock() {
            if m.len() >= SHOWN_MAX && !m.contains_key(task_uid) {
                m.clear();
            }
            m.insert(task_uid.to_owned(), rv);
        }
    }

    /// Task `task_uid` ended: its result is read as final, never again.
    pub fn forget_result(&self, task_uid: &str) {
        if let Ok(mut m) = self.shown.lock() {
            m.remove(task_uid);
        }
    }
}

/// The keys of the cached pods by their Task's UID (label
/// `longtask.dev/task-uid`), rebuilt by each relist like the store.
#[derive(Default)]
struct PodIndex {
    by_task: HashMap<String, HashSet<ObjectRef<Pod>>>,
    task_of: HashMap<ObjectRef<Pod>, String>,
    /// During a relist, the index being built; it replaces this one once
    /// the relist is done.
    relist: Option<Box<PodIndex>>,
    synced: bool,
}

impl PodIndex {
    fn apply(&mut self, ev: &Event<Pod>) {
        match ev {
            Event::Init => self.relist = Some(Box::default()),
            Event::InitApply(p) => self.relist.get_or_insert_default().put(p),
            Event::InitDone => {
                let next = self.relist.take().unwrap_or_default();
                self.by_task = next.by_task;
                self.task_of = next.task_of;
                self.synced = true;
            }
            Event::Apply(p) => self.put(p),
            Event::Delete(p) => self.remove(&key_of(p)),
        }
    }

    /// The keys of Task `task_uid`'s pods, once synced.
    fn of(&self, task_uid: &str) -> Option<Vec<ObjectRef<Pod>>> {
        self.synced.then(|| {
            self.by_task
                .get(task_uid)
                .map(|keys| keys.iter().cloned().collect())
                .unwrap_or_default()
        })
    }

    fn put(&mut self, p: &Pod) {
        let key = key_of(p);
        let Some(task) = p.labels().get(labels::TASK_UID) else {
            self.remove(&key);
            return;
        };
        if self.task_of.get(&key) == Some(task) {
            return;
        }
        self.remove(&key);
        self.task_of.insert(key.clone(), task.clone());
        self.by_task.entry(task.clone()).or_default().insert(key);
    }

    fn remove(&mut self, key: &ObjectRef<Pod>) {
        let Some(task) = self.task_of.remove(key) else {
            return;
        };
        if let Some(keys) = self.by_task.get_mut(&task) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_task.remove(&task);
            }
        }
    }
}

/// The keys of the cached Tasks a CronTask controls, by the CronTask's UID,
/// and of those not finished, by namespace; rebuilt by each relist like
/// the store.
#[derive(Default)]
struct RunIndex {
    by_owner: HashMap<String, HashSet<ObjectRef<Task>>>,
    /// Each indexed Task's CronTask (UID) and namespace.
    owner_of: HashMap<ObjectRef<Task>, (String, String)>,
    active: HashMap<String, HashSet<ObjectRef<Task>>>,
    relist: Option<Box<RunIndex>>,
    synced: bool,
}

impl RunIndex {
    fn apply(&mut self, ev: &Event<Task>) {
        match ev {
            Event::Init => self.relist = Some(Box::default()),
            Event::InitApply(t) => self.relist.get_or_insert_default().put(t),
            Event::InitDone => {
                let next = self.relist.take().unwrap_or_default();
                self.by_owner = next.by_owner;
                self.owner_of = next.owner_of;
                self.active = next.active;
                self.synced = true;
            }
            Event::Apply(t) => self.put(t),
            Event::Delete(t) => self.remove(&key::task_key(t)),
        }
    }

    fn put(&mut self, t: &Task) {
        let key = key::task_key(t);
        self.remove(&key);
        let (Some(owner), Some(ns)) = (cron_owner(t), t.metadata.namespace.clone()) else {
            return;
        };
        self.by_owner
            .entry(owner.clone())
            .or_default()
            .insert(key.clone());
        if !t.is_terminal() {
            self.active
                .entry(ns.clone())
                .or_default()
                .insert(key.clone());
        }
        self.owner_of.insert(key, (owner, ns));
    }

    fn remove(&mut self, key: &ObjectRef<Task>) {
        let Some((owner, ns)) = self.owner_of.remove(key) else {
            return;
        };
        for (map, k) in [(&mut self.by_owner, owner), (&mut self.active, ns)] {
            if let Some(keys) = map.get_mut(&k) {
                keys.remove(key);
                if keys.is_empty() {
                    map.remove(&k);
                }
            }
        }
    }
}

/// The reference to the CronTask that controls `t`, if one does.
pub fn cron_controller(t: &Task) -> Option<&OwnerReference> {
    t.owner_references().iter().find(|o| {
        o.controller == Some(true)
            && o.kind == names::CRON_KIND
            && o.api_version == names::API_VERSION
    })
}

/// The UID of the CronTask that controls `t`, if one does.
pub fn cron_owner(t: &Task) -> Option<String> {
    cron_controller(t).map(|o| o.uid.clone())
}

/// Whether `t` is a run of the CronTask `name` of UID `uid`: its controller
/// reference names both. The UID alone is not enough: the cron-run policy
/// authorizes a reference by the name it carries, so a reference naming a
/// CronTask its author may edit with another CronTask's UID is no run of
/// either.
pub fn is_run_of(t: &Task, name: &str, uid: &str) -> bool {
    cron_controller(t).is_some_and(|o| o.uid == uid && o.name == name)
}

/// The resourceVersion of each result ConfigMap by namespace/name, rebuilt
/// by each relist like a store, and only that: about a hundred bytes a
/// result, where the object's metadata took a kibibyte.
#[derive(Default)]
struct Versions {
    by_name: HashMap<String, String>,
    /// During a relist, the versions seen so far; they replace these once
    /// it is done.
    relist: Option<HashMap<String, String>>,
    synced: bool,
}

impl Versions {
    fn apply(&mut self, ev: &Event<PartialObjectMeta<ConfigMap>>) {
        match ev {
            Event::Init => self.relist = Some(HashMap::new()),
            Event::InitApply(c) => {
                if let Some((k, rv)) = version_of(c) {
                    self.relist.get_or_insert_default().insert(k, rv);
                }
            }
            Event::InitDone => {
                self.by_name = self.relist.take().unwrap_or_default();
                self.by_name.shrink_to_fit();
                self.synced = true;
            }
            Event::Apply(c) => {
                if let Some((k, rv)) = version_of(c) {
                    self.by_name.insert(k, rv);
                }
            }
            Event::Delete(c) => {
                if let Some((k, _)) = version_of(c) {
                    self.by_name.remove(&k);
                }
            }
        }
    }

    /// Whether result `namespace/name` may differ from version `shown`:
    /// always before the watch synced (ask the API server); once synced,
    /// not when there is none or it is the version shown.
    fn may_differ(&self, namespace: &str, name: &str, shown: Option<&String>) -> bool {
        if !self.synced {
            return true;
        }
        self.by_name
            .get(&format!("{namespace}/{name}"))
            .is_some_and(|rv| shown != Some(rv))
    }
}

/// A result's key (namespace/name) and version.
fn version_of(c: &PartialObjectMeta<ConfigMap>) -> Option<(String, String)> {
    let m = &c.metadata;
    let key = format!("{}/{}", m.namespace.as_deref()?, m.name.as_deref()?);
    Some((key, m.resource_version.clone().unwrap_or_default()))
}

/// A pod's key in the store: its namespace and name (not the resource
/// version and UID `ObjectRef::from_obj` also keeps, unused in a lookup).
fn key_of(p: &Pod) -> ObjectRef<Pod> {
    let key = ObjectRef::new(&p.name_any());
    match p.metadata.namespace.as_deref() {
        Some(ns) => key.within(ns),
        None => key,
    }
}

/// Keeps of a watched pod what the status and the triggers read: its
/// metadata (no managed fields) and status (no image or container IDs,
/// addresses, resources or volume mounts); not its spec.
pub fn slim_pod(p: &mut Pod) {
    p.metadata.managed_fields = None;
    // Only the node's name is read (a pod whose node went silent).
    p.spec = p.spec.take().map(|s| k8s_openapi::api::core::v1::PodSpec {
        node_name: s.node_name,
        ..Default::default()
    });
    if let Some(st) = p.status.as_mut() {
        st.host_ips = None;
        st.pod_ips = None;
        st.host_ip = None;
        st.pod_ip = None;
        st.allocated_resources = None;
        st.resources = None;
        st.volume_health = None;
        let all = st
            .container_statuses
            .iter_mut()
            .chain(st.init_container_statuses.iter_mut())
            .chain(st.ephemeral_container_statuses.iter_mut())
            .flatten();
        for c in all {
            c.image_id = String::new();
            c.container_id = None;
            c.allocated_resources = None;
            c.allocated_resources_status = None;
            c.resources = None;
            c.volume_mounts = None;
            c.user = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{JobFixture, PodFixture};

    #[test]
    fn a_result_is_read_while_running_only_when_new() {
        use kube::runtime::watcher::Event;
        let caches = Caches::default();
        // Before the watch synced, every result is read.
        assert!(caches.result_is_new("ns", "t-result", "uid"));
        let cm = |rv: &str| {
            let mut c = PartialObjectMeta::<ConfigMap>::default();
            c.metadata.name = Some("t-result".into());
            c.metadata.namespace = Some("ns".into());
            c.metadata.resource_version = Some(rv.into());
            c
        };
        caches.index_result(&Event::Init);
        caches.index_result(&Event::InitDone);
        // Synced, and none written yet.
        assert!(!caches.result_is_new("ns", "t-result", "uid"));
        caches.index_result(&Event::Apply(cm("5")));
        assert!(caches.result_is_new("ns", "t-result", "uid"));
        caches.result_shown("uid", "5".into());
        assert!(!caches.result_is_new("ns", "t-result", "uid"));
        assert!(caches.result_is_new("ns", "t-result", "another"));
        caches.index_result(&Event::Apply(cm("6")));
        assert!(caches.result_is_new("ns", "t-result", "uid"));
        caches.result_shown("uid", "6".into());
        caches.forget_result("uid");
        assert!(caches.result_is_new("ns", "t-result", "uid"));
        // Deleted: nothing to read; a relist replaces the versions once done.
        caches.index_result(&Event::Delete(cm("6")));
        assert!(!caches.result_is_new("ns", "t-result", "uid"));
        caches.index_result(&Event::Init);
        caches.index_result(&Event::InitApply(cm("7")));
        assert!(!caches.result_is_new("ns", "t-result", "uid"));
        caches.index_result(&Event::InitDone);
        assert!(caches.result_is_new("ns", "t-result", "uid"));
    }

    #[test]
    fn a_pod_leaving_the_cache_asks_for_one_read() {
        let caches = Caches::default();
        let pod = |name: &str, task: &str| {
            let mut p = PodFixture::new(name).build();
            p.metadata.labels = Some([(labels::TASK_UID.to_owned(), task.to_owned())].into());
            p
        };
        caches.index_pod(&Event::Apply(pod("a", "t1")));
        assert!(!caches.take_departed("t1"), "a live pod is no departure");
        // Left the live pods (finished, or marked Failed by the pod
        // garbage collector): one read from the API server, then the cache.
        caches.index_pod(&Event::Delete(pod("a", "t1")));
        assert!(!caches.take_departed("t2"));
        assert!(caches.take_departed("t1"));
        assert!(!caches.take_departed("t1"), "asked once");
        // The read failed: asked again.
        caches.mark_departed("t1");
        assert!(caches.take_departed("t1"));
        // Marks of Tasks never read again are bounded.
        for i in 0..=DEPARTED_MAX {
            caches.index_pod(&Event::Delete(pod("p", &format!("t{i}"))));
        }
        assert!(caches.departed.lock().unwrap().len() <= DEPARTED_MAX);
    }

    #[test]
    fn a_task_finds_its_pods_by_the_index() {
        let caches = Caches::default();
        let (store, mut writer) = kube::runtime::reflector::store();
        caches.set_pods(store);
        let job = JobFixture::ours().build();
        let uid = |j: &Job| j.metadata.uid.clone().unwrap_or_default();
        let pod = |name: &str, task: &str, job: &str| {
            let mut p = PodFixture::new(name).of_job(job).build();
            p.metadata.namespace = Some("ns".into());
            p.metadata.labels = Some([(labels::TASK_UID.to_owned(), task.to_owned())].into());
            p
        };
        let mut feed = |ev: Event<Pod>| {
            writer.apply_watcher_event(&ev);
            caches.index_pod(&ev);
        };
        let names = |pods: Option<Vec<Pod>>| {
            let mut n: Vec<String> = pods
                .unwrap_or_default()
                .into_iter()
                .map(|p| p.name_any())
                .collect();
            n.sort();
            n
        };
        // Not synced: ask the API server.
        assert!(caches.pods("ns", "t1", &job).is_none());
        feed(Event::Init);
        feed(Event::InitApply(pod("a", "t1", &uid(&job))));
        feed(Event::InitApply(pod("b", "t2", &uid(&job))));
        feed(Event::InitDone);
        assert_eq!(names(caches.pods("ns", "t1", &job)), ["a"]);
        // A pod of another Job of the same Task is not this Job's.
        feed(Event::Apply(pod("c", "t1", "another-job")));
        feed(Event::Apply(pod("d", "t1", &uid(&job))));
        assert_eq!(names(caches.pods("ns", "t1", &job)), ["a", "d"]);
        assert_eq!(
            names(caches.pods("other-ns", "t1", &job)),
            Vec::<String>::new()
        );
        // Relabelled to another Task, then deleted.
        feed(Event::Apply(pod("d", "t2", &uid(&job))));
        assert_eq!(names(caches.pods("ns", "t1", &job)), ["a"]);
        assert_eq!(names(caches.pods("ns", "t2", &job)), ["b", "d"]);
        feed(Event::Delete(pod("a", "t1", &uid(&job))));
        assert_eq!(names(caches.pods("ns", "t1", &job)), Vec::<String>::new());
        // A relist replaces the index once done; until then the old one serves.
        feed(Event::Init);
        feed(Event::InitApply(pod("e", "t1", &uid(&job))));
        assert_eq!(names(caches.pods("ns", "t2", &job)), ["b", "d"]);
        feed(Event::InitDone);
        assert_eq!(names(caches.pods("ns", "t1", &job)), ["e"]);
        assert_eq!(names(caches.pods("ns", "t2", &job)), Vec::<String>::new());
    }

    #[test]
    fn a_cron_task_finds_its_runs_by_the_index() {
        use crds::Phase;
        let caches = Caches::default();
        let run = |name: &str, ns: &str, owner: &str, kind: &str, phase: Option<Phase>| {
            let mut t: Task = serde_json::from_value(serde_json::json!({
                "apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"command": ["true"]},
            }))
            .expect("task");
            t.metadata.owner_references = Some(vec![OwnerReference {
                api_version: names::API_VERSION.to_owned(),
                kind: kind.to_owned(),
                name: "c".to_owned(),
                uid: owner.to_owned(),
                controller: Some(true),
                block_owner_deletion: None,
            }]);
            t.status = phase.map(|p| crds::TaskStatus {
                phase: Some(p),
                ..Default::default()
            });
            t
        };
        let names = |keys: Option<Vec<ObjectRef<Task>>>| {
            let mut n: Vec<String> = keys
                .unwrap_or_default()
                .into_iter()
                .map(|k| k.name)
                .collect();
            n.sort();
            n
        };
        assert!(caches.runs_of("c1").is_none(), "not synced");
        caches.index_task(&Event::Init);
        caches.index_task(&Event::InitApply(run("a", "ns", "c1", "CronTask", None)));
        caches.index_task(&Event::InitApply(run("b", "ns", "c2", "CronTask", None)));
        // Another kind with the CronTask's UID is no run.
        caches.index_task(&Event::InitApply(run("x", "ns", "c1", "Task", None)));
        caches.index_task(&Event::InitDone);
        assert_eq!(names(caches.runs_of("c1")), ["a"]);
        assert_eq!(caches.active_runs_in("ns"), Some(2));
        caches.index_task(&Event::Apply(run("d", "ns", "c1", "CronTask", None)));
        caches.index_task(&Event::Apply(run(
            "a",
            "ns",
            "c1",
            "CronTask",
            Some(Phase::Completed),
        )));
        assert_eq!(names(caches.runs_of("c1")), ["a", "d"]);
        assert_eq!(caches.active_runs_in("ns"), Some(2));
        assert_eq!(caches.active_runs_in("other"), Some(0));
        caches.index_task(&Event::Delete(run("d", "ns", "c1", "CronTask", None)));
        assert_eq!(names(caches.runs_of("c1")), ["a"]);
        assert_eq!(caches.active_runs_in("ns"), Some(1));
        // A relist replaces the index once done.
        caches.index_task(&Event::Init);
        caches.index_task(&Event::InitApply(run("e", "ns", "c1", "CronTask", None)));
        assert_eq!(names(caches.runs_of("c1")), ["a"]);
        caches.index_task(&Event::InitDone);
        assert_eq!(names(caches.runs_of("c1")), ["e"]);
        assert_eq!(names(caches.runs_of("c2")), Vec::<String>::new());
    }

    #[test]
    fn a_slim_pod_says_what_the_whole_one_says() {
        use crate::controller::triggers::pod_key;
        use crate::status::observe;
        for pod in [
            PodFixture::new("p").build(),
            PodFixture::new("p").exited(0).build(),
            PodFixture::new("p").exited(143).build(),
            PodFixture::new("p")
                .exited(143)
                .disrupted("EvictionByEvictionAPI", 5)
                .build(),
            PodFixture::new("p").on_silent_node("n1", 5).build(),
        ] {
            let mut slim = pod.clone();
            slim_pod(&mut slim);
            assert_eq!(pod_key(&slim), pod_key(&pod));
            assert_eq!(observe::exit_code(&slim), observe::exit_code(&pod));
            assert_eq!(observe::waiting(&slim), observe::waiting(&pod));
            assert_eq!(
                observe::node_unreachable(&slim),
                observe::node_unreachable(&pod)
            );
            assert_eq!(
                slim.metadata.owner_references,
                pod.metadata.owner_references
            );
        }
    }

    #[test]
    fn a_run_is_named_by_both_name_and_uid() {
        use crate::fixtures::TaskFixture;
        let with = |name: &str, uid: &str, kind: &str| {
            let mut t = Task::test();
            t.metadata.owner_references = Some(vec![OwnerReference {
                api_version: names::API_VERSION.to_owned(),
                kind: kind.to_owned(),
                name: name.to_owned(),
                uid: uid.to_owned(),
                controller: Some(true),
                block_owner_deletion: None,
            }]);
            t
        };
        assert!(is_run_of(
            &with("nightly", "u1", "CronTask"),
            "nightly",
            "u1"
        ));
        // The victim's UID under a CronTask name its author may edit (what
        // the cron-run policy authorizes by): no run of either.
        assert!(!is_run_of(&with("mine", "u1", "CronTask"), "nightly", "u1"));
        assert!(!is_run_of(
            &with("nightly", "u2", "CronTask"),
            "nightly",
            "u1"
        ));
        assert!(!is_run_of(&with("nightly", "u1", "Task"), "nightly", "u1"));
        assert!(!is_run_of(&Task::test(), "nightly", "u1"));
    }
}
