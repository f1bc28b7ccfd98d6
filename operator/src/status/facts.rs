//! Pure: what the Job, its pods and the result ConfigMap say about a Task,
//! gathered into `Facts` that `status/mod.rs` (`desired`) turns into a status.

use crds::conditions::{ConditionType, Reason};
use crds::result::TaskResult;
use crds::{Phase, ShardCounts, ShardResult, Task, TaskProgress, TaskStatus};
use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use crate::status::disruptions::{self, Tally};
use crate::status::observe::Observed;
use crate::status::observe::{self, Finish};
use crate::status::{kueue, progress};

/// The facts a status is assembled from.
#[derive(Default)]
pub struct Facts {
    pub phase: Option<Phase>,
    pub reason: Option<Reason>,
    pub message: Option<String>,
    /// Why the Task waits and the Waiting condition's message.
    pub waiting: Option<(Reason, String)>,
    /// The place in the queue, while Queued for a slot (not carried).
    pub queue_position: Option<i32>,
    pub exit_code: Option<i32>,
    pub result: Option<String>,
    pub job_uid: Option<String>,
    pub pod_name: Option<String>,
    pub started_at: Option<Time>,
    pub completed_at: Option<Time>,
    pub attempts: Option<i32>,
    /// Pods stopped by a disruption, counted once each.
    pub disruptions: Tally,
    /// sha256 of the accepted result, and the program's last output lines.
    pub result_digest: Option<String>,
    pub log_tail: Option<String>,
    /// Look again after this long (a start deadline), if nothing happens first.
    pub wake_in: Option<std::time::Duration>,
    pub shards: Option<ShardCounts>,
    pub shard_results: Vec<ShardResult>,
    pub shard_results_truncated: bool,
    pub progress: Option<TaskProgress>,
    /// The files the Task uploaded (`status.outputs`).
    pub outputs: Option<crds::OutputsStatus>,
    /// The upstreams seen while the Task waited (`status.upstreams`); not
    /// kept once it has a Job, which ends its wait for good.
    pub upstreams: Vec<crds::UpstreamSeen>,
}

/// Keeps what is recorded (used before a Job exists); a reason outside the
/// vocabulary (not written by this operator) is not kept.
pub fn carry(prev: &TaskStatus) -> Facts {
    Facts {
        phase: prev.phase,
        reason: prev.known_reason(),
        message: prev.message.clone(),
        exit_code: prev.exit_code,
        result: prev.result.clone(),
        job_uid: prev.job_uid.clone(),
        pod_name: prev.pod_name.clone(),
        started_at: prev.started_at.clone(),
        completed_at: prev.completed_at.clone(),
        attempts: prev.attempts,
        disruptions: disruptions::carried(prev),
        waiting: None,
        queue_position: None,
        wake_in: None,
        result_digest: prev.result_digest.clone(),
        log_tail: prev.log_tail.clone(),
        shards: prev.shards.clone(),
        shard_results: prev.shard_results.clone(),
        shard_results_truncated: prev.shard_results_truncated == Some(true),
        progress: prev.progress.clone(),
        outputs: prev.outputs.clone(),
        upstreams: prev.upstreams.clone(),
    }
}

pub fn blocked(task: &Task, prev: &TaskStatus, owner: Option<String>) -> Facts {
    let name = task.metadata.name.as_deref().unwrap_or_default();
    let who = owner.map_or("no controller".to_owned(), |u| {
        format!("the controller with UID {u}")
    });
    Facts {
        reason: Some(Reason::JobOwnedByOther),
        message: Some(format!(
            "a Job named {name} already exists and belongs to {who}, not to this Task; \
             waiting for it to be deleted"
        )),
        ..carry(prev)
    }
}

/// What a Task whose Job vanished or was replaced keeps: its record, and
/// the time it ended (now, unless recorded).
pub fn lost_base(prev: &TaskStatus, obs: &Observed<'_>) -> Facts {
    let completed_at = Some(prev.completed_at.clone().unwrap_or_else(|| obs.now.clone()));
    Facts {
        completed_at,
        ..carry(prev)
    }
}

