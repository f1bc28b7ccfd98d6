//! Pure: which of a store's objects belong to Tasks that are gone. The
//! collector lists a store's prefix level by level with the delimiter `/`
//! (`<prefix><namespace>/`, then `<task>/`, then `<task uid>/`) and asks
//! here what each listing means. Only whole Task prefixes whose three
//! parts look like a namespace, a Task name and a UID are ever deleted, so
//! other data under a store's prefix is left alone; and only a prefix
//! found orphaned by two sweeps in a row, whose Task the synced Task cache
//! still does not hold, so a Task the cache has not seen yet keeps its
//! objects.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use crds::Task;

/// How the collector works (`--output-gc-interval` and fixed bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Time between two sweeps of every store; `None`: no sweeps (a Task's
    /// objects still go when it is deleted).
    pub interval: Option<Duration>,
    /// Upper bound of each request to a store.
    pub request_timeout: Duration,
    /// Upper bound of deleting one Task's objects (many requests).
    pub delete_timeout: Duration,
    /// Directories of live Tasks listed per sweep and store (in turn).
    pub live_lists: usize,
    /// Task deletions waiting for their objects to be deleted; past it,
    /// the sweep collects them.
    pub pending: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            interval: Some(Duration::from_secs(300)),
            request_timeout: Duration::from_secs(30),
            delete_timeout: Duration::from_secs(120),
            live_lists: 100,
            pending: 10_000,
        }
    }
}

/// The Tasks the cache holds, by namespace and name: their UIDs.
#[derive(Debug, Default)]
pub struct Live {
    uids: HashMap<(String, String), BTreeSet<String>>,
}

impl Live {
    pub fn new<'a>(tasks: impl IntoIterator<Item = &'a Task>) -> Live {
        let mut uids: HashMap<(String, String), BTreeSet<String>> = HashMap::new();
        for t in tasks {
            let m = &t.metadata;
            if let (Some(ns), Some(name), Some(uid)) = (&m.namespace, &m.name, &m.uid) {
                uids.entry((ns.clone(), name.clone()))
                    .or_default()
                    .insert(uid.clone());
            }
        }
        Live { uids }
    }

    /// True when a Task `namespace/name` with UID `uid` exists.
    pub fn holds(&self, namespace: &str, name: &str, uid: &str) -> bool {
        self.named(namespace, name)
            .is_some_and(|uids| uids.contains(uid))
    }

    /// The UIDs of the Tasks named `namespace/name`, if any.
    pub fn named(&self, namespace: &str, name: &str) -> Option<&BTreeSet<String>> {
        self.uids.get(&(namespace.to_owned(), name.to_owned()))
    }
}

/// The part of `listed` (a common prefix a listing of `parent` returned)
/// below `parent`, without its trailing `/`.
pub fn segment<'a>(parent: &str, listed: &'a str) -> Option<&'a str> {
    let seg = listed.strip_prefix(parent)?.strip_suffix('/')?;
    (!seg.is_empty() && !seg.contains('/')).then_some(seg)
}

/// An RFC 1123 label, as namespace names are (and Task names, at most 63
/// characters here).
pub fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&b.len())
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// A Kubernetes UID: a UUID in its 8-4-4-4-12 lower-case hex form.
pub fn is_uid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| {
            g.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        })
}

/// A Task's name directory in a store, from a listing of its namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskDir {
    /// `<prefix><namespace>/<task>/`.
    pub prefix: String,
    pub namespace: String,
    pub name: String,
    /// True when the cache holds a Task of that name.
    pub live: bool,
}

/// The Task directories among `listed` (a listing of `ns_prefix`, the
/// directory of `namespace`), each marked live or not.
pub fn task_dirs(ns_prefix: &str, namespace: &str, listed: &[String], live: &Live) -> Vec<TaskDir> {
    listed
        .iter()
        .filter_map(|p| {
            let name = segment(ns_prefix, p).filter(|n| is_label(n))?;
            Some(TaskDir {
                prefix: p.clone(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                live: live.named(namespace, name).is_some(),
            })
        })
        .collect()
}

/// The orphaned Task prefixes among `listed` (a listing of `dir`): UIDs
/// that no Task of that namespace and name has.
pub fn orphans(dir: &TaskDir, listed: &[String], live: &Live) -> Vec<String> {
    listed
        .iter()
        .filter(|p| {
            segment(&dir.prefix, p)
                .is_some_and(|uid| is_uid(uid) && !live.holds(&dir.namespace, &dir.name, uid))
        })
        .cloned()
        .collect()
}

/// The `(namespace, task, uid)` of a Task prefix `orphan` below a store's
/// `prefix`, as `orphans` found it.
pub fn parts<'a>(prefix: &str, orphan: &'a str) -> Option<(&'a str, &'a str, &'a str)> {
    let rest = orphan.strip_prefix(prefix)?.strip_suffix('/')?;
    let mut it = rest.split('/');
    let (ns, name, uid) = (it.next()?, it.next()?, it.next()?);
    it.next().is_none().then_some((ns, name, uid))
}

/// A Task prefix in a store: (store name, prefix).
pub type Found = (String, String);

/// Task prefixes found orphaned by the last sweep, not deleted yet.
#[derive(Debug, Default)]
pub struct Suspects(BTreeSet<Found>);

impl Suspects {
    /// This sweep found `found` in the stores `listed` says it listed (a
    /// store it could not list keeps its suspects): the ones the sweep
    /// before found too are to be deleted now, the others wait for the
    /// next sweep.
    pub fn confirm(&mut self, found: BTreeSet<Found>, listed: impl Fn(&str) -> bool) -> Vec<Found> {
        let (before, elsewhere): (BTreeSet<Found>, BTreeSet<Found>) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|(s, _)| listed(s));
        let delete = before.intersection(&found).cloned().collect::<Vec<_>>();
        self.0 = elsewhere;
        self.0
            .extend(found.into_iter().filter(|p| !before.contains(p)));
        delete
    }

    /// `found` was not deleted: look at it again next time.
    pub fn keep(&mut self, found: Found) {
        self.0.insert(found);
    }

    /// How many prefixes wait.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Up to `budget` of `items` from position `cursor` on, wrapping around,
/// and where the next call starts: each sweep lists a share of the live
/// Tasks' directories, and all of them in turn.
pub fn rotate<T: Clone>(items: &[T], cursor: usize, budget: usize) -> (Vec<T>, usize) {
    if items.is_empty() || budget == 0 {
        return (Vec::new(), 0);
    }
    let start = cursor % items.len();
    let n = budget.min(items.len());
    let picked = (0..n)
        .map(|i| items[(start + i) % items.len()].clone())
        .collect();
    (picked, (start + n) % items.len())
}
