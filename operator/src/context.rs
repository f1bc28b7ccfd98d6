//! What every reconcile gets: the client, the settings, the Event recorder,
//! the metrics, the per-object retry bookkeeping and the admission lock.
//! No Task state lives here.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crds::Task;
use kube::Client;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;

use crate::telemetry::metrics::Metrics;

/// Settings from the command line.
#[derive(Clone, Debug)]
pub struct Config {
    /// Image of the worker container in every Job.
    pub worker_image: String,
    /// Upper bound of every API call.
    pub api_timeout: Duration,
    /// Safety-net requeue of running Tasks (watches do the real work).
    pub running_requeue: Duration,
    /// Requeue while a Job of another Task blocks the name.
    pub blocked_requeue: Duration,
    /// Requeue of a Task waiting for a slot: only a safety net. A finishing
    /// Task starts the next ones itself, and whatever moves a queue wakes
    /// the Tasks in it (`Queue::moved`).
    pub queued_requeue: Duration,
    /// First retry delay after a failed reconcile.
    pub backoff_base: Duration,
    /// Longest retry delay after failed reconciles.
    pub backoff_max: Duration,
    /// Retention defaults (`--delete-finished-after`, `--keep-finished`).
    pub retention: crate::retention::Defaults,
}

impl Config {
    /// The operator's settings: the worker image and the per-call timeout
    /// from the flags, the rest fixed.
    pub fn new(worker_image: String, api_timeout: Duration) -> Config {
        Config {
            worker_image,
            api_timeout,
            running_requeue: Duration::from_secs(300),
            blocked_requeue: Duration::from_secs(15),
            queued_requeue: Duration::from_secs(60),
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(300),
            retention: crate::retention::Defaults::default(),
        }
    }
}

/// Shared by all reconciles, handed out as `Arc<Context>`.
pub struct Context {
    pub client: Client,
    pub config: Config,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    pub backoff: Backoff,
    pub queue: crate::queue::Queue,
    pub rbac: WorkerRbac,
    /// Pods and result ConfigMaps as the watches saw them.
    pub caches: crate::cache::Caches,
}

/// Namespaces whose worker ServiceAccount and RoleBinding were applied
/// lately: a cache of cluster facts, not Task state. It saves two writes
/// per Task; a restart rebuilds it by applying once per namespace again.
/// An entry is forgotten after `ttl` (repairing RBAC someone deleted by
/// hand) or when the namespace's UID changed (deleted and made again).
pub struct WorkerRbac {
    ttl: Duration,
    ensured: Mutex<HashMap<String, (Option<String>, Instant)>>,
    /// The accounts bound in each namespace (subjects of its RoleBinding
    /// longtask-worker): every apply keeps them, so none is dropped by a
    /// reconcile that did not see its Task yet. Rebuilt from the Tasks
    /// after a restart.
    bound: Mutex<HashMap<String, BTreeSet<String>>>,
    /// One apply at a time: the first reconciles in a new namespace wait
    /// for it instead of each applying the same two objects.
    applying: tokio::sync::Mutex<()>,
}

impl WorkerRbac {
    pub fn new(ttl: Duration) -> WorkerRbac {
        WorkerRbac {
            ttl,
            ensured: Mutex::new(HashMap::new()),
            bound: Mutex::new(HashMap::new()),
            applying: tokio::sync::Mutex::new(()),
        }
    }

    /// The cache key of `account`'s worker rights in `namespace`.
    pub fn key(namespace: &str, account: &str) -> String {
        format!("{namespace}/{account}")
    }

    /// True when `key` (see `key`; its namespace with UID `uid`, if known)
    /// was ensured lately.
    pub fn fresh(&self, key: &str, uid: Option<&str>) -> bool {
        let Ok(m) = self.ensured.lock() else {
            return false;
        };
        m.get(key).is_some_and(|(u, at)| {
            let same = match (u.as_deref(), uid) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            same && at.elapsed() < self.ttl
        })
    }

    /// Held while applying a namespace's RBAC.
    pub async fn applying(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.applying.lock().await
    }

