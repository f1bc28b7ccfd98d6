//! Thin: starting Tasks under the caps. The decision is `queue::plan` over
//! the Task cache; what is decided here is only when to trust it.
//!
//! Strictness: every Job creation under a cap happens while holding one
//! lock (`Queue::lock`, a lock and not Task state), after counting the
//! Jobs that exist *live* from the API server, so two reconciles cannot
//! both take the last slot, and a Job created just before is never missed
//! because the cache lags. The start order holds within one admission
//! because it creates the Jobs of every Task the plan lets start, in plan
//! order, not only the Job of the Task being reconciled.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crds::names::labels;
use crds::{Reason, Task};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::{debug, info, warn};

use crate::api;
use crate::api::error::ApiError;
use crate::context::Context;
use crate::job::{build, pod};
use crate::queue::{self, Limits, Plan, Scope, Verdict, Wait};
use crate::reconcile::error::Error;
use crate::reconcile::outputs::{self, Prepared};
use crate::reconcile::{accounts, validate};
use crate::status::Refusal;

/// What `start` did.
pub enum Admission {
    /// The Task's Job (created now or found).
    Started(Box<Job>),
    /// The Task waits for a slot.
    Wait(Wait),
    /// The Task cannot start as its spec says (the API server refused its
    /// Job for its content, its account may not be a worker account, or
    /// its output store is unavailable); why, for its status.
    Refused(Refusal),
}

/// `Started`, or `Refused` when the API server refused the Job for its
/// content; other failures are errors (retried).
fn created(res: Result<Job, ApiError>) -> Result<Admission, Error> {
    match res {
        Ok(j) => Ok(Admission::Started(Box::new(j))),
        Err(e) => match e.job_refused() {
            Some(why) => Ok(Admission::Refused(Refusal::invalid(format!(
                "the API server refused the Task's Job: {why}"
            )))),
            None => Err(e.into()),
        },
    }
}

/// Makes the Job of `task`, with its outputs Secret first when an output
/// store applies: `Refused` (OutputStoreUnavailable) when the store it
/// names cannot be used.
async fn make_job(ctx: &Context, task: &Task) -> Result<Admission, Error> {
    let store = match outputs::prepare(ctx, task).await? {
        Prepared::None => None,
        Prepared::Store(name) => Some(name),
        Prepared::Unavailable(message) => {
            return Ok(Admission::Refused(Refusal {
                reason: Reason::OutputStoreUnavailable,
                message,
            }));
        }
    };
    let built = build::job_with_outputs(task, &ctx.config.worker_image, store.as_deref())?;
    created(api::create_job(ctx, &built).await)
}

/// True when a cap applies to Tasks of `namespace`.
pub async fn capped(ctx: &Context, namespace: &str) -> Result<bool, Error> {
    Ok(ctx.queue.global.is_some() || namespace_limit(ctx, namespace).await?.is_some())
}

/// A Task that must wait, decided from the caches alone (Tasks, their
/// Jobs, namespaces' caps), without one API call: what keeps a queue of
/// thousands cheap while nothing changes. None when the caches cannot
/// tell (one not synced yet, the namespace not in it, or a Job of the
/// Task's name there) or the Task may start: then `start` decides, live.
pub fn waits_from_cache(ctx: &Context, task: &Task) -> Option<Wait> {
    let id = build::identity(task).ok()?;
    let tasks = ctx.queue.tasks()?;
    let jobs = ctx.queue.jobs()?;
    if jobs
        .get(&ObjectRef::new(id.name).within(id.namespace))
        .is_some()
    {
        return None;
    }
    if ctx.queue.scope.is_none()
        && ctx
            .queue
            .namespaces()?
            .get(&ObjectRef::new(id.namespace))
            .is_none()
    {
        return None;
    }
    let limits = cached_limits(ctx);
    if !limits.applies_to(id.namespace) {
        return None;
    }
    let plan = queue_plan(tasks, task, &limits, &cached_job_uids(ctx), None);
    match verdict(&plan, id.uid) {
        Verdict::Wait(w) => Some(w),
        Verdict::Start | Verdict::Active => None,
    }
}

