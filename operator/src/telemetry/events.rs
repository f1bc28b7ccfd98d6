//! Events as kube's `Recorder` sends them (events.k8s.io/v1; the same Event
//! again within 6 minutes becomes a series on the first one: a patch of its
//! count), with a repeat cache a burst does not inflate. kube's keeps every
//! Event sent whole (about 1.5 KiB with its note and references) and drops
//! old ones only when the next Event is published: after a burst of
//! thousands of Tasks it held megabytes for as long as the operator then
//! stayed idle. This one keeps a hash of what makes two Events the same
//! and the first Event's name and count (under 100 bytes each), drops old
//! entries at every publish and holds at most `MAX_ENTRIES`.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};

/// How long a repeat counts on the first Event (kube's and client-go's).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_secs(6 * 60);
/// Repeat entries kept at most; the oldest go first beyond.
const MAX_ENTRIES: usize = 8192;

/// The first Event of a series: its name, how many so far, when last.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    name: Box<str>,
    count: i32,
    last: Timestamp,
}

/// The repeat cache, pure: which Event a new one repeats, if any.
#[derive(Debug, Default)]
struct Repeats {
    entries: HashMap<u64, Entry>,
}

impl Repeats {
    /// Drops entries older than the window (and the oldest beyond the bound),
    /// giving memory back once the map is mostly empty.
    fn forget_old(&mut self, now: Timestamp) {
        self.entries.retain(|_, e| e.last + SERIES_WINDOW > now);
        while self.entries.len() >= MAX_ENTRIES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last)
                .map(|(k, _)| *k)
            else {
                break;
            };
            self.entries.remove(&oldest);
        }
        if self.entries.capacity() > 64 && self.entries.len() < self.entries.capacity() / 4 {
            self.entries.shrink_to_fit();
        }
    }

    /// The series this Event continues: its first Event's name and the new
    /// count (counted here), or `None` for a new Event.
    fn repeat(&mut self, key: u64, now: Timestamp) -> Option<(Box<str>, i32)> {
        let e = self.entries.get_mut(&key)?;
        e.count += 1;
        e.last = now;
        Some((e.name.clone(), e.count))
    }

    fn first(&mut self, key: u64, name: &str, now: Timestamp) {
        self.entries.insert(
            key,
            Entry {
                name: name.into(),
                count: 1,
                last: now,
            },
        );
    }
}

/// What makes two Events the same (kube's key: type, action, reason, the
/// object and the related one; the note is not part of it).
fn key(ev: &Event, regarding: &ObjectReference) -> u64 {
    let mut h = DefaultHasher::new();
    matches!(ev.type_, EventType::Warning).hash(&mut h);
    ev.action.hash(&mut h);
    ev.reason.hash(&mut h);
    for r in std::iter::once(regarding).chain(ev.secondary.as_ref()) {
        (&r.api_version, &r.kind, &r.namespace, &r.name, &r.uid).hash(&mut h);
        r.field_path.hash(&mut h);
    }
    h.finish()
}

/// Sends Events on behalf of one controller instance.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    repeats: Arc<Mutex<Repeats>>,
}

impl Recorder {
    pub fn new(client: Client, reporter: Reporter) -> Recorder {
        Recorder {
            client,
            reporter,
            repeats: Arc::default(),
        }
    }

    fn event(&self, ev: &Event, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let controller = &self.reporter.controller;
        K8sEvent {
            action: Some(ev.action.clone()),
            reason: Some(ev.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: ev.secondary.clone(),
            note: ev.note.clone(),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| controller.clone()),
            ),
            type_: Some(match ev.type_ {
                EventType::Warning => "Warning".to_owned(),
                EventType::Normal => "Normal".to_owned(),
            }),
            ..K8sEvent::default()
        }
    }

    /// Creates the Event, or counts it on the first one of its series.
    pub async fn publish(
        &self,
        ev: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = key(ev, regarding);
        let repeat = {
            let mut r = self.repeats.lock().unwrap_or_else(|p| p.into_inner());
            r.forget_old(now);
            r.repeat(key, now)
        };
        let ns = regarding.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), ns);
        if let Some((name, count)) = repeat {
            let series =
                serde_json::json!({"series": {"count": count, "lastObservedTime": MicroTime(now)}});
            match events
                .patch(&name, &PatchParams::default(), &Patch::Merge(&series))
                .await
            {
                Ok(_) => return Ok(()),
                // The first Event is gone (deleted, or expired): start anew.
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let body = self.event(ev, regarding, now);
        let name = body.metadata.name.clone().unwrap_or_default();
        events.create(&PostParams::default(), &body).await?;
        self.repeats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first(key, &name, now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("longtask.dev/v1alpha1".into()),
            kind: Some("Task".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    fn ev(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: "Reconcile".into(),
            secondary: None,
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    #[test]
    fn same_event_is_a_series_other_notes_too_other_objects_not() {
        let a = key(&ev("Started", "one"), &reference("a"));
        assert_eq!(a, key(&ev("Started", "two"), &reference("a")));
        assert_ne!(a, key(&ev("Started", "one"), &reference("b")));
        assert_ne!(a, key(&ev("Completed", "one"), &reference("a")));
        let mut warning = ev("Started", "one");
        warning.type_ = EventType::Warning;
        assert_ne!(a, key(&warning, &reference("a")));
    }

    #[test]
    fn repeats_count_on_the_first_within_the_window() {
        let mut r = Repeats::default();
        assert_eq!(r.repeat(7, at(0)), None);
        r.first(7, "a.1", at(0));
        assert_eq!(r.repeat(7, at(10)), Some(("a.1".into(), 2)));
        assert_eq!(r.repeat(7, at(20)), Some(("a.1".into(), 3)));
        // Six minutes after the last repeat it is a new Event.
        r.forget_old(at(20 + 360));
        assert_eq!(r.repeat(7, at(20 + 360)), None);
        assert!(r.entries.is_empty());
    }

    #[test]
    fn bounded_oldest_first_and_gives_memory_back() {
        let mut r = Repeats::default();
        for k in 0..MAX_ENTRIES as u64 {
            r.first(k, "x", at(0) + SignedDuration::from_millis(k as i64));
        }
        r.forget_old(at(10));
        assert!(r.entries.len() < MAX_ENTRIES);
        assert!(!r.entries.contains_key(&0), "the oldest stays");
        assert!(r.entries.contains_key(&(MAX_ENTRIES as u64 - 1)));
        let big = r.entries.capacity();
        r.forget_old(at(10_000));
        assert!(r.entries.is_empty());
        assert!(
            r.entries.capacity() < big,
            "capacity kept: {}",
            r.entries.capacity()
        );
    }
}
