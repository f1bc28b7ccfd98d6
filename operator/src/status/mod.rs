//! Pure: (Task, Job, result ConfigMap, pods) → the status the Task should
//! have. Level-based: the same inputs always give the same status, and
//! timestamps already recorded are kept.

use crds::conditions::{ConditionType, Reason};
use crds::result::{
    MAX_LOG_TAIL_BYTES, MAX_MESSAGE_BYTES, MAX_STATUS_RESULT_BYTES, digest, truncate_utf8,
};
use crds::{Phase, Task, TaskStatus};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub mod conditions;
pub mod disruptions;
pub mod events;
pub mod facts;
pub mod kueue;
pub mod observe;
pub mod outputs;
pub mod progress;
pub mod shards;
#[cfg(test)]
mod tests;

pub use observe::Observed;

use crate::{after, queue};
use facts::{Facts, blocked, cancelled_unstarted, carry, from_job};
use observe::Ownership;

/// When to look at the Task again if no watch event comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Terminal: wait for a change (there should be none).
    Done,
    /// The Job runs: watches will tell; requeue rarely as a safety net.
    Running,
    /// A Job of another Task holds the name: look again soon.
    Blocked,
    /// The Job runs and a deadline (spec.startTimeoutSeconds) falls due in this long.
    Wake(std::time::Duration),
    /// Waiting for a slot: look again soon (a slot frees without an event
    /// on this Task).
    Queued,
}

/// The status to write and when to come back.
#[derive(Debug, PartialEq)]
pub struct Desired {
    pub status: TaskStatus,
    pub next: Next,
}

/// True when the reconciler should read the result ConfigMap: for the
/// progress while the Job runs, for the result once it ended or vanished.
pub fn wants_result(task: &Task, job: Option<&Job>) -> bool {
    let recorded = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    job.is_some() || recorded.is_some()
}

/// True when the result ConfigMap is read for the final result (the Job
/// ended, was replaced, or the Task is being cancelled), not for progress.
pub fn wants_final_result(task: &Task, job: Option<&Job>) -> bool {
    let recorded = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    match job {
        None => recorded.is_some(),
        Some(j) => {
            observe::finish(j).is_some()
                || task.spec.cancel
                || recorded.is_some_and(|r| Some(r) != j.metadata.uid.as_deref())
        }
    }
}

/// True when the Task waits for a slot under longtask's own caps (not
/// Kueue's: a Workload's changes reach it through its Job).
pub fn is_queue_full(task: &Task) -> bool {
    task.status.as_ref().is_some_and(|s| {
        s.phase == Some(crds::Phase::Queued) && s.known_reason() == Some(Reason::QueueFull)
    })
}

/// True when the last look found the Task's name taken by another's Job.
pub fn is_blocked(task: &Task) -> bool {
    task.status
        .as_ref()
        .is_some_and(|s| s.job_uid.is_none() && s.known_reason() == Some(Reason::JobOwnedByOther))
}

/// True when the Task's own Job must be stopped (suspended, which deletes
/// its pods with SIGTERM): the Task is cancelled, or `next` ends it while
/// the Job has not finished (a start timeout).
pub fn wants_stop(task: &Task, job: Option<&Job>, next: &TaskStatus) -> bool {
    stop(task, job, next, None).is_some()
}

/// How to stop the Task's own Job, if it must be stopped and is not yet
/// (see [`wants_stop`]); `kueue` is what was read of Kueue for it. A Job
/// under Kueue is stopped by deactivating its Workload, which Kueue honours
/// for good.
pub fn stop(
    task: &Task,
    job: Option<&Job>,
    next: &TaskStatus,
    kueue: Option<&kueue::Seen>,
) -> Option<kueue::Stop> {
    let j = job?;
    let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
    let ending = task.spec.cancel || next.phase.is_some_and(|p| p.is_terminal());
    if !ending || observe::ownership(j, task_uid) != Ownership::Ours || observe::finish(j).is_some()
    {
        return None;
    }
    kueue::stop(j, kueue)
}

