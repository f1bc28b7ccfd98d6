//! Waiting for a Task to finish, and what its end means for the exit code.

use std::time::Duration;

use crds::{Phase, Task};
use kube::runtime::wait::await_condition;

use crate::client::{Error, Kube};

/// Exit code when `--timeout` runs out first (as `timeout(1)`).
pub const TIMED_OUT: i32 = 124;

/// True once the Task is Completed or Failed.
pub fn finished(t: &Task) -> bool {
    t.status
        .as_ref()
        .and_then(|s| s.phase)
        .is_some_and(|p| p.is_terminal())
}

/// Waits until Task `name` is finished (or `timeout` passes: `Exit(124)`).
pub async fn until_finished(
    k: &Kube,
    name: &str,
    timeout: Option<Duration>,
) -> Result<Task, Error> {
    // Say at once whether it exists (and whether longtask is installed).
    let now = k.task(name).await?;
    if finished(&now) {
        return Ok(now);
    }
    let cond = await_condition(k.tasks(), name, |t: Option<&Task>| t.is_none_or(finished));
    let waited = match timeout {
        Some(d) => tokio::time::timeout(d, cond).await.map_err(|_| {
            eprintln!("timed out after {}s waiting for task {name}", d.as_secs());
            Error::Exit(TIMED_OUT)
        })?,
        None => cond.await,
    };
    match waited {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(Error::Usage(format!(
            "task {name} was deleted while waiting for it"
        ))),
        Err(e) => Err(Error::Usage(format!("cannot watch task {name}: {e}"))),
    }
}

/// 0 for Completed; for Failed the program's exit code when it is one
/// (1..=255), else 1.
pub fn exit_code(t: &Task) -> i32 {
    let Some(s) = t.status.as_ref() else { return 1 };
    match s.phase {
        Some(Phase::Completed) => 0,
        _ => s.exit_code.filter(|c| (1..=255).contains(c)).unwrap_or(1),
    }
}

/// One line on stderr saying how the Task ended, and on stdout its result
/// as the status holds it (use `result` for the exact bytes).
pub fn report(t: &Task) -> std::io::Result<()> {
    let name = t.metadata.name.as_deref().unwrap_or_default();
    let s = t.status.clone().unwrap_or_default();
    let phase = s.phase.map(|p| p.as_str()).unwrap_or("Unknown");
    let reason = s.reason.unwrap_or_default();
    let message = s.message.unwrap_or_default();
    eprintln!("task {name} {phase} ({reason}): {message}");
    if let Some(r) = s.result.filter(|r| !r.is_empty()) {
        crate::out(&r)?;
        if !r.ends_with('\n') {
            crate::out("\n")?;
        }
    }
    Ok(())
}

/// Waits for `name`, reports it, and turns its end into the exit code.
pub async fn wait_and_report(k: &Kube, name: &str, timeout: Option<Duration>) -> Result<(), Error> {
    let t = until_finished(k, name, timeout).await?;
    report(&t)?;
    match exit_code(&t) {
        0 => Ok(()),
        c => Err(Error::Exit(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::TaskStatus;

    fn with(phase: Phase, code: Option<i32>) -> Task {
        let mut t: Task = serde_json::from_value(serde_json::json!({
            "apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
            "metadata": {"name": "t"}, "spec": {"command": ["true"]}
        }))
        .expect("task");
        t.status = Some(TaskStatus {
            phase: Some(phase),
            exit_code: code,
            ..TaskStatus::default()
        });
        t
    }

    #[test]
    fn exit_codes_follow_the_end() {
        assert_eq!(exit_code(&with(Phase::Completed, Some(0))), 0);
        assert_eq!(exit_code(&with(Phase::Failed, Some(3))), 3);
        assert_eq!(exit_code(&with(Phase::Failed, None)), 1);
        assert_eq!(
            exit_code(&with(Phase::Failed, Some(0))),
            1,
            "a failure never exits 0"
        );
        assert_eq!(exit_code(&with(Phase::Failed, Some(300))), 1);
        assert!(finished(&with(Phase::Failed, None)));
        assert!(!finished(&with(Phase::Running, None)));
    }
}
