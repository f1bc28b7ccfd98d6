//! Which watch events of Jobs and pods wake a Task. Only a change of what
//! the status is computed from does: pod churn that no status field shows
//! (readiness, IPs, resourceVersion bumps) wakes nothing. The small map of
//! last-seen keys is a cache of cluster facts, rebuilt on every relist.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use futures::{Stream, StreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::runtime::watcher::{self, Event};

use crate::status::observe;

/// What of a Job the status reads: spec (suspend, via generation), the
/// terminal conditions and the pod counts. `None` for a Job without status
/// (just created: the reconcile that created it has written the status).
pub fn job_key(job: &Job) -> Option<u64> {
    let st = job.status.as_ref()?;
    let conds: Vec<(&str, &str)> = st
        .conditions
        .iter()
        .flatten()
        .map(|c| (c.type_.as_str(), c.status.as_str()))
        .collect();
    let counts = (st.active, st.succeeded, st.failed, st.terminating);
    let empty = conds.is_empty() && counts == (None, None, None, None);
    let suspend = job.spec.as_ref().and_then(|s| s.suspend);
    (!empty || suspend == Some(true))
        .then(|| hash(&(job.metadata.generation, suspend, conds, counts)))
}

/// What of a pod the status reads: why it cannot start, whether it is
/// still live, its exit code. `None` for a live pod with nothing to say.
pub fn pod_key(pod: &Pod) -> Option<u64> {
    let waiting = observe::waiting(pod);
    let done = observe::live_pods(std::slice::from_ref(pod)) == 0;
    let exit = observe::exit_code(pod);
    let quiet = waiting.is_none() && !done && exit.is_none();
    (!quiet).then(|| hash(&(waiting, done, exit)))
}

fn hash<T: Hash>(t: &T) -> u64 {
    let mut h = DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

/// The objects of `events` whose `key` changed since last seen (first
/// sight counts only with a key), and every deleted one.
pub fn changed<K, S>(
    events: S,
    key: fn(&K) -> Option<u64>,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send
where
    K: kube::Resource + Clone + Send + 'static,
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
{
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut relist: Option<HashMap<String, u64>> = None;
    events
        .map(move |ev| {
            let ev = match ev {
                Ok(ev) => ev,
                Err(e) => return vec![Err(e)],
            };
            let id = |o: &K| {
                format!(
                    "{}/{}/{}",
                    o.namespace().unwrap_or_default(),
                    o.name_any(),
                    o.uid().unwrap_or_default()
                )
            };
            match ev {
                Event::Init => {
                    relist = Some(HashMap::new());
                    Vec::new()
                }
                Event::InitDone => {
                    if let Some(next) = relist.take() {
                        seen = next;
                    }
                    Vec::new()
                }
                Event::Delete(o) => {
                    seen.remove(&id(&o));
                    vec![Ok(o)]
                }
                Event::Apply(o) | Event::InitApply(o) => {
                    let k = id(&o);
                    let new = key(&o);
                    let old = seen.get(&k).copied();
                    let target = relist.as_mut().unwrap_or(&mut seen);
                    match new {
                        Some(v) => {
                            target.insert(k, v);
                        }
                        None => {
                            target.remove(&k);
                        }
                    }
                    if new != old { vec![Ok(o)] } else { Vec::new() }
                }
            }
        })
        .flat_map(futures::stream::iter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobStatus;

    #[test]
    fn new_jobs_and_quiet_pods_wake_nothing() {
        assert_eq!(job_key(&Job::default()), None);
        let mut j = Job {
            status: Some(JobStatus::default()),
            ..Job::default()
        };
        assert_eq!(job_key(&j), None);
        j.status = Some(JobStatus {
            active: Some(1),
            ..JobStatus::default()
        });
        let active = job_key(&j);
        assert!(active.is_some());
        j.status = Some(JobStatus {
            succeeded: Some(1),
            ..JobStatus::default()
        });
        assert_ne!(job_key(&j), active);
        assert_eq!(pod_key(&Pod::default()), None);
    }
}
