//! Pure: whether a Task with `spec.after` may start, from the Task and the
//! upstream Tasks the Task cache shows (looked up by name in its
//! namespace). Nothing is remembered here: what must survive a restart
//! (the UIDs of the upstreams seen) is in the Task's status.
//!
//! The rules, in the order they are applied:
//! 1. A cycle of Tasks that wait for each other (`after` edges followed
//!    through Tasks that never started) fails the Task: DependencyCycle.
//!    Checked first, so every Task of a cycle fails with it, not with
//!    UpstreamFailed once the first one failed.
//! 2. An upstream seen before (its UID in `status.upstreams`) that is gone
//!    or has another UID fails the Task: UpstreamDeleted.
//! 3. An upstream that failed, under condition Succeeded, fails the Task:
//!    UpstreamFailed. A sharded upstream fails it too (InvalidSpec): its
//!    shards' results cannot be handed over yet.
//! 4. An upstream that does not exist is waited for; with
//!    `startTimeoutSeconds`, only that long after the Task's creation:
//!    UpstreamMissing.
//! 5. Otherwise the Task waits while an upstream has not met its
//!    condition, and starts once all have.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crds::after::{Upstream, UpstreamCondition, UpstreamSeen};
use crds::{Phase, Reason, Task};
use k8s_openapi::jiff::Timestamp;

#[cfg(test)]
mod tests;

/// How many Tasks a cycle search visits at most: past it, no cycle is
/// reported (the Tasks wait, as they would without the check).
const MAX_VISITS: usize = 10_000;

/// What the Task's upstreams allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Every upstream met its condition (or the Task has none): start.
    Go,
    /// Some upstream has not met its condition yet.
    Wait(Wait),
    /// The Task can never start.
    Fail(Fail),
}

/// Why a Task waits, and what to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    /// Names the first upstream (in `spec.after` order) not met yet. It
    /// changes only when that one is met, so a fan-in of N upstreams costs
    /// a few status writes, not N.
    pub message: String,
    /// The upstreams seen so far, with their UIDs (`status.upstreams`).
    pub seen: Vec<UpstreamSeen>,
    /// When the wait for a missing upstream runs out
    /// (`startTimeoutSeconds`), if it can.
    pub wake_in: Option<Duration>,
}

/// Why a Task fails before it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fail {
    pub reason: Reason,
    pub message: String,
    pub seen: Vec<UpstreamSeen>,
}

/// One upstream, as the cache shows it.
enum State {
    Met,
    /// Exists, and has not met its condition yet.
    Unmet,
    Missing,
}

/// Whether `task` may start, given `lookup` (a Task of its namespace by
/// name, from the Task cache) at `now`. A Task without `after` always may.
pub fn decide(task: &Task, lookup: &dyn Fn(&str) -> Option<Arc<Task>>, now: Timestamp) -> Gate {
    if task.spec.after.is_empty() {
        return Gate::Go;
    }
    let recorded: &[UpstreamSeen] = task.status.as_ref().map_or(&[], |s| s.upstreams.as_slice());
    let mut seen = recorded.to_vec();
    let fail = |reason, message, seen: &Vec<UpstreamSeen>| {
        Gate::Fail(Fail {
            reason,
            message,
            seen: seen.clone(),
        })
    };
    if let Some(cycle) = cycle(task, lookup) {
        let message = format!(
            "the Tasks of spec.after wait for each other in a cycle: {}",
            cycle.join(" -> ")
        );
        return fail(Reason::DependencyCycle, message, &seen);
    }
    let mut first_unmet: Option<(&Upstream, State)> = None;
    let mut missing = Vec::new();
    for up in &task.spec.after {
        let was = recorded.iter().find(|s| s.name == up.name);
        let found = lookup(&up.name);
        let state = match check(up, was, found.as_deref(), &mut seen) {
            Ok(state) => state,
            Err((reason, message)) => return fail(reason, message, &seen),
        };
        if matches!(state, State::Missing) {
            missing.push(up.name.as_str());
        }
        if first_unmet.is_none() && !matches!(state, State::Met) {
            first_unmet = Some((up, state));
        }
    }
    let Some((up, state)) = first_unmet else {
        return Gate::Go;
    };
    let wake_in = match missing_deadline(task, now) {
        Some(left) if !missing.is_empty() && left.is_zero() => {
            let message = format!(
                "spec.after: {} did not exist {}s after this Task was created (spec.startTimeoutSeconds)",
                missing.join(", "),
                task.spec.start_timeout_seconds.unwrap_or_default()
            );
            return fail(Reason::UpstreamMissing, message, &seen);
        }
        Some(left) if !missing.is_empty() => Some(left),
        _ => None,
    };
    Gate::Wait(Wait {
        message: waiting_message(task, up, &state),
        seen,
        wake_in,
    })
}