    /// The accounts last bound in `namespace`.
    pub fn bound(&self, namespace: &str) -> BTreeSet<String> {
        self.bound
            .lock()
            .ok()
            .and_then(|m| m.get(namespace).cloned())
            .unwrap_or_default()
    }

    /// Records that `accounts` were just bound in `namespace` (with UID
    /// `uid`, if known).
    pub fn ensured(&self, namespace: &str, accounts: &BTreeSet<String>, uid: Option<String>) {
        if let Ok(mut m) = self.ensured.lock() {
            for a in accounts {
                m.insert(Self::key(namespace, a), (uid.clone(), Instant::now()));
            }
        }
        if let Ok(mut m) = self.bound.lock() {
            m.insert(namespace.to_owned(), accounts.clone());
        }
    }

    /// Forgets `namespace` (its RBAC may be gone).
    pub fn forget(&self, namespace: &str) {
        if let Ok(mut m) = self.ensured.lock() {
            let prefix = format!("{namespace}/");
            m.retain(|k, _| !k.starts_with(&prefix));
        }
        if let Ok(mut m) = self.bound.lock() {
            m.remove(namespace);
        }
    }
}

/// Per-object exponential backoff: consecutive failures per Task, forgotten
/// on the first success. This is retry bookkeeping, never Task state.
#[derive(Default)]
pub struct Backoff {
    failures: Mutex<HashMap<ObjectRef<Task>, u32>>,
}

impl Backoff {
    /// Records one more failure of `key` and returns how long to wait.
    pub fn next_delay(&self, key: ObjectRef<Task>, base: Duration, max: Duration) -> Duration {
        let n = match self.failures.lock() {
            Ok(mut m) => {
                let n = m.entry(key).or_insert(0);
                *n = n.saturating_add(1);
                *n
            }
            Err(_) => 1,
        };
        delay(n, base, max)
    }

    /// Forgets the failures of `key` after a successful reconcile.
    pub fn reset(&self, key: &ObjectRef<Task>) {
        if let Ok(mut m) = self.failures.lock() {
            m.remove(key);
        }
    }
}

/// `base * 2^(failures-1)`, capped at `max`.
pub fn delay(failures: u32, base: Duration, max: Duration) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    base.saturating_mul(1u32 << exp).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_and_cap() {
        let (b, m) = (Duration::from_secs(1), Duration::from_secs(60));
        let got: Vec<u64> = (1..=8).map(|n| delay(n, b, m).as_secs()).collect();
        assert_eq!(got, vec![1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(delay(u32::MAX, b, m), m);
    }

    #[test]
    fn rbac_is_fresh_per_namespace_account_and_uid() {
        let r = WorkerRbac::new(Duration::from_secs(60));
        let (a, a2, b) = (
            WorkerRbac::key("a", "longtask-worker"),
            WorkerRbac::key("a", "analytics"),
            WorkerRbac::key("b", "longtask-worker"),
        );
        let both: BTreeSet<String> = ["longtask-worker".into(), "analytics".into()].into();
        assert!(!r.fresh(&a, None));
        r.ensured("a", &both, Some("u1".into()));
        assert!(r.fresh(&a, Some("u1")) && r.fresh(&a, None) && r.fresh(&a2, None));
        assert!(!r.fresh(&a, Some("u2")) && !r.fresh(&b, None));
        assert_eq!(r.bound("a"), both);
        r.forget("a");
        assert!(!r.fresh(&a, Some("u1")) && !r.fresh(&a2, Some("u1")));
        assert!(r.bound("a").is_empty());
        let expired = WorkerRbac::new(Duration::ZERO);
        expired.ensured("a", &both, None);
        assert!(!expired.fresh(&a, None));
    }

    #[test]
    fn reset_starts_over() {
        let bo = Backoff::default();
        let key = ObjectRef::<Task>::new("a").within("ns");
        let (b, m) = (Duration::from_secs(1), Duration::from_secs(60));
        bo.next_delay(key.clone(), b, m);
        assert_eq!(bo.next_delay(key.clone(), b, m), Duration::from_secs(2));
        bo.reset(&key);
        assert_eq!(bo.next_delay(key, b, m), Duration::from_secs(1));
    }
}
