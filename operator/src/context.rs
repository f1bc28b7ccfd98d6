//! What every reconcile gets: the client, the settings, the Event recorder,
//! the metrics, the per-object retry bookkeeping and the admission lock.
//! No Task state lives here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crds::Task;
use kube::Client;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;

use crate::metrics::Metrics;

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
    /// Requeue of a Task waiting for a slot (a safety net and position
    /// refresh: a finishing Task starts the next ones itself).
    pub queued_requeue: Duration,
    /// First retry delay after a failed reconcile.
    pub backoff_base: Duration,
    /// Longest retry delay after failed reconciles.
    pub backoff_max: Duration,
}

/// Shared by all reconciles, handed out as `Arc<Context>`.
pub struct Context {
    pub client: Client,
    pub config: Config,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    pub backoff: Backoff,
    pub queue: crate::admit::Queue,
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