/// The Task's (single) Job vanished or was replaced: finish from the result
/// the recorded Job left, if any; never adopt another Job.
pub fn lost(
    task: &Task,
    prev: &TaskStatus,
    obs: &Observed<'_>,
    job_uid: &str,
    how: &str,
    base: Facts,
) -> Facts {
    // The Job takes the Task's name; `prev.job_name` may be unset, and the
    // message must not change once the status records it.
    let job = task.metadata.name.as_deref().unwrap_or_default();
    let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
    match obs.accept_result(task_uid, job_uid) {
        Ok(r) if r.too_large() => Facts {
            phase: Some(Phase::Failed),
            reason: Some(Reason::ResultTooLarge),
            message: Some(format!("{}; its Job {job} {how}", r.too_large_message())),
            exit_code: Some(r.exit_code),
            ..base
        },
        Ok(r) if r.exit_code == 0 => lost_succeeded(&r, job, how, base),
        Ok(r) => lost_failed(task, prev, &r, job, how, base),
        Err(_) => Facts {
            phase: Some(Phase::Failed),
            reason: Some(Reason::JobLost),
            message: Some(format!(
                "the Task's Job {job} (UID {job_uid}) {how} and left no result"
            )),
            ..base
        },
    }
}

/// The vanished Job `job` left a result of a program that succeeded:
/// Completed with it.
fn lost_succeeded(r: &TaskResult, job: &str, how: &str, base: Facts) -> Facts {
    Facts {
        phase: Some(Phase::Completed),
        reason: Some(Reason::Succeeded),
        message: Some(format!(
            "the program succeeded; its Job {job} {how} afterwards{}",
            binary_note(r)
        )),
        exit_code: Some(0),
        result: Some(r.text()),
        ..base
    }
}

/// The vanished Job `job` left a result of a program that failed: Failed,
/// with the reason [`lost_failure`] reads from it.
fn lost_failed(
    task: &Task,
    prev: &TaskStatus,
    r: &TaskResult,
    job: &str,
    how: &str,
    base: Facts,
) -> Facts {
    // The Job's own verdict is gone with it; what is left (the last
    // attempt's result, the spec, the start time) still tells how it
    // ended, the same whenever the operator looks.
    let (reason, why) = lost_failure(task, prev, r);
    Facts {
        phase: Some(Phase::Failed),
        reason: Some(reason),
        message: Some(format!(
            "{why}; its Job {job} {how} before its final state was read{}",
            binary_note(r)
        )),
        exit_code: Some(r.exit_code),
        result: Some(r.text()),
        ..base
    }
}

/// Why a Task whose Job vanished failed, from its last attempt's result: a
/// Job whose last pod failed ended by its deadline (the program was killed
/// once `spec.timeoutSeconds` had passed since the start) or else by running
/// out of retries.
fn lost_failure(task: &Task, prev: &TaskStatus, r: &TaskResult) -> (Reason, String) {
    if task.spec.fail_on_exit_codes.contains(&r.exit_code) {
        let attempts = prev.attempts.unwrap_or(1).max(1);
        return (
            Reason::FailOnExitCode,
            fail_on_exit_code_message(task, Some(r.exit_code), attempts),
        );
    }
    let code = observe::describe_exit(Some(r.exit_code));
    let killed = matches!(r.exit_code, 137 | 143);
    let ran = match (&prev.started_at, r.finished_at.parse::<Timestamp>()) {
        (Some(start), Ok(end)) => Some(end.as_second() - start.0.as_second()),
        _ => None,
    };
    if let (Some(limit), Some(ran)) = (task.spec.timeout_seconds, ran)
        && killed
        && ran + 1 >= limit
    {
        return (
            Reason::DeadlineExceeded,
            format!(
                "the Task ran longer than spec.timeoutSeconds ({limit}s) and was stopped; last \
                 exit code {code}"
            ),
        );
    }
    (
        Reason::BackoffLimitExceeded,
        format!(
            "the program failed on its last attempt (spec.retries: {}; attempts seen: {}); last \
             exit code {code}",
            task.spec.retries,
            prev.attempts.unwrap_or(1).max(1)
        ),
    )
}

