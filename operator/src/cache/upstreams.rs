//! The Tasks that wait for their upstreams (`spec.after`), by upstream:
//! (namespace, upstream name) → the waiting Tasks' keys. Kept from the
//! Task watch, so that an upstream's change wakes exactly the Tasks that
//! wait for it, without a walk over every Task. Rebuilt by each relist
//! like the store; a cache of cluster facts, never Task state.

use std::collections::{HashMap, HashSet};

use crds::Task;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::Event;

use super::key::task_key;

/// An upstream: its namespace and name.
type Key = (String, String);

#[derive(Default)]
pub struct UpstreamIndex {
    waiters: HashMap<Key, HashSet<ObjectRef<Task>>>,
    /// What each indexed Task waits for.
    waits_on: HashMap<ObjectRef<Task>, Vec<Key>>,
    relist: Option<Box<UpstreamIndex>>,
}

/// True when `t` waits for upstreams: it has `after`, no Job recorded
/// and has not ended. Once it has a Job, its upstreams are never looked
/// at again.
pub fn waiting(t: &Task) -> bool {
    let started = t.status.as_ref().is_some_and(|s| s.job_uid.is_some());
    !t.spec.after.is_empty() && !started && !t.is_terminal()
}

impl UpstreamIndex {
    pub fn apply(&mut self, ev: &Event<Task>) {
        match ev {
            Event::Init => self.relist = Some(Box::default()),
            Event::InitApply(t) => self.relist.get_or_insert_default().put(t),
            Event::InitDone => {
                let next = self.relist.take().unwrap_or_default();
                self.waiters = next.waiters;
                self.waits_on = next.waits_on;
            }
            Event::Apply(t) => self.put(t),
            Event::Delete(t) => self.remove(&task_key(t)),
        }
    }

    /// The Tasks that wait for the Task `name` of `namespace`.
    pub fn waiters_of(&self, namespace: &str, name: &str) -> Vec<ObjectRef<Task>> {
        self.waiters
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// How many Tasks wait (for the tests and the memory figures).
    pub fn len(&self) -> usize {
        self.waits_on.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waits_on.is_empty()
    }

    fn put(&mut self, t: &Task) {
        let key = task_key(t);
        self.remove(&key);
        if !waiting(t) {
            return;
        }
        let ns = t.namespace().unwrap_or_default();
        let ups: Vec<Key> = t
            .spec
            .after
            .iter()
            .map(|u| (ns.clone(), u.name.clone()))
            .collect();
        for up in &ups {
            self.waiters
                .entry(up.clone())
                .or_default()
                .insert(key.clone());
        }
        self.waits_on.insert(key, ups);
    }

    fn remove(&mut self, key: &ObjectRef<Task>) {
        for up in self.waits_on.remove(key).unwrap_or_default() {
            if let Some(set) = self.waiters.get_mut(&up) {
                set.remove(key);
                if set.is_empty() {
                    self.waiters.remove(&up);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::TaskFixture;
    use crds::{Phase, Reason};

    fn names(v: Vec<ObjectRef<Task>>) -> Vec<String> {
        let mut n: Vec<String> = v.into_iter().map(|k| k.name).collect();
        n.sort();
        n
    }

    #[test]
    fn waiters_are_found_by_upstream_until_they_start() {
        let mut idx = UpstreamIndex::default();
        let b = Task::test().named("b").after(&["a"]);
        let c = Task::test().named("c").after(&["a", "b"]);
        idx.apply(&Event::Init);
        idx.apply(&Event::InitApply(b.clone()));
        idx.apply(&Event::InitApply(c.clone()));
        // Not synced: the old (empty) index serves.
        assert!(idx.waiters_of("ns", "a").is_empty());
        idx.apply(&Event::InitDone);
        assert_eq!(names(idx.waiters_of("ns", "a")), ["b", "c"]);
        assert_eq!(names(idx.waiters_of("ns", "b")), ["c"]);
        assert!(idx.waiters_of("other", "a").is_empty());
        // `b` started: it waits no more.
        idx.apply(&Event::Apply(b.clone().running()));
        assert_eq!(names(idx.waiters_of("ns", "a")), ["c"]);
        // `c` failed (an upstream failed): gone from the index.
        let failed = c.clone().phase(Phase::Failed, Some(Reason::UpstreamFailed));
        idx.apply(&Event::Apply(failed));
        assert!(idx.is_empty());
        idx.apply(&Event::Apply(c.clone()));
        idx.apply(&Event::Delete(c));
        assert!(idx.waiters_of("ns", "b").is_empty());
        assert_eq!(idx.len(), 0);
    }
}