/// One upstream: met, unmet or missing; or why the Task fails. Records
/// the upstream in `seen` when it is seen for the first time.
fn check(
    up: &Upstream,
    was: Option<&UpstreamSeen>,
    found: Option<&Task>,
    seen: &mut Vec<UpstreamSeen>,
) -> Result<State, (Reason, String)> {
    let Some(t) = identity(&up.name, was, found, seen)? else {
        return Ok(State::Missing);
    };
    let name = &up.name;
    if t.spec.is_sharded() {
        return Err((
            Reason::InvalidSpec,
            format!(
                "spec.after: {name} is a sharded Task (spec.shards {}); waiting for a sharded Task is not supported yet",
                t.spec.shards
            ),
        ));
    }
    let status = t.status.as_ref();
    Ok(match (status.and_then(|s| s.phase), up.condition) {
        (Some(Phase::Completed), _) => State::Met,
        (Some(Phase::Failed), UpstreamCondition::Finished) => State::Met,
        (Some(Phase::Failed), UpstreamCondition::Succeeded) => {
            let why = status
                .and_then(|s| s.reason.as_deref())
                .unwrap_or("no reason given");
            return Err((
                Reason::UpstreamFailed,
                format!("upstream {name} failed ({why}); this Task waited for it to succeed"),
            ));
        }
        _ => State::Unmet,
    })
}

/// The upstream `name` if it exists and is the one seen before (`was`),
/// recorded in `seen` when seen for the first time; `None` when it does
/// not exist and was never seen; UpstreamDeleted when it was seen and is
/// gone, or has another UID.
fn identity<'a>(
    name: &str,
    was: Option<&UpstreamSeen>,
    found: Option<&'a Task>,
    seen: &mut Vec<UpstreamSeen>,
) -> Result<Option<&'a Task>, (Reason, String)> {
    let uid = found.and_then(|t| t.metadata.uid.as_deref());
    let deleted = |w: &UpstreamSeen, again: String| {
        let message = format!(
            "upstream {name} (UID {}) was deleted while this Task waited for it{again}",
            w.uid
        );
        Err((Reason::UpstreamDeleted, message))
    };
    match (was, uid) {
        (Some(w), None) => deleted(w, String::new()),
        (Some(w), Some(u)) if u != w.uid => {
            deleted(w, format!(", and a Task of that name made again (UID {u})"))
        }
        (None, Some(u)) => {
            seen.push(UpstreamSeen {
                name: name.to_owned(),
                uid: u.to_owned(),
            });
            Ok(found)
        }
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Ok(found),
    }
}

/// What the Pending status says: the first upstream not met, and how many
/// the Task waits for in all.
fn waiting_message(task: &Task, up: &Upstream, state: &State) -> String {
    let what = match (state, up.condition) {
        (State::Missing, _) => "to be created",
        (_, UpstreamCondition::Succeeded) => "to succeed",
        (_, UpstreamCondition::Finished) => "to finish",
    };
    let n = task.spec.after.len();
    if n == 1 {
        format!("waiting for upstream {} {what}", up.name)
    } else {
        format!(
            "waiting for upstream {} {what} (one of {n} in spec.after)",
            up.name
        )
    }
}

/// Time left before the wait for a missing upstream runs out
/// (`startTimeoutSeconds` after the Task's creation); `None` without a
/// timeout or a creation time.
fn missing_deadline(task: &Task, now: Timestamp) -> Option<Duration> {
    let limit = task.spec.start_timeout_seconds?;
    let created = task.metadata.creation_timestamp.as_ref()?.0;
    let waited = now.as_second().saturating_sub(created.as_second());
    let left = limit.saturating_sub(waited).max(0);
    Some(Duration::from_secs(u64::try_from(left).unwrap_or(0)))
}

/// True when `t` waits, through `after`, and never started: only such
/// Tasks can be links of a cycle. A Task failed for a cycle still counts,
/// so the other Tasks of its cycle fail for it too.
fn waits(t: &Task) -> bool {
    let Some(s) = t.status.as_ref() else {
        return !t.spec.after.is_empty();
    };
    let for_cycle = s.known_reason() == Some(Reason::DependencyCycle);
    s.job_uid.is_none()
        && !t.spec.after.is_empty()
        && (!s.phase.is_some_and(Phase::is_terminal) || for_cycle)
}

/// The cycle through `task`, if its `after` edges lead back to it through
/// Tasks that wait: the names from `task` back to it.
pub fn cycle(task: &Task, lookup: &dyn Fn(&str) -> Option<Arc<Task>>) -> Option<Vec<String>> {
    let me = task.metadata.name.as_deref()?;
    let mut path = vec![me.to_owned()];
    let mut visited: HashSet<String> = HashSet::from([me.to_owned()]);
    let mut stack: Vec<std::vec::IntoIter<String>> = vec![names(task).into_iter()];
    while let Some(next) = stack.last_mut().map(Iterator::next) {
        let Some(name) = next else {
            stack.pop();
            path.pop();
            continue;
        };
        if name == me {
            path.push(name);
            return Some(path);
        }
        if visited.len() >= MAX_VISITS || !visited.insert(name.clone()) {
            continue;
        }
        if let Some(t) = lookup(&name).filter(|t| waits(t)) {
            path.push(name);
            stack.push(names(&t).into_iter());
        }
    }
    None
}

fn names(t: &Task) -> Vec<String> {
    t.spec.after.iter().map(|u| u.name.clone()).collect()
}
