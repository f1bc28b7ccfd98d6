//! The leader's sweep of every output store: what the Task deletes left
//! behind (a store that was down then, a worker that uploaded after its
//! Task went) is found by listing the stores (decided in the pure
//! `outputs::sweep`) and deleted once two sweeps in a row found it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crds::Task;
use crds::outputs::OutputStore;
use kube::ResourceExt;
use kube::runtime::reflector::Store;
use longtask_store::Client;
use tracing::{debug, info};

use crate::collector::client::{Clients, CollectError, delete, failed};
use crate::context::Context;
use crate::outputs::sweep::{self, Live, Suspects, TaskDir};
use crate::store::ready;

/// What sweeps remember between them: the prefixes found orphaned, and
/// where each store's turn of live Task directories stopped.
#[derive(Default)]
struct Memory {
    suspects: Suspects,
    cursors: HashMap<String, usize>,
}

/// Sweeps every interval (the first one an interval after the start),
/// until aborted.
pub async fn every(ctx: Arc<Context>, tasks: Store<Task>, clients: Arc<Clients>) {
    let Some(interval) = ctx.config.outputs.interval else {
        return;
    };
    let mut memory = Memory::default();
    loop {
        tokio::time::sleep(interval).await;
        // Only over synced caches: an unsynced one shows live Tasks gone.
        let (Some(tasks), Some(stores)) = (ready(&tasks), ctx.caches.output_stores()) else {
            debug!("caches not synced; no sweep");
            continue;
        };
        once(&ctx, tasks, &stores.state(), &clients, &mut memory).await;
    }
}

/// One sweep of `stores`.
async fn once(
    ctx: &Context,
    tasks: &Store<Task>,
    stores: &[Arc<OutputStore>],
    clients: &Clients,
    memory: &mut Memory,
) {
    let live = Live::new(tasks.state().iter().map(|t| &**t));
    let mut found = BTreeSet::new();
    let mut listed = BTreeSet::new();
    for store in stores {
        let name = store.name_any();
        let cursor = memory.cursors.entry(name.clone()).or_default();
        match orphans_in(ctx, clients, store, &live, cursor).await {
            Ok(orphans) => {
                found.extend(orphans.into_iter().map(|p| (name.clone(), p)));
                listed.insert(name);
            }
            Err(e) => failed(ctx, &e),
        }
    }
    let due = memory.suspects.confirm(found, |s| listed.contains(s));
    for (store, prefix) in due {
        if !collect(ctx, tasks, stores, clients, &store, &prefix).await {
            memory.suspects.keep((store, prefix));
        }
    }
    ctx.metrics.set_orphaned(memory.suspects.len());
}

/// Deletes the orphaned `prefix` of `store` unless its Task is back in
/// the cache; false when it is still there to collect.
async fn collect(
    ctx: &Context,
    tasks: &Store<Task>,
    stores: &[Arc<OutputStore>],
    clients: &Clients,
    store: &str,
    prefix: &str,
) -> bool {
    let Some(s) = stores.iter().find(|s| s.name_any() == store) else {
        return true;
    };
    let now = Live::new(tasks.state().iter().map(|t| &**t));
    if let Some((ns, name, uid)) = sweep::parts(s.spec.s3.prefix(), prefix)
        && now.holds(ns, name, uid)
    {
        return true;
    }
    match delete(ctx, clients, s, prefix).await {
        Ok(n) => {
            ctx.metrics.objects_deleted("sweep", n);
            info!(%store, %prefix, objects = n, "deleted the outputs of a Task that is gone");
            true
        }
        Err(e) => {
            failed(ctx, &e);
            false
        }
    }
}

/// The orphaned Task prefixes of `store`: every directory of a Task name
/// no Task has, and `live_lists` of the others, from `cursor` on.
async fn orphans_in(
    ctx: &Context,
    clients: &Clients,
    store: &OutputStore,
    live: &Live,
    cursor: &mut usize,
) -> Result<Vec<String>, CollectError> {
    let client = clients.of(ctx, store).await?;
    let root = store.spec.s3.prefix();
    let mut dirs = Vec::new();
    for ns_prefix in list(&client, store, root).await? {
        let Some(ns) = sweep::segment(root, &ns_prefix).filter(|n| sweep::is_label(n)) else {
            continue;
        };
        let listed = list(&client, store, &ns_prefix).await?;
        dirs.extend(sweep::task_dirs(&ns_prefix, ns, &listed, live));
    }
    let (gone, alive): (Vec<TaskDir>, Vec<TaskDir>) = dirs.into_iter().partition(|d| !d.live);
    let (turn, next) = sweep::rotate(&alive, *cursor, ctx.config.outputs.live_lists);
    *cursor = next;
    let mut out = Vec::new();
    for dir in gone.iter().chain(&turn) {
        let listed = list(&client, store, &dir.prefix).await?;
        out.extend(sweep::orphans(dir, &listed, live));
    }
    Ok(out)
}

/// The common prefixes one level below `prefix`.
async fn list(
    client: &Client,
    store: &OutputStore,
    prefix: &str,
) -> Result<Vec<String>, CollectError> {
    client
        .list(prefix, Some('/'))
        .await
        .map(|l| l.prefixes)
        .map_err(|source| CollectError::List {
            store: store.name_any(),
            source,
        })
}
