//! Which watch events of Jobs and pods wake a Task. Only a change of what
//! the status is computed from does: pod churn that no status field shows
//! (readiness, IPs, resourceVersion bumps) wakes nothing. The small map of
//! last-seen keys is a cache of cluster facts, rebuilt on every relist.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use crds::Task;
use futures::{Stream, StreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
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
/// still live, its exit code, whether it is disrupted. `None` for a live pod with nothing to say.
pub fn pod_key(pod: &Pod) -> Option<u64> {
    let waiting = observe::waiting(pod);
    let done = observe::live_pods(std::slice::from_ref(pod)) == 0;
    let exit = observe::exit_code(pod);
    // A disruption is counted from the pod while it still exists: wake
    // the Task as soon as the condition is set.
    let disrupted = crate::status::disruptions::condition(pod).is_some();
    let lost = observe::node_unreachable(pod).is_some();
    let quiet = waiting.is_none() && !done && exit.is_none() && !disrupted && !lost;
    (!quiet).then(|| hash(&(waiting, done, exit, disrupted, lost)))
}

/// The Task (namespace, name) whose change `ev` shows as the Tasks that
/// wait for it (`spec.after`) see it: created, deleted, or with another
/// phase or UID than `cache` (the Task cache before it takes `ev`) holds.
/// A relist's events wake nothing here: the controller reconciles every
/// Task a relist shows.
pub fn upstream_change(cache: &Store<Task>, ev: &Event<Task>) -> Option<(String, String)> {
    let t = match ev {
        Event::Apply(t) => {
            let before = cache.get(&ObjectRef::from_obj(t));
            let phase = |t: &Task| t.status.as_ref().and_then(|s| s.phase);
            let same = before.is_some_and(|b| b.uid() == t.uid() && phase(b.as_ref()) == phase(t));
            (!same).then_some(t)?
        }
        Event::Delete(t) => t,
        Event::Init | Event::InitApply(_) | Event::InitDone => return None,
    };
    Some((t.namespace()?, t.name_any()))
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
    let mut seen = Seen::default();
    events
        .map(move |ev| match ev {
            Ok(ev) => seen.wakes(ev, key).map(Ok),
            Err(e) => Some(Err(e)),
        })
        .flat_map(futures::stream::iter)
}

/// The last-seen key of each object (by namespace, name and UID), and
/// during a relist the keys seen so far, which replace them once it is done.
#[derive(Default)]
struct Seen {
    seen: HashMap<String, u64>,
    relist: Option<HashMap<String, u64>>,
}

impl Seen {
    /// The object `ev` wakes, if any, noting its key.
    fn wakes<K: kube::Resource>(&mut self, ev: Event<K>, key: fn(&K) -> Option<u64>) -> Option<K> {
        match ev {
            Event::Init => {
                self.relist = Some(HashMap::new());
                None
            }
            Event::InitDone => {
                if let Some(next) = self.relist.take() {
                    self.seen = next;
                }
                None
            }
            Event::Delete(o) => {
                self.seen.remove(&id(&o));
                Some(o)
            }
            Event::Apply(o) | Event::InitApply(o) => {
                let k = id(&o);
                let new = key(&o);
                let old = self.seen.get(&k).copied();
                let target = self.relist.as_mut().unwrap_or(&mut self.seen);
                match new {
                    Some(v) => {
                        target.insert(k, v);
                    }
                    None => {
                        target.remove(&k);
                    }
                }
                (new != old).then_some(o)
            }
        }
    }
}

fn id<K: kube::Resource>(o: &K) -> String {
    format!(
        "{}/{}/{}",
        o.namespace().unwrap_or_default(),
        o.name_any(),
        o.uid().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobStatus;

    /// An upstream wakes its waiters when it appears, changes phase or
    /// UID, or goes; not on a status write that keeps its phase.
    #[test]
    fn an_upstream_wakes_on_what_its_waiters_read() {
        use crate::fixtures::TaskFixture;
        use crds::Phase;
        let (store, mut writer) = kube::runtime::reflector::store();
        let a = Task::test().named("a");
        let key = Some(("ns".to_owned(), "a".to_owned()));
        assert_eq!(upstream_change(&store, &Event::Apply(a.clone())), key);
        writer.apply_watcher_event(&Event::Apply(a.clone()));
        assert_eq!(upstream_change(&store, &Event::Apply(a.clone())), None);
        let running = a.clone().phase(Phase::Running, None);
        assert_eq!(upstream_change(&store, &Event::Apply(running.clone())), key);
        writer.apply_watcher_event(&Event::Apply(running.clone()));
        let progress = running.clone().with(|t| {
            if let Some(s) = t.status.as_mut() {
                s.attempts = Some(2);
            }
        });
        assert_eq!(upstream_change(&store, &Event::Apply(progress)), None);
        let again = running.clone().uid("other");
        assert_eq!(upstream_change(&store, &Event::Apply(again)), key);
        assert_eq!(
            upstream_change(&store, &Event::Delete(running.clone())),
            key
        );
        assert_eq!(upstream_change(&store, &Event::InitApply(running)), None);
    }

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

    #[test]
    fn a_disruption_wakes_the_task() {
        use crate::fixtures::PodFixture;
        let quiet = PodFixture::new("p").build();
        assert_eq!(pod_key(&quiet), None);
        let evicted = PodFixture::new("p")
            .disrupted("EvictionByEvictionAPI", 5)
            .build();
        assert!(pod_key(&evicted).is_some());
        // Once it stopped, it still differs from a plain failed pod.
        let failed = PodFixture::new("p").exited(143).build();
        let evicted_failed = PodFixture::new("p")
            .exited(143)
            .disrupted("EvictionByEvictionAPI", 5)
            .build();
        assert_ne!(pod_key(&failed), pod_key(&evicted_failed));
    }
}