/// What the Task's own (single) Job, its pods and its result say.
pub fn from_job(task: &Task, prev: &TaskStatus, job: &Job, obs: &Observed<'_>) -> Facts {
    let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
    let job_uid = job.metadata.uid.as_deref().unwrap_or_default();
    let base = record(task_uid, prev, job, obs);
    let accepted = obs.accept_result(task_uid, job_uid);
    let Some(finish) = observe::finish(job) else {
        // Stopped by longtask because the Task ended: that ending stands.
        if let Some(ended) = observe::ended(job) {
            return Facts {
                phase: Some(ended.phase),
                reason: ended.reason,
                message: ended.message,
                completed_at: prev
                    .completed_at
                    .clone()
                    .or(ended.at)
                    .or_else(|| Some(obs.now.clone())),
                ..base
            };
        }
        if task.spec.cancel {
            return cancelling(prev, job, obs, accepted, base);
        }
        return unfinished(task, prev, job, obs, base);
    };
    let (cond, failed) = match finish {
        Finish::Complete(c) => (c, false),
        Finish::Failed(c) => (c, true),
    };
    let completion = job.status.as_ref().and_then(|s| s.completion_time.clone());
    let completed_at = prev
        .completed_at
        .clone()
        .or(completion.filter(|_| !failed))
        .or(cond.last_transition_time.clone())
        .or_else(|| Some(obs.now.clone()));
    let base = Facts {
        completed_at,
        ..base
    };
    if failed && task.spec.cancel && cond.reason.as_deref() == Some("PodFailurePolicy") {
        // The cancel's SIGTERM ended the program with a code the Task
        // lists (e.g. 143): the Task was cancelled, whatever the policy says.
        cancelled(None, obs, accepted, base)
    } else if failed {
        job_failed(task, cond, accepted, obs, base)
    } else {
        succeeded(accepted, base)
    }
}

/// What the status records of the Job however it stands: its UID, the
/// newest pod, the start, attempts so far, the last exit code, progress.
fn record(task_uid: &str, prev: &TaskStatus, job: &Job, obs: &Observed<'_>) -> Facts {
    let job_uid = job.metadata.uid.clone().unwrap_or_default();
    let st = job.status.clone().unwrap_or_default();
    let active = if observe::finish(job).is_some() {
        0
    } else {
        st.active.unwrap_or(0)
    };
    let counted = st.succeeded.unwrap_or(0) + st.failed.unwrap_or(0) + active;
    // An unsuspended Job starts its first pod at once: counting it from the
    // create saves a status patch when the Job controller reports it.
    let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    let first = i32::from(!suspended);
    let newest = observe::newest(obs.pods);
    Facts {
        pod_name: newest
            .and_then(|p| p.metadata.name.clone())
            .or_else(|| prev.pod_name.clone()),
        started_at: prev
            .started_at
            .clone()
            .or(st.start_time.clone())
            .or_else(|| Some(obs.now.clone())),
        // The Job controller counts no failure its podFailurePolicy
        // ignores (a disruption), so a disrupted pod's replacement is no
        // new attempt: it takes the disrupted pod's place in `active`.
        attempts: Some(counted.max(first).max(prev.attempts.unwrap_or(0))),
        disruptions: tally(prev, obs),
        exit_code: observe::last_exit_code(obs.pods).or(prev.exit_code),
        progress: progress::from_config_map(obs.result, task_uid, &job_uid)
            .or_else(|| prev.progress.clone()),
        job_uid: Some(job_uid),
        ..Facts::default()
    }
}

/// The disruptions of the pods seen, and of those that left disrupted.
fn tally(prev: &TaskStatus, obs: &Observed<'_>) -> Tally {
    if obs.departed.is_empty() {
        return disruptions::tally(prev, obs.pods, obs.pods_live_only);
    }
    let seen = [obs.pods, obs.departed].concat();
    disruptions::tally(prev, &seen, obs.pods_live_only)
}