/// The Task UIDs of the Jobs in the Job cache (empty before it synced).
fn cached_job_uids(ctx: &Context) -> BTreeSet<String> {
    ctx.queue
        .jobs()
        .map(|jobs| {
            jobs.state()
                .iter()
                .filter_map(|j| j.labels().get(labels::TASK_UID).cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// Starts `task` (creates its Job) unless a cap keeps it waiting.
pub async fn start(ctx: &Context, task: &Task) -> Result<Admission, Error> {
    let id = build::identity(task)?;
    let own_limit = namespace_limit(ctx, id.namespace).await?;
    if ctx.queue.global.is_none() && own_limit.is_none() {
        if let Err(why) = accounts::admit(ctx, id.namespace, pod::worker_account(task)).await? {
            return Ok(Admission::Refused(Refusal::invalid(why)));
        }
        return make_job(ctx, task).await;
    }
    let store = ctx.queue.tasks().ok_or(Error::QueueNotReady)?;
    let mut limits = cached_limits(ctx);
    if let Some(l) = own_limit {
        limits.namespaces.insert(id.namespace.to_owned(), l);
    }
    // From the cache alone first: a Task that must wait costs no API call.
    let cached = cached_job_uids(ctx);
    if let Verdict::Wait(w) = verdict(&queue_plan(store, task, &limits, &cached, None), id.uid) {
        return Ok(Admission::Wait(w));
    }
    let _guard = ctx.queue.lock().await;
    let plan = live_plan(ctx, store, task, &limits, None).await?;
    match verdict(&plan, id.uid) {
        Verdict::Wait(w) => Ok(Admission::Wait(w)),
        Verdict::Active => match api::get_job(ctx, id.namespace, id.name).await? {
            Some(j) => Ok(Admission::Started(Box::new(j))),
            // Recorded as started but gone: the status logic reports it.
            None => make_job(ctx, task).await,
        },
        Verdict::Start => start_all(ctx, store, &plan, Some(task))
            .await?
            .ok_or(Error::QueueNotReady),
    }
}

/// After a Task under a cap finished: start the Tasks its slot lets start,
/// at once rather than at their next look.
pub async fn drain(ctx: &Context, finished: &Task) -> Result<(), Error> {
    let Some(store) = ctx.queue.tasks() else {
        return Ok(());
    };
    let id = build::identity(finished)?;
    let mut limits = cached_limits(ctx);
    if let Some(l) = namespace_limit(ctx, id.namespace).await? {
        limits.namespaces.insert(id.namespace.to_owned(), l);
    }
    if !limits.applies_to(id.namespace) {
        return Ok(());
    }
    let _guard = ctx.queue.lock().await;
    let plan = live_plan(ctx, store, finished, &limits, Some(id.uid)).await?;
    if !plan.start.is_empty() {
        start_all(ctx, store, &plan, None).await?;
    }
    // The ones started show Running when their Jobs' watch wakes them; the
    // rest move up when the Task cache shows this end (`controller`'s Task
    // watch): a move from here could be read before the cache shows it.
    Ok(())
}

/// The queue's plan over the cache, with the live Jobs; `done` is left out (it just
/// finished but the cache may not show it yet).
async fn live_plan(
    ctx: &Context,
    store: &Store<Task>,
    task: &Task,
    limits: &Limits,
    done: Option<&str>,
) -> Result<Plan, Error> {
    let ns = task.namespace().unwrap_or_default();
    let list_ns = match (&ctx.queue.scope, ctx.queue.global) {
        (Some(s), _) => Some(s.as_str()),
        (None, Some(_)) => None,
        (None, None) => Some(ns.as_str()),
    };
    let live: BTreeSet<String> = api::list_job_task_uids(ctx, list_ns)
        .await?
        .into_iter()
        .map(|(_, uid)| uid)
        .collect();
    Ok(queue_plan(store, task, limits, &live, done))
}

/// The queue's plan (`queue::plan`) over the Tasks of `store` (`me` among
/// them even before the cache shows it), `live` being the UIDs of the
/// Tasks that have a Job and `done` left out; with whether `me`, when it
/// waits, overtakes a Task that already shows its place.
fn queue_plan(
    store: &Store<Task>,
    me: &Task,
    limits: &Limits,
    live: &BTreeSet<String>,
    done: Option<&str>,
) -> Plan {
    let mut tasks: Vec<Arc<Task>> = store.state();
    let my_uid = me.metadata.uid.as_deref();
    if !tasks.iter().any(|t| t.metadata.uid.as_deref() == my_uid) {
        tasks.push(Arc::new(me.clone()));
    }
    let entries: Vec<queue::Entry<'_>> = tasks
        .iter()
        .filter(|t| done.is_none_or(|d| t.metadata.uid.as_deref() != Some(d)))
        // Without a global cap only the Task's own namespace matters.
        .filter(|t| limits.global.is_some() || t.metadata.namespace == me.metadata.namespace)
        .filter(|t| wants_slot(t) || t.metadata.uid.as_deref() == my_uid)
        .filter_map(|t| {
            let has_job = t.metadata.uid.as_ref().is_some_and(|u| live.contains(u));
            queue::entry(t, has_job)
        })
        .collect();
    let mut plan = queue::plan(&entries, limits);
    if let Some(uid) = my_uid
        && let Some(Verdict::Wait(w)) = plan.verdicts.get(uid)
        && !crate::status::is_queue_full(me)
    {
        let overtakes = overtakes(&plan, &tasks, uid, w);
        if let Some(Verdict::Wait(w)) = plan.verdicts.get_mut(uid) {
            w.overtakes = overtakes;
        }
    }
    plan
}

/// True when a Task queued behind `me` (the same cap, a later position)
/// already shows its place: `me` is new to the queue and moved it.
fn overtakes(plan: &Plan, tasks: &[Arc<Task>], me: &str, mine: &Wait) -> bool {
    tasks.iter().any(|t| {
        let Some(uid) = t.metadata.uid.as_deref() else {
            return false;
        };
        uid != me
            && crate::status::is_queue_full(t)
            && matches!(plan.verdicts.get(uid), Some(Verdict::Wait(w))
                if w.scope == mine.scope
                    && (w.scope == Scope::Global || w.namespace == mine.namespace)
                    && w.position > mine.position)
    })
}

/// Tasks the queue leaves out: invalid ones (they fail), ones whose Job
/// name is taken by another Task's Job (they cannot start), and ones that
/// wait for their upstreams. A Task
/// that has a phase passed validation when it got it, and its spec cannot
/// change since (the CRD's immutability rule), so only a Task without one
/// is validated here: every look at a queued Task plans over all the
/// waiting ones, and validating each of them each time was most of the
/// operator's CPU with a thousand queued.
fn wants_slot(t: &Task) -> bool {
    let phase = t.status.as_ref().and_then(|s| s.phase);
    !crate::status::is_blocked(t)
        && !before_gate(t, phase)
        && (phase.is_some() || validate::validate(t).is_ok())
}

/// True when `t` has upstreams (`spec.after`) and has not passed their
/// gate: Pending, or not looked at yet. It takes no place in the queue
/// (and no other Task's admission starts it) until its own reconcile
/// finds its upstreams met.
fn before_gate(t: &Task, phase: Option<crds::Phase>) -> bool {
    !t.spec.after.is_empty() && matches!(phase, None | Some(crds::Phase::Pending))
}

fn verdict(plan: &Plan, uid: &str) -> Verdict {
    plan.verdicts.get(uid).cloned().unwrap_or(Verdict::Start)
}

/// Creates the Jobs of every Task the plan starts, in start order; returns
/// what became of `me`'s, if it is one of them. A Job the API server
/// refuses for its content is skipped: its Task fails (InvalidSpec) when
/// its own reconcile meets the same refusal, and never fails another.
async fn start_all(
    ctx: &Context,
    store: &Store<Task>,
    plan: &Plan,
    me: Option<&Task>,
) -> Result<Option<Admission>, Error> {
    let mut by_uid: HashMap<String, Arc<Task>> = store
        .state()
        .into_iter()
        .filter_map(|t| Some((t.metadata.uid.clone()?, t)))
        .collect();
    let mine = me.and_then(|t| t.metadata.uid.clone()).unwrap_or_default();
    if let Some(t) = me {
        by_uid.insert(mine.clone(), Arc::new(t.clone()));
    }
    let mut rbac_done: BTreeMap<(String, String), Result<(), String>> = BTreeMap::new();
    let mut out = None;
    for uid in &plan.start {
        let Some(t) = by_uid.get(uid) else { continue };
        let ns = t.namespace().unwrap_or_default();
        let account = pod::worker_account(t).to_owned();
        let allowed = match rbac_done.get(&(ns.clone(), account.clone())) {
            Some(a) => a.clone(),
            None => {
                let a = accounts::admit(ctx, &ns, &account).await?;
                rbac_done.insert((ns.clone(), account), a.clone());
                a
            }
        };
        let admission = match allowed {
            Ok(()) => make_job(ctx, t).await?,
            Err(why) => Admission::Refused(Refusal::invalid(why)),
        };
        if matches!(admission, Admission::Refused(_)) {
            info!(task = %t.name_any(), namespace = %ns, "its Job was refused; it fails when reconciled");
        } else {
            info!(task = %t.name_any(), namespace = %ns, "admitted from the queue");
        }
        if *uid == mine {
            out = Some(admission);
        }
    }
    Ok(out)
}

/// The cap of `namespace` from its annotation: the cache, else a live read.
/// None when the operator watches one namespace: it reads no Namespace then
/// (cluster-scoped; a namespaced install grants no such read).
async fn namespace_limit(ctx: &Context, namespace: &str) -> Result<Option<u32>, Error> {
    if ctx.queue.scope.is_some() {
        return Ok(None);
    }
    let cached = ctx
        .queue
        .namespaces()
        .and_then(|s| s.get(&ObjectRef::new(namespace)));
    let annotations = match cached {
        Some(ns) => ns.metadata.annotations.clone(),
        None => api::namespace_metadata(ctx, namespace, "its Task limit")
            .await?
            .and_then(|m| m.annotations),
    };
    Ok(
        queue::namespace_limit(annotations.as_ref()).unwrap_or_else(|e| {
            warn!(namespace, "{e}");
            None
        }),
    )
}

/// The caps of every namespace in the cache.
fn cached_limits(ctx: &Context) -> Limits {
    let mut namespaces = BTreeMap::new();
    for ns in ctx.queue.namespaces().map(Store::state).unwrap_or_default() {
        match queue::namespace_limit(ns.metadata.annotations.as_ref()) {
            Ok(Some(l)) => {
                namespaces.insert(ns.name_any(), l);
            }
            Ok(None) => {}
            Err(e) => debug!(namespace = %ns.name_any(), "{e}"),
        }
    }
    Limits {
        global: ctx.queue.global,
        namespaces,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::TaskFixture;
    use crds::conditions::reasons;
    use crds::{Phase, TaskStatus};
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;

    fn task(name: &str, created: i64, priority: i32, shown: bool) -> Task {
        Task::test()
            .named(name)
            .uid(name)
            .created_at(created)
            .with(|t| {
                t.spec.priority = priority;
                if shown {
                    t.status = Some(TaskStatus {
                        phase: Some(Phase::Queued),
                        reason: Some(reasons::QUEUE_FULL.into()),
                        ..TaskStatus::default()
                    });
                }
            })
    }

    fn wait_of(store: &Store<Task>, me: &Task) -> Wait {
        let limits = Limits {
            global: None,
            namespaces: [("ns".to_owned(), 0)].into(),
        };
        let plan = queue_plan(store, me, &limits, &BTreeSet::new(), None);
        match plan.verdicts.get(me.metadata.uid.as_deref().unwrap()) {
            Some(Verdict::Wait(w)) => w.clone(),
            v => panic!("not waiting: {v:?}"),
        }
    }

    /// A Task new to the queue moves it only when it lands ahead of a Task
    /// that already shows its place; arriving at the end moves nothing, and
    /// a Task already shown never counts as arriving.
    #[test]
    fn arriving_ahead_of_shown_places_moves_the_queue() {
        let (store, mut writer) = reflector::store();
        let shown = task("shown", 1, 0, true);
        writer.apply_watcher_event(&Event::Apply(shown.clone()));
        let last = task("last", 2, 0, false);
        let w = wait_of(&store, &last);
        assert_eq!((w.position, w.overtakes), (2, false));
        let urgent = task("urgent", 3, 10, false);
        let w = wait_of(&store, &urgent);
        assert_eq!((w.position, w.overtakes), (1, true));
        // Once shown, its own looks move nothing.
        let urgent_shown = task("urgent", 3, 10, true);
        writer.apply_watcher_event(&Event::Apply(urgent_shown.clone()));
        assert!(!wait_of(&store, &urgent_shown).overtakes);
        // Behind a Task that shows nothing yet: nothing shown moved.
        assert!(!wait_of(&store, &shown).overtakes);
    }
}