/// How a terminal `status` ended, as recorded on a Job stopped for it
/// (annotation `longtask.dev/ended`); `None` for a status that is not
/// terminal.
pub fn ending(status: &TaskStatus) -> Option<serde_json::Value> {
    let phase = status.phase.filter(|p| p.is_terminal())?;
    Some(serde_json::json!({
        "phase": phase,
        "reason": status.reason,
        "message": status.message,
        "at": status.completed_at,
    }))
}

/// True unless `status` is terminal and its conditions say otherwise than
/// its phase (someone edited the status by hand): `Complete` or `Failed`
/// and `Finished` True, `Running` False.
pub fn conditions_agree(status: &TaskStatus) -> bool {
    let Some(phase) = status.phase.filter(|p| p.is_terminal()) else {
        return true;
    };
    let outcome = if phase == Phase::Completed {
        ConditionType::Complete
    } else {
        ConditionType::Failed
    };
    let is = |t: ConditionType, want: &str| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == t.as_str() && c.status == want)
    };
    is(outcome, "True")
        && is(ConditionType::Finished, "True")
        && !is(ConditionType::Running, "True")
}

/// The status of a terminal Task with its conditions recomputed from its
/// phase, reason and message, if they do not already agree: `None` when
/// nothing needs writing.
pub fn settled(task: &Task, now: Time) -> Option<TaskStatus> {
    let prev = task.status.as_ref()?;
    let phase = prev.phase.filter(|p| p.is_terminal())?;
    let conditions = conditions::compute(
        &prev.conditions,
        &Some(phase),
        prev.reason.as_deref(),
        prev.message.as_deref(),
        None,
        &now,
        prev.observed_generation,
    );
    let next = TaskStatus {
        conditions,
        ..prev.clone()
    };
    needs_patch(Some(prev), &next).then_some(next)
}

/// The status of a Task whose spec is invalid: Failed, reason InvalidSpec.
pub fn invalid(task: &Task, message: String, now: Time) -> Desired {
    refused(
        task,
        &Refusal {
            reason: Reason::InvalidSpec,
            message,
        },
        now,
    )
}

/// Why a Task cannot start as its spec says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// InvalidSpec (the API server refused its Job for its content, or its
    /// account may not be a worker account) or OutputStoreUnavailable.
    pub reason: Reason,
    pub message: String,
}

impl Refusal {
    /// A spec the cluster refuses.
    pub fn invalid(message: String) -> Refusal {
        Refusal {
            reason: Reason::InvalidSpec,
            message,
        }
    }
}

/// The status of a Task that cannot start: Failed, for `why`, before its
/// program ran.
pub fn refused(task: &Task, why: &Refusal, now: Time) -> Desired {
    let prev = task.status.clone().unwrap_or_default();
    let facts = Facts {
        phase: Some(Phase::Failed),
        reason: Some(why.reason),
        message: Some(why.message.clone()),
        completed_at: Some(prev.completed_at.clone().unwrap_or_else(|| now.clone())),
        ..carry(&prev)
    };
    assemble(task, &prev, facts, now)
}

/// The Task's recorded Job vanished or was replaced (`how`): it ends from
/// what that Job left.
fn lost(task: &Task, prev: &TaskStatus, obs: &Observed<'_>, job_uid: &str, how: &str) -> Facts {
    let base = facts::lost_base(prev, obs);
    if task.spec.is_sharded() {
        let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
        shards::lost(task, obs, task_uid, job_uid, how, base)
    } else {
        facts::lost(task, prev, obs, job_uid, how, base)
    }
}

