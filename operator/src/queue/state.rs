//! What admission decides from, shared by all reconciles: the caps, the
//! caches of Tasks and namespaces, and the lock that serializes admissions
//! under a cap. A lock and caches of cluster facts, never Task state.

use std::sync::{Mutex, OnceLock};

use crds::Task;
use futures::channel::mpsc;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Namespace;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};

/// The caps and what the queue is computed from.
pub struct Queue {
    /// `--max-active-tasks`.
    pub global: Option<u32>,
    /// The operator's namespace (`--namespace`), if it watches only one.
    pub scope: Option<String>,
    tasks: OnceLock<Store<Task>>,
    jobs: OnceLock<Store<Job>>,
    namespaces: OnceLock<Store<PartialObjectMeta<Namespace>>>,
    /// Serializes admissions under a cap.
    lock: tokio::sync::Mutex<()>,
    /// Where the queue moved: a namespace, or every one (None). The
    /// controller wakes the Tasks queued there (`Queue::take_moves`).
    moved: mpsc::UnboundedSender<Option<String>>,
    moves: Mutex<Option<mpsc::UnboundedReceiver<Option<String>>>>,
}

impl Queue {
    pub fn new(global: Option<u32>, scope: Option<String>) -> Queue {
        let (moved, moves) = mpsc::unbounded();
        Queue {
            global,
            scope,
            tasks: OnceLock::new(),
            jobs: OnceLock::new(),
            namespaces: OnceLock::new(),
            lock: tokio::sync::Mutex::new(()),
            moved,
            moves: Mutex::new(Some(moves)),
        }
    }

    /// Says that the queue of `namespace` moved (a slot freed, a Task left
    /// or arrived ahead of others, a cap changed): its queued Tasks are
    /// looked at again, to start or to show their new position. Under the
    /// global cap every queue moves together. A queued Task is otherwise
    /// left alone (a long safety-net requeue), so a queue of thousands
    /// costs nothing while nothing changes.
    pub fn moved(&self, namespace: &str) {
        let scope = if self.global.is_some() {
            None
        } else {
            Some(namespace.to_owned())
        };
        let _ = self.moved.unbounded_send(scope);
    }

    /// The stream of `moved` calls, once (for the controller).
    pub fn take_moves(&self) -> Option<mpsc::UnboundedReceiver<Option<String>>> {
        self.moves.lock().ok()?.take()
    }

    /// The controller's Task cache.
    pub fn set_tasks(&self, store: Store<Task>) {
        let _ = self.tasks.set(store);
    }

    /// The controller's cache of the Tasks' Jobs (slimmed: no pod template).
    pub fn set_jobs(&self, store: Store<Job>) {
        let _ = self.jobs.set(store);
    }

    /// The Job cache, once its watch has listed every Job of a Task; None
    /// before (then only the API server can say which Jobs exist).
    pub fn jobs(&self) -> Option<&Store<Job>> {
        crate::store::ready(self.jobs.get()?)
    }

    /// The UID of namespace `name`, if the cache has it.
    pub fn namespace_uid(&self, name: &str) -> Option<String> {
        self.namespaces
            .get()?
            .get(&ObjectRef::new(name))?
            .metadata
            .uid
            .clone()
    }

    /// A cache of namespaces' metadata (for their annotation).
    pub fn set_namespaces(&self, store: Store<PartialObjectMeta<Namespace>>) {
        let _ = self.namespaces.set(store);
    }

    /// The Task cache, once the controller runs.
    pub fn tasks(&self) -> Option<&Store<Task>> {
        self.tasks.get()
    }

    /// The namespace cache, when the operator watches all namespaces.
    pub fn namespaces(&self) -> Option<&Store<PartialObjectMeta<Namespace>>> {
        self.namespaces.get()
    }

    /// Holds admissions under a cap to one at a time.
    pub async fn lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.lock.lock().await
    }
}
