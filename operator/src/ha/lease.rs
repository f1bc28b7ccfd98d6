//! Pure: leader election decisions on a `coordination.k8s.io/v1` Lease.
//!
//! The rules follow client-go's leaderelection: a standby takes over only
//! after it has seen the same (holder, renewTime) record unchanged for a
//! whole lease duration, measured on its own monotonic clock (so clock skew
//! between machines does not matter); the leader renews well before that
//! and stops leading when it could not renew for `renew_deadline`.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;

/// Timings of the election.
#[derive(Clone, Copy, Debug)]
pub struct Timings {
    /// How long a standby waits after the last renewal it saw.
    pub lease_duration: Duration,
    /// The leader stops leading when it could not renew for this long.
    pub renew_deadline: Duration,
    /// How often the leader renews.
    pub renew_period: Duration,
    /// How often a standby looks at the Lease.
    pub retry_period: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(10),
            renew_deadline: Duration::from_secs(8),
            renew_period: Duration::from_secs(3),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// The record a standby watches for changes, and when it last changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub holder: Option<String>,
    pub renew_time: Option<Timestamp>,
    pub at: Instant,
}

/// What to do with the Lease now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No Lease exists: create it, holding it.
    Create,
    /// Free or expired: take it over (update, fenced by resourceVersion).
    Acquire,
    /// We hold it: renew it.
    Renew,
    /// Someone else holds a live lease: look again later.
    Wait,
}

fn holder(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity.as_deref().filter(|h| !h.is_empty())
}

/// Decides from the Lease as read now, remembering what was seen.
pub fn decide(
    lease: Option<&Lease>,
    me: &str,
    prev: Option<&Seen>,
    now: Instant,
    default_duration: Duration,
) -> (Decision, Option<Seen>) {
    let Some(lease) = lease else {
        return (Decision::Create, None);
    };
    let empty = LeaseSpec::default();
    let spec = lease.spec.as_ref().unwrap_or(&empty);
    let Some(who) = holder(spec) else {
        return (Decision::Acquire, None);
    };
    if who == me {
        return (Decision::Renew, None);
    }
    let renew_time = spec.renew_time.as_ref().map(|t| t.0);
    let seen = match prev {
        Some(s) if s.holder.as_deref() == Some(who) && s.renew_time == renew_time => s.clone(),
        _ => Seen {
            holder: Some(who.to_owned()),
            renew_time,
            at: now,
        },
    };
    let duration = spec
        .lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map_or(default_duration, Duration::from_secs);
    if now.saturating_duration_since(seen.at) > duration {
        (Decision::Acquire, Some(seen))
    } else {
        (Decision::Wait, Some(seen))
    }
}

/// The Lease to write for `decision` (`Create`, `Acquire` or `Renew`),
/// keeping `current`'s metadata (and so its resourceVersion fence).
pub fn desired(
    current: Option<&Lease>,
    name: &str,
    namespace: &str,
    me: &str,
    decision: Decision,
    duration: Duration,
    now: Timestamp,
) -> Lease {
    let old = current.and_then(|l| l.spec.clone()).unwrap_or_default();
    let transitions = old.lease_transitions.unwrap_or(0);
    let taking = decision != Decision::Renew || holder(&old) != Some(me);
    let secs = i32::try_from(duration.as_secs()).unwrap_or(i32::MAX);
    let spec = LeaseSpec {
        holder_identity: Some(me.to_owned()),
        lease_duration_seconds: Some(secs),
        renew_time: Some(MicroTime(now)),
        acquire_time: if taking {
            Some(MicroTime(now))
        } else {
            old.acquire_time.clone()
        },
        lease_transitions: Some(if taking && current.is_some() {
            transitions.saturating_add(1)
        } else {
            transitions
        }),
        ..old
    };
    Lease {
        metadata: current.map(|l| l.metadata.clone()).unwrap_or(ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        }),
        spec: Some(spec),
    }
}

/// The Lease that hands leadership back at once: no holder, 1 s duration.
pub fn released(current: &Lease, now: Timestamp) -> Lease {
    let mut l = current.clone();
    let spec = l.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(MicroTime(now));
    l
}