/// The Job runs: Running, with why its pod waits if it does, failing once
/// `spec.startTimeoutSeconds` passed with the pod still waiting.
fn unfinished(task: &Task, prev: &TaskStatus, job: &Job, obs: &Observed<'_>, base: Facts) -> Facts {
    let waiting = observe::newest(obs.pods)
        .and_then(observe::waiting)
        .or_else(|| Some((Reason::PodRefused, obs.pod_refused.clone()?)));
    let mut wake_in = None;
    if let (Some((r, m)), Some(limit)) = (&waiting, task.spec.start_timeout_seconds) {
        let since = job.metadata.creation_timestamp.as_ref().unwrap_or(&obs.now);
        let left = limit.saturating_sub(obs.now.0.as_second() - since.0.as_second());
        if left <= 0 {
            return Facts {
                phase: Some(Phase::Failed),
                reason: Some(*r),
                message: Some(format!(
                    "the pod could not start within spec.startTimeoutSeconds ({limit}s): {m}"
                )),
                completed_at: Some(prev.completed_at.clone().unwrap_or_else(|| obs.now.clone())),
                ..base
            };
        }
        wake_in = u64::try_from(left).ok().map(std::time::Duration::from_secs);
    }
    if waiting.is_none() {
        wake_in = podless_look(job, obs).or(wake_in);
    }
    // A started pod whose node went silent: said, and never timed out as
    // a start (the program did start).
    let waiting = waiting.or_else(|| {
        let lost = observe::newest(obs.pods).and_then(observe::node_unreachable)?;
        Some((Reason::NodeUnreachable, lost))
    });
    Facts {
        phase: Some(Phase::Running),
        reason: waiting.as_ref().map(|w| w.0),
        message: waiting.as_ref().map(|w| w.1.clone()),
        waiting,
        wake_in,
        ..base
    }
}

/// The Job succeeded: Completed with the accepted result, unless it is too
/// large or missing.
fn succeeded(accepted: Result<TaskResult, String>, base: Facts) -> Facts {
    match accepted {
        Ok(r) if r.too_large() => Facts {
            phase: Some(Phase::Failed),
            reason: Some(Reason::ResultTooLarge),
            message: Some(r.too_large_message()),
            exit_code: Some(r.exit_code),
            ..base
        },
        Ok(r) => Facts {
            phase: Some(Phase::Completed),
            reason: Some(Reason::Succeeded),
            message: Some(format!(
                "{}{}",
                if r.message.is_empty() {
                    "the program succeeded"
                } else {
                    &r.message
                },
                binary_note(&r)
            )),
            exit_code: Some(r.exit_code),
            result: Some(r.text()),
            ..base
        },
        Err(why) => Facts {
            phase: Some(Phase::Failed),
            reason: Some(Reason::ResultMissing),
            message: Some(format!("the Job succeeded but {why}")),
            ..base
        },
    }
}

/// The Job failed (condition `cond`): Failed, the reason from the Job's,
/// the message from the last attempt's result or what the runtime said.
fn job_failed(
    task: &Task,
    cond: &JobCondition,
    accepted: Result<TaskResult, String>,
    obs: &Observed<'_>,
    base: Facts,
) -> Facts {
    let reason = observe::failure_reason(
        cond.reason.as_deref(),
        !task.spec.fail_on_exit_codes.is_empty(),
    );
    let (result, worker_msg, exit_code) = match &accepted {
        Ok(r) => (
            (!r.too_large()).then(|| r.text()),
            r.message.clone(),
            Some(r.exit_code),
        ),
        Err(_) => (
            None,
            String::new(),
            base.exit_code
                .or_else(|| policy_exit_code(cond.message.as_deref())),
        ),
    };
    let mut code = observe::describe_exit(exit_code);
    if accepted.is_err()
        && let Some(note) = observe::termination_note(obs.pods)
    {
        // The program never ran (or the runtime killed it): say what the
        // runtime said, not only "128".
        code = format!("{code} ({note})");
    }
    let attempts = base.attempts.unwrap_or(1);
    let mut message = failure_message(task, cond, reason, (exit_code, &code), attempts);
    if !worker_msg.is_empty() {
        message = format!("{message}: {worker_msg}");
    }
    if let (Ok(r), Some(_)) = (&accepted, &result) {
        message.push_str(&binary_note(r));
    }
    Facts {
        phase: Some(Phase::Failed),
        reason: Some(reason),
        message: Some(message),
        exit_code,
        result,
        ..base
    }
}

