//! Pure: the queue of Tasks waiting for a slot. A Task holds a slot while
//! its Job exists and it is not terminal; `--max-active-tasks` caps the
//! slots of all Tasks, the namespace annotation `longtask.dev/max-active-tasks`
//! those of one namespace. Waiting Tasks start by priority (higher first),
//! then creation time, then name and UID. Nothing here is remembered between
//! reconciles: the plan is recomputed from the Task cache each time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};

use crds::Task;
use crds::names::annotations;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The caps in force.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// `--max-active-tasks`: all Tasks the operator sees.
    pub global: Option<u32>,
    /// Namespace → its annotation's cap.
    pub namespaces: BTreeMap<String, u32>,
}

impl Limits {
    /// True when some cap applies to Tasks of `namespace`.
    pub fn applies_to(&self, namespace: &str) -> bool {
        self.global.is_some() || self.namespaces.contains_key(namespace)
    }
}

/// Reads a namespace's annotation: `Ok(None)` when absent.
pub fn namespace_limit(
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<Option<u32>, String> {
    let Some(v) = annotations.and_then(|a| a.get(annotations::MAX_ACTIVE_TASKS)) else {
        return Ok(None);
    };
    v.trim().parse().map(Some).map_err(|_| {
        format!(
            "annotation {}={v:?} is not a whole number ≥ 0; ignored",
            annotations::MAX_ACTIVE_TASKS
        )
    })
}

/// One Task as the queue sees it.
#[derive(Clone, Debug)]
pub struct Entry<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub priority: i32,
    pub created: Option<&'a Time>,
    /// True when it holds a slot (its Job exists), false when it waits.
    pub holds: bool,
}

/// The queue's view of `task`: `None` when it neither holds nor wants a
/// slot (terminal, or not read from the API server). `has_job` says whether
/// its Job is known to exist beyond what the status records.
pub fn entry(task: &Task, has_job: bool) -> Option<Entry<'_>> {
    if task.is_terminal() {
        return None;
    }
    let m = &task.metadata;
    let recorded = task
        .status
        .as_ref()
        .and_then(|s| s.job_uid.as_ref())
        .is_some();
    let holds = recorded || has_job;
    // A cancelled Task that has not started never will.
    if task.spec.cancel && !holds {
        return None;
    }
    Some(Entry {
        namespace: m.namespace.as_deref()?,
        name: m.name.as_deref()?,
        uid: m.uid.as_deref()?,
        priority: task.spec.priority,
        created: m.creation_timestamp.as_ref(),
        holds,
    })
}

/// Which cap keeps a Task waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Global,
    Namespace,
}

/// Where a waiting Task stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    /// 1-based place among the Tasks waiting on the same cap.
    pub position: usize,
    /// How many Tasks wait on that cap (not shown: it changes with every
    /// Task that arrives behind, and a status write per waiting Task per
    /// arrival is what a burst cannot afford).
    pub of: usize,
    pub scope: Scope,
    pub namespace: String,
    pub limit: u32,
    /// True when this Task arrived ahead of Tasks that already show their
    /// place (a higher priority, or a cache that saw it late): their
    /// positions moved. Set by admission, which sees the statuses.
    pub overtakes: bool,
}

impl Wait {
    /// "position 3 in the queue: ...", for the status message and Waiting
    /// condition. The position moves only when a Task ahead starts, leaves
    /// or is overtaken by a higher priority.
    pub fn message(&self) -> String {
        let cap = match self.scope {
            Scope::Global => format!(
                "at most {} Tasks may be active at once (--max-active-tasks)",
                self.limit
            ),
            Scope::Namespace => format!(
                "at most {} Tasks of namespace {} may be active at once (annotation {})",
                self.limit,
                self.namespace,
                annotations::MAX_ACTIVE_TASKS
            ),
        };
        format!("position {} in the queue: {cap}", self.position)
    }
}

/// The decision for one Task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Holds a slot already.
    Active,
    /// May start now.
    Start,
    /// Must wait.
    Wait(Wait),
}

/// Every Task's verdict (by UID), and the ones to start in start order.
#[derive(Debug, Default)]
pub struct Plan {
    pub verdicts: HashMap<String, Verdict>,
    pub start: Vec<String>,
}

/// The queue: who holds, who may start, who waits and where.
pub fn plan(entries: &[Entry<'_>], limits: &Limits) -> Plan {
    let mut used = Used::default();
    let mut out = Plan::default();
    let mut waiting: Vec<&Entry<'_>> = Vec::new();
    for e in entries {
        if e.holds {
            used.take(e.namespace);
            out.verdicts.insert(e.uid.to_owned(), Verdict::Active);
        } else {
            waiting.push(e);
        }
    }
    waiting.sort_by_key(|e| (Reverse(e.priority), e.created, e.name, e.namespace, e.uid));
    // Tasks blocked per cap, in queue order: positions are counted per cap.
    let mut blocked: BTreeMap<(Scope, &str), Vec<&str>> = BTreeMap::new();
    for e in waiting {
        match used.full_cap(e.namespace, limits) {
            Some(key) => blocked.entry(key).or_default().push(e.uid),
            None => {
                used.take(e.namespace);
                out.verdicts.insert(e.uid.to_owned(), Verdict::Start);
                out.start.push(e.uid.to_owned());
            }
        }
    }
    out.verdicts.extend(waits(entries, limits, blocked));
    out
}

/// Slots held, in all and per namespace.
#[derive(Default)]
struct Used<'a> {
    global: u32,
    namespaces: HashMap<&'a str, u32>,
}

impl<'a> Used<'a> {
    /// A Task of `namespace` takes a slot.
    fn take(&mut self, namespace: &'a str) {
        self.global += 1;
        *self.namespaces.entry(namespace).or_default() += 1;
    }

    /// The cap that keeps a Task of `namespace` waiting, if one is reached:
    /// its namespace's before the global one.
    fn full_cap(&self, namespace: &'a str, limits: &Limits) -> Option<(Scope, &'a str)> {
        let ns_cap = limits.namespaces.get(namespace).copied();
        let ns_used = self.namespaces.get(namespace).copied().unwrap_or(0);
        if ns_cap.is_some_and(|c| ns_used >= c) {
            Some((Scope::Namespace, namespace))
        } else if limits.global.is_some_and(|c| self.global >= c) {
            Some((Scope::Global, ""))
        } else {
            None
        }
    }
}

/// The Wait verdicts (by UID) of the Tasks `blocked` on each cap, each
/// list in queue order.
fn waits(
    entries: &[Entry<'_>],
    limits: &Limits,
    blocked: BTreeMap<(Scope, &str), Vec<&str>>,
) -> Vec<(String, Verdict)> {
    let ns_of: HashMap<&str, &str> = entries.iter().map(|e| (e.uid, e.namespace)).collect();
    let mut out = Vec::new();
    for ((scope, _), uids) in blocked {
        let of = uids.len();
        for (i, uid) in uids.into_iter().enumerate() {
            let namespace = ns_of.get(uid).copied().unwrap_or_default().to_owned();
            let limit = match scope {
                Scope::Global => limits.global.unwrap_or_default(),
                Scope::Namespace => limits
                    .namespaces
                    .get(&namespace)
                    .copied()
                    .unwrap_or_default(),
            };
            let wait = Wait {
                position: i + 1,
                of,
                scope,
                namespace,
                limit,
                overtakes: false,
            };
            out.push((uid.to_owned(), Verdict::Wait(wait)));
        }
    }
    out
}