/// The status `task` should have given what the cluster shows.
pub fn desired(task: &Task, obs: &Observed<'_>) -> Desired {
    let prev = task.status.clone().unwrap_or_default();
    let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
    let recorded = prev.job_uid.clone();
    let facts = match (obs.job, recorded.as_deref()) {
        (None, None) if task.spec.cancel => cancelled_unstarted(&prev, &obs.now),
        (None, None) => carry(&prev),
        (None, Some(r)) => lost(task, &prev, obs, r, "was deleted"),
        (Some(job), recorded) => {
            let job_uid = job.metadata.uid.as_deref().unwrap_or_default();
            match (observe::ownership(job, task_uid), recorded) {
                (Ownership::Ours, None) => ours(task, &prev, job, obs),
                (Ownership::Ours, Some(r)) if r == job_uid => ours(task, &prev, job, obs),
                (_, Some(r)) => {
                    let how =
                        format!("was replaced by a Job this Task did not create (UID {job_uid})");
                    lost(task, &prev, obs, r, &how)
                }
                (Ownership::Other(owner), None) => blocked(task, &prev, owner),
            }
        }
    };
    let facts = with_result_details(facts, task, obs);
    assemble(task, &prev, facts, obs.now.clone())
}

/// Adds the digest and log tail of the accepted result, and the outputs
/// its worker uploaded, to a terminal status.
fn with_result_details(mut f: Facts, task: &Task, obs: &Observed<'_>) -> Facts {
    if !f.phase.is_some_and(|p| p.is_terminal()) {
        return f;
    }
    let Some(job_uid) = f.job_uid.clone() else {
        return f;
    };
    let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
    if let Ok(r) = obs.accept_result(task_uid, &job_uid) {
        if f.result.is_some() {
            // Over the raw bytes, as decoded: what the program wrote.
            f.result_digest = Some(digest(&r.result));
        }
        if !r.log_tail.is_empty() {
            f.log_tail = Some(r.log_tail);
        }
    }
    let outcome = outputs::outcome(task, obs, &job_uid);
    outputs::apply(f, outcome)
}

/// The facts of the Task's own Job: sharded or not, suspended or not.
fn ours(task: &Task, prev: &TaskStatus, job: &Job, obs: &Observed<'_>) -> Facts {
    let facts = if task.spec.is_sharded() {
        shards::from_job(task, prev, job, obs)
    } else {
        from_job(task, prev, job, obs)
    };
    facts::suspended(task, job, facts, obs.kueue)
}

/// The status of a Task that waits for a slot (`wait` says where).
pub fn queued(task: &Task, wait: &queue::Wait, now: Time) -> Desired {
    let prev = task.status.clone().unwrap_or_default();
    let message = wait.message();
    let facts = Facts {
        phase: Some(Phase::Queued),
        reason: Some(Reason::QueueFull),
        waiting: Some((Reason::QueueFull, message.clone())),
        message: Some(message),
        queue_position: Some(i32::try_from(wait.position).unwrap_or(i32::MAX)),
        ..carry(&prev)
    };
    assemble(task, &prev, facts, now)
}

/// The status of a Task that waits for the Tasks of `spec.after`: Pending,
/// Waiting, no Job; looked at again when an upstream changes (the
/// controller's index wakes it), or when the wait for a missing one runs
/// out.
pub fn pending(task: &Task, wait: &after::Wait, now: Time) -> Desired {
    let prev = task.status.clone().unwrap_or_default();
    let facts = Facts {
        phase: Some(Phase::Pending),
        reason: Some(Reason::WaitingForUpstream),
        waiting: Some((Reason::WaitingForUpstream, wait.message.clone())),
        message: Some(wait.message.clone()),
        upstreams: wait.seen.clone(),
        wake_in: wait.wake_in,
        ..carry(&prev)
    };
    assemble(task, &prev, facts, now)
}

/// The status of a Task its upstreams keep from ever starting: Failed,
/// without a Job, for `fail`'s reason.
pub fn upstream_failed(task: &Task, fail: &after::Fail, now: Time) -> Desired {
    let why = Refusal {
        reason: fail.reason,
        message: fail.message.clone(),
    };
    let mut desired = refused(task, &why, now);
    desired.status.upstreams = fail.seen.clone();
    desired
}

