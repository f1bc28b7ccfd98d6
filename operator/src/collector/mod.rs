//! Clean-up that never blocks: a Task's objects in its output store go
//! when the Task goes, without a finalizer. The Task watch hands every
//! deleted Task that may have objects to `run`, which deletes its prefix
//! in the background (a few at a time, each bounded in time), off every
//! reconcile's path; a store that is down or slow only leaves the objects
//! for the sweep (`sweep`), which the leader runs every
//! `--output-gc-interval` and which deletes the prefixes of Tasks that are
//! gone. A Task, a namespace, an uninstall are never held up by a store.

mod client;
mod sweep;

use std::sync::Arc;

use crds::Task;
use crds::outputs::object_prefix;
use futures::StreamExt;
use futures::channel::mpsc;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::{debug, info};

use crate::context::Context;
use crate::job::build::STORE_ANNOTATION;
use crate::status::observe::{self, Ownership};
pub use client::CollectError;
use client::{Clients, delete, failed};

/// Deletions done at once.
const CONCURRENT: usize = 4;

/// A deleted Task whose objects are to go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gone {
    pub store: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// What of `task`, just deleted, may be in a store: the store its status
/// lists its outputs in, else the one its Job (still in the Job cache
/// while it runs) names. `None` for a Task that never had a Job or a store.
pub fn gone(ctx: &Context, task: &Task) -> Option<Gone> {
    let st = task.status.as_ref()?;
    st.job_uid.as_ref()?;
    let (namespace, name, uid) = (task.namespace()?, task.name_any(), task.uid()?);
    let store = match st.outputs.as_ref() {
        Some(o) => o.store.clone(),
        None => {
            let jobs = ctx.queue.jobs()?;
            let job = jobs.get(&ObjectRef::new(&name).within(&namespace))?;
            if observe::ownership(&job, &uid) != Ownership::Ours {
                return None;
            }
            job.annotations().get(STORE_ANNOTATION)?.clone()
        }
    };
    Some(Gone {
        store,
        namespace,
        name,
        uid,
    })
}

/// Runs until aborted: deletes the objects of each Task `deleted` hands
/// over (a few at a time), and sweeps the stores every interval.
pub async fn run(ctx: Arc<Context>, tasks: Store<Task>, deleted: mpsc::Receiver<Gone>) {
    let clients = Arc::new(Clients::default());
    let sweeping = tokio::spawn(sweep::every(ctx.clone(), tasks, clients.clone()));
    deleted
        .for_each_concurrent(CONCURRENT, |g| {
            let (ctx, clients) = (ctx.clone(), clients.clone());
            async move { forget(&ctx, &clients, g).await }
        })
        .await;
    sweeping.abort();
}

/// Deletes the objects of the deleted Task `g`.
async fn forget(ctx: &Context, clients: &Clients, g: Gone) {
    let Some(store) = ctx
        .caches
        .output_stores()
        .and_then(|s| s.get(&ObjectRef::new(&g.store)))
    else {
        debug!(store = %g.store, "the OutputStore of a deleted Task is gone; nothing to delete");
        return;
    };
    let prefix = object_prefix(store.spec.s3.prefix(), &g.namespace, &g.name, &g.uid);
    match delete(ctx, clients, &store, &prefix).await {
        Ok(n) => {
            ctx.metrics.objects_deleted("task_deleted", n);
            info!(store = %g.store, %prefix, objects = n, "deleted a deleted Task's outputs");
        }
        Err(e) => failed(ctx, &e),
    }
}