/// What a failed Task says for `reason`, with its last exit code (as a
/// number and described) and attempts.
fn failure_message(
    task: &Task,
    cond: &JobCondition,
    reason: Reason,
    (exit_code, code): (Option<i32>, &str),
    attempts: i32,
) -> String {
    match reason {
        Reason::DeadlineExceeded => format!(
            "the Task ran longer than spec.timeoutSeconds ({}s) and was stopped; last exit code {code}",
            task.spec.timeout_seconds.unwrap_or_default()
        ),
        Reason::BackoffLimitExceeded => format!(
            "the program failed on all {attempts} attempts (spec.retries: {}); last exit code {code}",
            task.spec.retries
        ),
        Reason::FailOnExitCode => fail_on_exit_code_message(task, exit_code, attempts),
        _ => format!(
            "the Job failed ({}): {}; last exit code {code}",
            cond.reason.as_deref().unwrap_or("no reason"),
            cond.message.as_deref().unwrap_or("no message")
        ),
    }
}

/// What a Task failed by `spec.failOnExitCodes` says: the exit code, the
/// rule, and that no retry was used.
pub fn fail_on_exit_code_message(task: &Task, exit_code: Option<i32>, attempts: i32) -> String {
    format!(
        "the program exited with code {}, which spec.failOnExitCodes lists: failed at once \
         without retrying (attempt {attempts}; spec.retries: {})",
        observe::describe_exit(exit_code),
        task.spec.retries
    )
}

/// The exit code in the Job controller's podFailurePolicy message
/// ("Container worker for pod ns/p failed with exit code 3 matching FailJob
/// rule at index 1"), for when neither a result nor a pod says it.
fn policy_exit_code(message: Option<&str>) -> Option<i32> {
    let rest = message?.split_once("with exit code ")?.1;
    rest.split_whitespace().next()?.parse().ok()
}

/// `spec.cancel` on an unfinished Job: Running until the Job is suspended
/// and its pods are gone, then Failed Cancelled with whatever result the
/// worker wrote after the program got SIGTERM.
fn cancelling(
    prev: &TaskStatus,
    job: &Job,
    obs: &Observed<'_>,
    accepted: Result<TaskResult, String>,
    base: Facts,
) -> Facts {
    // The pod was still waiting to start when the Job was suspended: the
    // last status said why it waited (kept while the cancel goes on).
    let waited = prev
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::Waiting.as_str() && c.status == "True");
    let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    let for_good = kueue::stopped_for_good(obs.kueue);
    if !suspended || observe::live_pods(obs.pods) > 0 || !for_good {
        let how = match obs.kueue {
            Some(kueue::Seen::NoWorkload) => {
                "cancelling: waiting for Kueue's Workload of the Job, to deactivate it"
            }
            Some(_) => {
                "cancelling: Kueue's Workload is deactivated, so Kueue suspends the Job for good \
                 and its pod gets SIGTERM"
            }
            None => "cancelling: the Job is suspended and its pod gets SIGTERM",
        };
        return Facts {
            phase: Some(Phase::Running),
            message: Some(how.to_owned()),
            // A reason outside the vocabulary (not written by this
            // operator) is not kept.
            waiting: waited.and_then(|w| Some((w.reason.parse().ok()?, w.message.clone()))),
            ..base
        };
    }
    cancelled(waited, obs, accepted, base)
}

/// The cancel is done (the Job is suspended, its pods are gone): Failed
/// Cancelled with whatever result the worker wrote; `waited` is the
/// Waiting condition the last status had, if any.
fn cancelled(
    waited: Option<&Condition>,
    obs: &Observed<'_>,
    accepted: Result<TaskResult, String>,
    base: Facts,
) -> Facts {
    let (result, exit_code, worker_msg, note) = match accepted {
        Ok(r) if !r.too_large() => (
            Some(r.text()),
            Some(r.exit_code),
            r.message.clone(),
            binary_note(&r),
        ),
        Ok(r) => (None, Some(r.exit_code), r.message, String::new()),
        Err(_) => (None, base.exit_code, String::new(), String::new()),
    };
    let mut message = cancelled_message(waited, exit_code, result.is_some());
    if !worker_msg.is_empty() {
        message = format!("{message}: {worker_msg}");
    }
    message.push_str(&note);
    Facts {
        phase: Some(Phase::Failed),
        reason: Some(Reason::Cancelled),
        message: Some(message),
        exit_code,
        result,
        completed_at: Some(obs.now.clone()),
        ..base
    }
}

