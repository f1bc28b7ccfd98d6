//! Pure: which Events a status change deserves. Publishing is in `api/mod.rs` (`api::publish`).

use crds::conditions::Reason;
use crds::{Phase, TaskStatus};

/// One Event to publish on the Task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub warning: bool,
    pub reason: EventReason,
    pub action: &'static str,
    pub message: String,
}

/// Event reasons (kept apart from status reasons, which they may carry);
/// also the `reason` label of `longtask_events`. The strings are the
/// variant names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::IntoStaticStr)]
#[strum(const_into_str)]
pub enum EventReason {
    /// The Task's Job was created.
    Started,
    /// The pod cannot start (the status reason says why).
    Waiting,
    /// A new attempt started after a failed one.
    Retrying,
    /// A pod was stopped by a disruption (preemption, eviction, node
    /// drain) and runs again without using a retry.
    Disrupted,
    /// The Task completed.
    Completed,
    /// The Task failed (the message starts with the status reason).
    Failed,
    /// The Task was cancelled.
    Cancelled,
    /// Retention deleted the finished Task (the note says by which rule).
    Deleted,
    /// A Job with the Task's name belongs to someone else.
    JobOwnedByOther,
    /// A result ConfigMap not written by this Task's current Job was ignored.
    ForeignResult,
    /// A finished Task's download URLs could not be signed or written
    /// (its store or credentials unavailable, its Secret someone else's).
    OutputsNotDownloadable,
}

impl EventReason {
    /// The reason as published on the Event.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }
}

/// The [`EventReason`]s under their former constant names, which callers
/// still use (`events::reason::FOREIGN_RESULT`).
pub mod reason {
    // By its full path: the module guard reads files, not inline modules.
    use crate::status::events::EventReason;

    pub const STARTED: EventReason = EventReason::Started;
    pub const WAITING: EventReason = EventReason::Waiting;
    pub const RETRYING: EventReason = EventReason::Retrying;
    pub const DISRUPTED: EventReason = EventReason::Disrupted;
    pub const COMPLETED: EventReason = EventReason::Completed;
    pub const FAILED: EventReason = EventReason::Failed;
    pub const CANCELLED: EventReason = EventReason::Cancelled;
    pub const DELETED: EventReason = EventReason::Deleted;
    pub const JOB_OWNED_BY_OTHER: EventReason = EventReason::JobOwnedByOther;
    pub const FOREIGN_RESULT: EventReason = EventReason::ForeignResult;
    pub const OUTPUTS_NOT_DOWNLOADABLE: EventReason = EventReason::OutputsNotDownloadable;
}

/// The Events for going from `prev` to `next`; none when nothing changed.
pub fn transitions(prev: Option<&TaskStatus>, next: &TaskStatus) -> Vec<Note> {
    let empty = TaskStatus::default();
    let prev = prev.unwrap_or(&empty);
    let mut out = Vec::new();
    let msg = next.message.clone().unwrap_or_default();
    let job = next.job_name.clone().unwrap_or_default();
    if prev.job_uid.is_none() && next.job_uid.is_some() {
        out.push(note(
            false,
            EventReason::Started,
            "CreateJob",
            format!("Job {job} runs the program"),
        ));
    }
    out.extend(disrupted(prev, next));
    let reason_changed = prev.reason != next.reason;
    let known = next.known_reason();
    match next.phase {
        Some(Phase::Running) => out.extend(running(prev, next, &msg)),
        Some(Phase::Completed) if prev.phase != next.phase => {
            out.push(note(false, EventReason::Completed, "Finish", msg));
        }
        Some(Phase::Failed) if prev.phase != next.phase => {
            if known == Some(Reason::Cancelled) {
                out.push(note(false, EventReason::Cancelled, "Cancel", msg));
            } else {
                let r = next.reason.as_deref().unwrap_or_default();
                let m = format!("{r}: {msg}");
                out.push(note(true, EventReason::Failed, "Finish", m));
            }
        }
        None if reason_changed && known == Some(Reason::JobOwnedByOther) => {
            out.push(note(true, EventReason::JobOwnedByOther, "CreateJob", msg));
        }
        _ => {}
    }
    out
}

/// The Events of a Task that is Running in `next`: its pod cannot start
/// (when that reason is new), a new attempt started. `msg` is `next`'s
/// message.
fn running(prev: &TaskStatus, next: &TaskStatus, msg: &str) -> Vec<Note> {
    let mut out = Vec::new();
    if let Some(
        r @ (Reason::Unschedulable
        | Reason::ImagePullFailed
        | Reason::CreateContainerConfigError
        | Reason::PodRefused
        | Reason::NodeUnreachable),
    ) = next.known_reason()
        && prev.reason != next.reason
    {
        out.push(note(
            true,
            EventReason::Waiting,
            "StartPod",
            format!("{r}: {msg}"),
        ));
    }
    let (before, now) = (prev.attempts.unwrap_or(0), next.attempts.unwrap_or(0));
    if now > before && now > 1 {
        let code = crate::status::observe::describe_exit(next.exit_code);
        out.push(note(
            false,
            EventReason::Retrying,
            "RetryPod",
            format!("attempt {now} started after exit code {code}"),
        ));
    }
    out
}

