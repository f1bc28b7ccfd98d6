//! Why the API server refuses a Job's pods, from a watch of the Job
//! controller's `FailedCreate` Events (of Jobs only, by field selector),
//! so no reconcile lists Events: a list by field selector made the API
//! server filter every Event of the namespace, per podless Job, and a
//! burst of 10,000 Tasks with the Job controller behind saturated it
//! (issue 37). Per Job (by UID) the newest message of each Event; an
//! Event leaves with its TTL (an hour) or its Job. Bounded: past
//! [`JOBS_MAX`] Jobs a new one is not kept until others leave (its pods
//! then wait unexplained, as they did before a look found them).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Event as CoreEvent;
use kube::runtime::watcher::Event;

/// Jobs whose refusals are kept at most.
pub const JOBS_MAX: usize = 10_000;

/// One Event's say: when (unix seconds) and what.
struct Said {
    at: i64,
    message: String,
}

/// The refusals of each Job (UID), by Event name.
type ByJob = HashMap<String, HashMap<String, Said>>;

#[derive(Default)]
pub struct Refusals {
    by_job: ByJob,
    /// During a relist, the refusals seen so far; they replace these once
    /// it is done.
    relist: Option<ByJob>,
    synced: bool,
}

impl Refusals {
    pub fn apply(&mut self, ev: &Event<CoreEvent>) {
        match ev {
            Event::Init => self.relist = Some(HashMap::new()),
            Event::InitApply(e) => put(self.relist.get_or_insert_default(), e),
            Event::InitDone => {
                self.by_job = self.relist.take().unwrap_or_default();
                self.by_job.shrink_to_fit();
                self.synced = true;
            }
            Event::Apply(e) => put(&mut self.by_job, e),
            Event::Delete(e) => {
                let Some((job, name)) = key(e) else {
                    return;
                };
                if let Some(said) = self.by_job.get_mut(job) {
                    said.remove(name);
                    if said.is_empty() {
                        self.by_job.remove(job);
                    }
                }
            }
        }
    }

    /// The newest refusal of Job `job_uid`, once the watch has synced.
    pub fn of(&self, job_uid: &str) -> Option<String> {
        if !self.synced {
            return None;
        }
        let said = self.by_job.get(job_uid)?;
        let newest = said.values().max_by_key(|s| s.at)?;
        Some(newest.message.clone())
    }

    /// Job `job_uid` is gone: its refusals too.
    pub fn forget(&mut self, job_uid: &str) {
        self.by_job.remove(job_uid);
    }

    #[cfg(test)]
    fn jobs(&self) -> usize {
        self.by_job.len()
    }
}

/// An Event of a Job: the Job's UID and the Event's name.
fn key(e: &CoreEvent) -> Option<(&str, &str)> {
    if e.involved_object.kind.as_deref() != Some("Job") {
        return None;
    }
    Some((
        e.involved_object.uid.as_deref()?,
        e.metadata.name.as_deref()?,
    ))
}

fn put(by_job: &mut ByJob, e: &CoreEvent) {
    let Some((job, name)) = key(e) else {
        return;
    };
    if by_job.len() >= JOBS_MAX && !by_job.contains_key(job) {
        return;
    }
    let at = e
        .last_timestamp
        .as_ref()
        .or(e.first_timestamp.as_ref())
        .or(e.metadata.creation_timestamp.as_ref())
        .map_or(0, |t| t.0.as_second());
    let said = Said {
        at,
        message: e.message.clone().unwrap_or_default(),
    };
    by_job
        .entry(job.to_owned())
        .or_default()
        .insert(name.to_owned(), said);
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn event(name: &str, kind: &str, job: &str, at: i64, message: &str) -> CoreEvent {
        let mut e = CoreEvent::default();
        e.metadata.name = Some(name.into());
        e.involved_object.kind = Some(kind.into());
        e.involved_object.uid = Some(job.into());
        e.last_timestamp = Timestamp::from_second(at).ok().map(Time);
        e.message = Some(message.into());
        e
    }

    #[test]
    fn the_newest_refusal_of_a_job_until_its_events_leave() {
        let mut r = Refusals::default();
        r.apply(&Event::Apply(event("a", "Job", "j1", 10, "old")));
        assert_eq!(r.of("j1"), None, "not synced yet");
        r.apply(&Event::Init);
        r.apply(&Event::InitApply(event("a", "Job", "j1", 10, "old")));
        r.apply(&Event::InitApply(event("b", "Job", "j1", 20, "new")));
        r.apply(&Event::InitApply(event("c", "Pod", "p1", 30, "not a Job")));
        assert_eq!(r.of("j1"), None, "the relist is not done");
        r.apply(&Event::InitDone);
        assert_eq!(r.of("j1").as_deref(), Some("new"));
        assert_eq!(r.of("p1"), None);
        // The older Event said again later is the newest.
        r.apply(&Event::Apply(event("a", "Job", "j1", 40, "old again")));
        assert_eq!(r.of("j1").as_deref(), Some("old again"));
        r.apply(&Event::Delete(event("a", "Job", "j1", 40, "")));
        assert_eq!(r.of("j1").as_deref(), Some("new"));
        r.apply(&Event::Delete(event("b", "Job", "j1", 20, "")));
        assert_eq!(r.of("j1"), None);
        assert_eq!(r.jobs(), 0);
        r.apply(&Event::Apply(event("d", "Job", "j2", 50, "refused")));
        r.forget("j2");
        assert_eq!((r.of("j2"), r.jobs()), (None, 0));
    }

    #[test]
    fn past_the_bound_a_new_job_waits_and_known_ones_go_on() {
        let mut r = Refusals::default();
        r.apply(&Event::Init);
        r.apply(&Event::InitDone);
        for i in 0..JOBS_MAX {
            r.apply(&Event::Apply(event(
                &format!("e{i}"),
                "Job",
                &format!("j{i}"),
                1,
                "x",
            )));
        }
        r.apply(&Event::Apply(event("late", "Job", "late", 2, "x")));
        assert_eq!((r.of("late"), r.jobs()), (None, JOBS_MAX));
        r.apply(&Event::Apply(event("e0b", "Job", "j0", 3, "again")));
        assert_eq!(r.of("j0").as_deref(), Some("again"));
    }
}
