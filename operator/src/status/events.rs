//! Pure: which Events a status change deserves. Publishing is in `apply.rs`.

use crds::conditions::reasons;
use crds::{Phase, TaskStatus};

/// One Event to publish on the Task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub warning: bool,
    pub reason: &'static str,
    pub action: &'static str,
    pub message: String,
}

/// Event reasons (kept apart from status reasons, which they may carry).
pub mod reason {
    pub const STARTED: &str = "Started";
    pub const WAITING: &str = "Waiting";
    pub const RETRYING: &str = "Retrying";
    pub const COMPLETED: &str = "Completed";
    pub const FAILED: &str = "Failed";
    pub const CANCELLED: &str = "Cancelled";
    pub const JOB_OWNED_BY_OTHER: &str = "JobOwnedByOther";
    /// A result ConfigMap not written by this Task's current Job was ignored.
    pub const FOREIGN_RESULT: &str = "ForeignResult";
}

/// The Events for going from `prev` to `next`; none when nothing changed.
pub fn transitions(prev: Option<&TaskStatus>, next: &TaskStatus) -> Vec<Note> {
    let empty = TaskStatus::default();
    let prev = prev.unwrap_or(&empty);
    let mut out = Vec::new();
    let note = |warning, reason, action, message: String| Note {
        warning,
        reason,
        action,
        message,
    };
    let msg = next.message.clone().unwrap_or_default();
    let job = next.job_name.clone().unwrap_or_default();
    if prev.job_uid.is_none() && next.job_uid.is_some() {
        out.push(note(
            false,
            reason::STARTED,
            "CreateJob",
            format!("Job {job} runs the program"),
        ));
    }
    let reason_changed = prev.reason != next.reason;
    match next.phase {
        Some(Phase::Running) => {
            let waiting = matches!(
                next.reason.as_deref(),
                Some(
                    reasons::UNSCHEDULABLE
                        | reasons::IMAGE_PULL_FAILED
                        | reasons::CREATE_CONTAINER_CONFIG_ERROR
                )
            );
            if waiting && reason_changed {
                let r = next.reason.clone().unwrap_or_default();
                out.push(note(
                    true,
                    reason::WAITING,
                    "StartPod",
                    format!("{r}: {msg}"),
                ));
            }
            let (before, now) = (prev.attempts.unwrap_or(0), next.attempts.unwrap_or(0));
            if now > before && now > 1 {
                let code = crate::status::observe::describe_exit(next.exit_code);
                out.push(note(
                    false,
                    reason::RETRYING,
                    "RetryPod",
                    format!("attempt {now} started after exit code {code}"),
                ));
            }
        }
        Some(Phase::Completed) if prev.phase != next.phase => {
            out.push(note(false, reason::COMPLETED, "Finish", msg));
        }
        Some(Phase::Failed) if prev.phase != next.phase => {
            let r = next.reason.clone().unwrap_or_default();
            if r == reasons::CANCELLED {
                out.push(note(false, reason::CANCELLED, "Cancel", msg));
            } else {
                out.push(note(true, reason::FAILED, "Finish", format!("{r}: {msg}")));
            }
        }
        None if reason_changed && next.reason.as_deref() == Some(reasons::JOB_OWNED_BY_OTHER) => {
            out.push(note(true, reason::JOB_OWNED_BY_OTHER, "CreateJob", msg));
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(phase: Option<Phase>, reason: Option<&str>, attempts: i32) -> TaskStatus {
        TaskStatus {
            phase,
            reason: reason.map(str::to_owned),
            attempts: Some(attempts),
            job_name: Some("t".into()),
            job_uid: (phase.is_some() && reason != Some(reasons::INVALID_SPEC)).then(|| "u".into()),
            ..TaskStatus::default()
        }
    }

    #[test]
    fn table() {
        let running = st(Some(Phase::Running), None, 1);
        let cases: Vec<(Option<TaskStatus>, TaskStatus, Vec<&str>)> = vec![
            (None, running.clone(), vec![reason::STARTED]),
            (Some(running.clone()), running.clone(), vec![]),
            (
                Some(running.clone()),
                st(Some(Phase::Running), Some(reasons::IMAGE_PULL_FAILED), 1),
                vec![reason::WAITING],
            ),
            (
                Some(running.clone()),
                st(Some(Phase::Running), None, 2),
                vec![reason::RETRYING],
            ),
            (
                Some(running.clone()),
                st(Some(Phase::Completed), Some(reasons::SUCCEEDED), 1),
                vec![reason::COMPLETED],
            ),
            (
                Some(running.clone()),
                st(Some(Phase::Failed), Some(reasons::DEADLINE_EXCEEDED), 1),
                vec![reason::FAILED],
            ),
            (
                Some(running.clone()),
                st(Some(Phase::Failed), Some(reasons::CANCELLED), 1),
                vec![reason::CANCELLED],
            ),
            (
                Some(st(
                    Some(Phase::Running),
                    Some(reasons::IMAGE_PULL_FAILED),
                    1,
                )),
                st(Some(Phase::Running), Some(reasons::IMAGE_PULL_FAILED), 1),
                vec![],
            ),
            (
                Some(st(Some(Phase::Running), None, 2)),
                st(Some(Phase::Running), None, 2),
                vec![],
            ),
            (
                Some(st(Some(Phase::Completed), Some(reasons::SUCCEEDED), 1)),
                st(Some(Phase::Completed), Some(reasons::SUCCEEDED), 1),
                vec![],
            ),
            (
                None,
                st(None, Some(reasons::JOB_OWNED_BY_OTHER), 0),
                vec![reason::JOB_OWNED_BY_OTHER],
            ),
            (
                None,
                st(Some(Phase::Failed), Some(reasons::INVALID_SPEC), 0),
                vec![reason::FAILED],
            ),
        ];
        for (i, (prev, next, want)) in cases.into_iter().enumerate() {
            let got: Vec<&str> = transitions(prev.as_ref(), &next)
                .iter()
                .map(|n| n.reason)
                .collect();
            assert_eq!(got, want, "case {i}");
        }
    }
}