/// The Event of new disruptions: the newest, and how many so far.
fn disrupted(prev: &TaskStatus, next: &TaskStatus) -> Option<Note> {
    let (before, now) = (prev.disruptions.unwrap_or(0), next.disruptions.unwrap_or(0));
    if now <= before {
        return None;
    }
    let what = next.last_disruption.as_ref().map_or_else(
        || "a pod was disrupted".to_owned(),
        crate::status::disruptions::describe,
    );
    let more = match now - before {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Some(note(
        false,
        EventReason::Disrupted,
        "ReplacePod",
        format!(
            "{what}{more}; it runs again in a new pod without using a retry (disruptions so far: {now})"
        ),
    ))
}

/// A [`Note`] from its parts.
fn note(warning: bool, reason: EventReason, action: &'static str, message: String) -> Note {
    Note {
        warning,
        reason,
        action,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(phase: Option<Phase>, reason: Option<Reason>, attempts: i32) -> TaskStatus {
        TaskStatus {
            phase,
            reason: reason.map(|r| r.as_str().to_owned()),
            attempts: Some(attempts),
            job_name: Some("t".into()),
            job_uid: (phase.is_some() && reason != Some(Reason::InvalidSpec)).then(|| "u".into()),
            ..TaskStatus::default()
        }
    }

    #[test]
    fn table() {
        let running = st(Some(Phase::Running), None, 1);
        let cases: Vec<(Option<TaskStatus>, TaskStatus, Vec<EventReason>)> = vec![
            (None, running.clone(), vec![EventReason::Started]),
            (Some(running.clone()), running.clone(), vec![]),
            (
                Some(running.clone()),
                st(Some(Phase::Running), Some(Reason::ImagePullFailed), 1),
                vec![EventReason::Waiting],
            ),
            (
                Some(running.clone()),
                st(Some(Phase::Running), None, 2),
                vec![EventReason::Retrying],
            ),
            (
                Some(running.clone()),
                st(Some(Phase::Completed), Some(Reason::Succeeded), 1),
                vec![EventReason::Completed],
            ),
            (
                Some(running.clone()),
                st(Some(Phase::Failed), Some(Reason::DeadlineExceeded), 1),
                vec![EventReason::Failed],
            ),
            (
                Some(running.clone()),
                st(Some(Phase::Failed), Some(Reason::Cancelled), 1),
                vec![EventReason::Cancelled],
            ),
            (
                Some(st(Some(Phase::Running), Some(Reason::ImagePullFailed), 1)),
                st(Some(Phase::Running), Some(Reason::ImagePullFailed), 1),
                vec![],
            ),
            (
                Some(st(Some(Phase::Running), None, 2)),
                st(Some(Phase::Running), None, 2),
                vec![],
            ),
            (
                Some(st(Some(Phase::Completed), Some(Reason::Succeeded), 1)),
                st(Some(Phase::Completed), Some(Reason::Succeeded), 1),
                vec![],
            ),
            (
                Some(running.clone()),
                TaskStatus {
                    disruptions: Some(1),
                    ..running.clone()
                },
                vec![EventReason::Disrupted],
            ),
            (
                Some(TaskStatus {
                    disruptions: Some(1),
                    ..running.clone()
                }),
                TaskStatus {
                    disruptions: Some(1),
                    ..running.clone()
                },
                vec![],
            ),
            (
                Some(TaskStatus {
                    disruptions: Some(1),
                    ..running.clone()
                }),
                TaskStatus {
                    disruptions: Some(2),
                    ..st(Some(Phase::Completed), Some(Reason::Succeeded), 1)
                },
                vec![EventReason::Disrupted, EventReason::Completed],
            ),
            (
                None,
                st(None, Some(Reason::JobOwnedByOther), 0),
                vec![EventReason::JobOwnedByOther],
            ),
            (
                None,
                st(Some(Phase::Failed), Some(Reason::InvalidSpec), 0),
                vec![EventReason::Failed],
            ),
        ];
        for (i, (prev, next, want)) in cases.into_iter().enumerate() {
            let got: Vec<EventReason> = transitions(prev.as_ref(), &next)
                .iter()
                .map(|n| n.reason)
                .collect();
            assert_eq!(got, want, "case {i}");
        }
    }
}
