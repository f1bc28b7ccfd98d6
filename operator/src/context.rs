//! What every reconcile gets: the client, the settings, the Event recorder,
//! the metrics, the per-object retry bookkeeping and the admission lock.
//! No Task state lives here.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crds::Task;
use crds::names;
use kube::Client;
use kube::runtime::reflector::ObjectRef;

use crate::telemetry::events::Recorder;
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
    /// `--cron-min-interval`: the shortest time between two scheduled
    /// times of a CronTask; `None`: any.
    pub cron_min_interval: Option<Duration>,
    /// `--cron-max-active-per-namespace`: active runs CronTasks may have
    /// in one namespace; `None`: no bound.
    pub cron_max_active_per_namespace: Option<usize>,
    /// The operator's own namespace (`POD_NAMESPACE`), where output
    /// stores' credentials Secrets are; `None`: unknown, so no store can
    /// be used.
    pub operator_namespace: Option<String>,
    /// Output stores: the collector's sweep interval and each store
    /// request's timeout.
    pub outputs: crate::outputs::sweep::Settings,
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
            cron_min_interval: Some(Duration::from_secs(60)),
            cron_max_active_per_namespace: Some(100),
            operator_namespace: None,
            outputs: crate::outputs::sweep::Settings::default(),
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
/// Every entry is keyed by namespace name and read only for the same
/// namespace UID, so a namespace deleted and made again starts afresh.
/// An entry is forgotten after `ttl` (repairing RBAC someone deleted by
/// hand).
pub struct WorkerRbac {
    ttl: Duration,
    /// When each account was last admitted in a namespace (with its UID).
    ensured: Mutex<HashMap<String, (Option<String>, Instant)>>,
    /// The subjects last applied to each namespace's RoleBinding
    /// longtask-worker (with the namespace's UID).
    applied: Mutex<HashMap<String, Applied>>,
    /// One apply at a time: the first reconciles in a new namespace wait
    /// for it instead of each applying the same two objects, and an
    /// admission and a release never interleave.
    applying: tokio::sync::Mutex<()>,
}

/// A namespace's UID (if known) and the subjects applied there.
type Applied = (Option<String>, BTreeSet<String>);

/// How long an account admitted for a Task stays bound although no Task
/// status shows a Job yet (the Job is being made).
pub const ADMITTED_GRACE: Duration = Duration::from_secs(30);

/// True when two namespace UIDs may be the same namespace (unknown is).
fn same_ns(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

impl WorkerRbac {
    pub fn new(ttl: Duration) -> WorkerRbac {
        WorkerRbac {
            ttl,
            ensured: Mutex::new(HashMap::new()),
            applied: Mutex::new(HashMap::new()),
            applying: tokio::sync::Mutex::new(()),
        }
    }

    /// The cache key of `account`'s worker rights in `namespace`.
    pub fn key(namespace: &str, account: &str) -> String {
        format!("{namespace}/{account}")
    }

    /// True when `key` (see `key`; its namespace with UID `uid`, if known)
    /// was admitted lately and is still bound.
    pub fn fresh(&self, key: &str, uid: Option<&str>) -> bool {
        let Ok(m) = self.ensured.lock() else {
            return false;
        };
        m.get(key)
            .is_some_and(|(u, at)| same_ns(u.as_deref(), uid) && at.elapsed() < self.ttl)
    }

    /// Held while applying a namespace's RBAC.
    pub async fn applying(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.applying.lock().await
    }

    /// The subjects last applied in `namespace` (UID `uid`), if any.
    pub fn applied(&self, namespace: &str, uid: Option<&str>) -> Option<BTreeSet<String>> {
        let m = self.applied.lock().ok()?;
        let (u, set) = m.get(namespace)?;
        same_ns(u.as_deref(), uid).then(|| set.clone())
    }

    /// Accounts admitted in `namespace` (UID `uid`) within `ADMITTED_GRACE`.
    pub fn recent(&self, namespace: &str, uid: Option<&str>) -> BTreeSet<String> {
        let Ok(m) = self.ensured.lock() else {
            return BTreeSet::new();
        };
        let prefix = format!("{namespace}/");
        m.iter()
            .filter(|(_, (u, at))| same_ns(u.as_deref(), uid) && at.elapsed() < ADMITTED_GRACE)
            .filter_map(|(k, _)| k.strip_prefix(&prefix).map(str::to_owned))
            .collect()
    }

    /// Records that exactly `accounts` are now bound in `namespace` (with
    /// UID `uid`, if known), `admitted` among them just admitted: the
    /// namespace's own account and `admitted` are fresh, an account no
    /// longer bound is not.
    pub fn bound_now(
        &self,
        namespace: &str,
        uid: Option<String>,
        accounts: &BTreeSet<String>,
        admitted: Option<&str>,
    ) {
        if let Ok(mut m) = self.ensured.lock() {
            let prefix = format!("{namespace}/");
            m.retain(|k, (u, _)| {
                let Some(account) = k.strip_prefix(&prefix) else {
                    return true;
                };
                accounts.contains(account) && same_ns(u.as_deref(), uid.as_deref())
            });
            let own = Self::key(namespace, names::WORKER_SERVICE_ACCOUNT);
            m.entry(own)
                .or_insert_with(|| (uid.clone(), Instant::now()));
            if let Some(a) = admitted {
                m.insert(Self::key(namespace, a), (uid.clone(), Instant::now()));
            }
        }
        if let Ok(mut m) = self.applied.lock() {
            m.insert(namespace.to_owned(), (uid, accounts.clone()));
        }
    }

    /// Forgets `namespace` (its RBAC may be gone).
    pub fn forget(&self, namespace: &str) {
        if let Ok(mut m) = self.ensured.lock() {
            let prefix = format!("{namespace}/");
            m.retain(|k, _| !k.starts_with(&prefix));
        }
        if let Ok(mut m) = self.applied.lock() {
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
        r.bound_now("a", Some("u1".into()), &both, Some("analytics"));
        assert!(r.fresh(&a, Some("u1")) && r.fresh(&a, None) && r.fresh(&a2, None));
        assert!(!r.fresh(&a, Some("u2")) && !r.fresh(&b, None));
        assert_eq!(r.applied("a", Some("u1")), Some(both.clone()));
        assert_eq!(r.recent("a", Some("u1")), both);
        // The namespace made again: nothing of the old one is its.
        assert_eq!(r.applied("a", Some("u2")), None);
        assert!(r.recent("a", Some("u2")).is_empty());
        // Released: no longer fresh, so the next Task naming it is admitted again.
        let own: BTreeSet<String> = ["longtask-worker".into()].into();
        r.bound_now("a", Some("u1".into()), &own, None);
        assert!(r.fresh(&a, Some("u1")) && !r.fresh(&a2, Some("u1")));
        r.forget("a");
        assert!(!r.fresh(&a, Some("u1")) && !r.fresh(&a2, Some("u1")));
        assert_eq!(r.applied("a", None), None);
        let expired = WorkerRbac::new(Duration::ZERO);
        expired.bound_now("a", None, &both, Some("analytics"));
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