/// What the reconciler does next with a Task in the state `f` describes.
fn next_step(task: &Task, f: &Facts) -> Next {
    match (f.phase, f.reason) {
        (Some(p), _) if p.is_terminal() => Next::Done,
        (_, Some(Reason::JobOwnedByOther)) => Next::Blocked,
        _ if task.spec.cancel => Next::Blocked,
        (Some(Phase::Queued), Some(Reason::QueueFull)) => Next::Queued,
        _ => f.wake_in.map_or(Next::Running, Next::Wake),
    }
}

/// Turns facts into the status: conditions, bounded result and message.
fn assemble(task: &Task, prev: &TaskStatus, f: Facts, now: Time) -> Desired {
    let generation = task.metadata.generation;
    let name = task.metadata.name.clone();
    let conditions = conditions::compute(
        &prev.conditions,
        &f.phase,
        f.reason.map(Reason::as_str),
        f.message.as_deref(),
        f.waiting.as_ref().map(|(r, m)| (*r, m.as_str())),
        &now,
        generation,
    );
    let next = next_step(task, &f);
    let (result, truncated) = bounded_result(f.result);
    let status = TaskStatus {
        phase: f.phase,
        job_name: f.job_uid.as_ref().and(name),
        job_uid: f.job_uid,
        pod_name: f.pod_name,
        started_at: f.started_at,
        completed_at: f.completed_at,
        attempts: f.attempts,
        disruptions: f.disruptions.count,
        last_disruption: f.disruptions.last,
        disrupted_pods: f.disruptions.pods,
        shards: f.shards,
        shard_results: f.shard_results,
        shard_results_truncated: f.shard_results_truncated.then_some(true),
        exit_code: f.exit_code,
        result,
        result_truncated: truncated,
        result_digest: f.result_digest,
        log_tail: f
            .log_tail
            .map(|t| tail_utf8(&t, MAX_LOG_TAIL_BYTES).to_owned()),
        reason: f.reason.map(|r| r.as_str().to_owned()),
        message: f
            .message
            .map(|m| truncate_utf8(&m, MAX_MESSAGE_BYTES).to_owned()),
        queue_position: f.queue_position,
        observed_generation: generation,
        conditions,
        outputs: f.outputs,
        upstreams: f.upstreams,
        progress: match f.phase {
            Some(Phase::Completed) => f.progress.map(progress::done),
            _ => f.progress,
        },
    };
    Desired { status, next }
}

/// The result as the status holds it: cut to 32 KiB, and whether it was.
fn bounded_result(result: Option<String>) -> (Option<String>, Option<bool>) {
    match result {
        Some(r) if r.len() > MAX_STATUS_RESULT_BYTES => (
            Some(truncate_utf8(&r, MAX_STATUS_RESULT_BYTES).to_owned()),
            Some(true),
        ),
        r => (r, None),
    }
}

/// The longest suffix of `s` of at most `max` bytes that starts on a character boundary.
fn tail_utf8(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// False when `desired` differs from `current` in nothing but timestamps,
/// the pod name, and (while running) the last exit code: pod churn, which
/// rides along with the next real change (a new attempt, or the end, which
/// follows a pod's exit at once).
pub fn needs_patch(current: Option<&TaskStatus>, desired: &TaskStatus) -> bool {
    let running = desired.phase == Some(crds::Phase::Running);
    let strip = |s: &TaskStatus| {
        let mut s = s.clone();
        s.started_at = None;
        s.completed_at = None;
        s.pod_name = None;
        if running {
            s.exit_code = None;
        }
        for c in &mut s.conditions {
            c.last_transition_time = Time(Default::default());
        }
        s
    };
    strip(&current.cloned().unwrap_or_default()) != strip(desired)
}