/// True while a leader whose last successful renewal began at `last_ok` may still lead.
pub fn still_leading(last_ok: Instant, now: Instant, t: &Timings) -> bool {
    now.saturating_duration_since(last_ok) < t.renew_deadline
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, renew: i64, secs: i32) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some("l".into()),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                renew_time: Some(MicroTime(Timestamp::from_second(renew).unwrap())),
                lease_duration_seconds: Some(secs),
                lease_transitions: Some(2),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn table() {
        let t0 = Instant::now();
        let d = Duration::from_secs(10);
        let seen = |h: &str, r: i64, at: Instant| Seen {
            holder: Some(h.into()),
            renew_time: Some(Timestamp::from_second(r).unwrap()),
            at,
        };
        type Case = (&'static str, Option<Lease>, Option<Seen>, Instant, Decision);
        let cases: Vec<Case> = vec![
            ("no lease", None, None, t0, Decision::Create),
            (
                "free",
                Some(lease(None, 1, 10)),
                None,
                t0,
                Decision::Acquire,
            ),
            (
                "empty holder",
                Some(lease(Some(""), 1, 10)),
                None,
                t0,
                Decision::Acquire,
            ),
            (
                "ours",
                Some(lease(Some("me"), 1, 10)),
                None,
                t0,
                Decision::Renew,
            ),
            (
                "first sight of other",
                Some(lease(Some("b"), 1, 10)),
                None,
                t0,
                Decision::Wait,
            ),
            (
                "other, unchanged but young",
                Some(lease(Some("b"), 1, 10)),
                Some(seen("b", 1, t0)),
                t0 + Duration::from_secs(9),
                Decision::Wait,
            ),
            (
                "other, unchanged for a whole duration",
                Some(lease(Some("b"), 1, 10)),
                Some(seen("b", 1, t0)),
                t0 + Duration::from_secs(11),
                Decision::Acquire,
            ),
            (
                "other renewed meanwhile",
                Some(lease(Some("b"), 5, 10)),
                Some(seen("b", 1, t0)),
                t0 + Duration::from_secs(11),
                Decision::Wait,
            ),
            (
                "other's own short duration",
                Some(lease(Some("b"), 1, 2)),
                Some(seen("b", 1, t0)),
                t0 + Duration::from_secs(3),
                Decision::Acquire,
            ),
        ];
        for (name, l, prev, now, want) in cases {
            let (got, _) = decide(l.as_ref(), "me", prev.as_ref(), now, d);
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn seen_is_kept_until_the_record_changes() {
        let t0 = Instant::now();
        let l = lease(Some("b"), 1, 10);
        let (_, s1) = decide(Some(&l), "me", None, t0, Duration::from_secs(10));
        let later = t0 + Duration::from_secs(4);
        let (_, s2) = decide(Some(&l), "me", s1.as_ref(), later, Duration::from_secs(10));
        assert_eq!(s2.as_ref().map(|s| s.at), Some(t0));
        let l2 = lease(Some("b"), 2, 10);
        let (_, s3) = decide(Some(&l2), "me", s2.as_ref(), later, Duration::from_secs(10));
        assert_eq!(s3.map(|s| s.at), Some(later));
    }

    #[test]
    fn desired_counts_transitions_and_keeps_the_fence() {
        let now = Timestamp::from_second(100).unwrap();
        let d = Duration::from_secs(10);
        let other = lease(Some("b"), 1, 10);
        let took = desired(Some(&other), "l", "ns", "me", Decision::Acquire, d, now);
        let s = took.spec.unwrap();
        assert_eq!(s.holder_identity.as_deref(), Some("me"));
        assert_eq!(s.lease_transitions, Some(3));
        assert_eq!(s.acquire_time, Some(MicroTime(now)));
        assert_eq!(took.metadata.resource_version.as_deref(), Some("7"));

        let mine = lease(Some("me"), 1, 10);
        let renewed = desired(Some(&mine), "l", "ns", "me", Decision::Renew, d, now);
        let s = renewed.spec.unwrap();
        assert_eq!((s.lease_transitions, s.acquire_time), (Some(2), None));
        assert_eq!(s.renew_time, Some(MicroTime(now)));

        let fresh = desired(None, "l", "ns", "me", Decision::Create, d, now);
        assert_eq!(fresh.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(fresh.spec.unwrap().lease_transitions, Some(0));

        let r = released(&mine, now).spec.unwrap();
        assert_eq!(
            (r.holder_identity, r.lease_duration_seconds),
            (None, Some(1))
        );
    }

    #[test]
    fn leading_ends_at_the_renew_deadline() {
        let t = Timings::default();
        let t0 = Instant::now();
        assert!(still_leading(t0, t0 + Duration::from_secs(7), &t));
        assert!(!still_leading(t0, t0 + Duration::from_secs(8), &t));
    }
}