/// What a finished cancel says: that the pod never ran, or how the program
/// exited and whether it wrote a result.
fn cancelled_message(
    waited: Option<&Condition>,
    exit_code: Option<i32>,
    has_result: bool,
) -> String {
    // No exit code and no result from a pod that was waiting: it never ran.
    match waited {
        Some(w) if exit_code.is_none() && !has_result => format!(
            "cancelled (spec.cancel) before the program started: its pod never ran (it was \
             waiting: {}: {}); nothing ran",
            w.reason, w.message
        ),
        _ => {
            let mut m = format!(
                "cancelled (spec.cancel): the program was stopped with SIGTERM; exit code {}",
                observe::describe_exit(exit_code)
            );
            if !has_result {
                m.push_str("; it wrote no result");
            }
            m
        }
    }
}

/// Said of a result that is not UTF-8, whose status copy is lossy.
fn binary_note(r: &TaskResult) -> String {
    if r.is_text() {
        return String::new();
    }
    format!(
        "; the result is binary ({} bytes, not UTF-8): status.result shows it with invalid \
         bytes as U+FFFD, the result ConfigMap holds it whole (binaryData.resultGzip)",
        r.result.len()
    )
}

/// When to look again at a running, unsuspended Job that has no pod and no
/// refusal on record: the Job controller reports a refused pod only as an
/// Event, whose watch wakes the Task; this look is the fallback for one
/// the watch missed (the refusal cache full, a relist under way), so it
/// is seen before the next periodic requeue (minutes). Half the Job's age,
/// 2 to 60 seconds: a backoff kept in no memory, and nothing at all once a
/// pod exists. A look lists no Events.
fn podless_look(job: &Job, obs: &Observed<'_>) -> Option<std::time::Duration> {
    let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    let active = job.status.as_ref().and_then(|s| s.active).unwrap_or(0);
    if suspended || active > 0 || !obs.pods.is_empty() {
        return None;
    }
    let since = job.metadata.creation_timestamp.as_ref().unwrap_or(&obs.now);
    let age = obs.now.0.as_second().saturating_sub(since.0.as_second());
    let secs = u64::try_from(age / 2).unwrap_or(0).clamp(2, 60);
    Some(std::time::Duration::from_secs(secs))
}

/// Cancelled before the Job was created: nothing ran.
pub fn cancelled_unstarted(prev: &TaskStatus, now: &Time) -> Facts {
    Facts {
        phase: Some(Phase::Failed),
        reason: Some(Reason::Cancelled),
        message: Some("cancelled (spec.cancel) before its Job was created; nothing ran".to_owned()),
        completed_at: Some(prev.completed_at.clone().unwrap_or_else(|| now.clone())),
        ..carry(prev)
    }
}

/// Someone else (e.g. Kueue) suspended the Task's running Job: the Task is
/// Queued until the Job is resumed, with Kueue's reason and message when
/// `kueue` says where the Job stands there, else reason Suspended.
pub fn suspended(task: &Task, job: &Job, facts: Facts, kueue: Option<&kueue::Seen>) -> Facts {
    let suspend = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    // A cancel suspends the Job itself: that is no one else's suspension.
    if !suspend || task.spec.cancel || facts.phase != Some(Phase::Running) {
        return facts;
    }
    let confirmed = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Suspended" && c.status == "True")
        });
    if let Some(seen) = kueue {
        let (reason, message, look) = kueue::standing(job, seen);
        return Facts {
            phase: Some(Phase::Queued),
            reason: Some(reason),
            waiting: Some((reason, message.clone())),
            message: Some(message),
            wake_in: Some(look),
            ..facts
        };
    }
    let message = format!(
        "the Job is suspended (spec.suspend: true{}), by an admission system such as Kueue or by hand; \
         the Task runs when the Job is resumed",
        if confirmed { ", pods stopped" } else { "" }
    );
    Facts {
        phase: Some(Phase::Queued),
        reason: Some(Reason::Suspended),
        waiting: Some((Reason::Suspended, message.clone())),
        message: Some(message),
        ..facts
    }
}
