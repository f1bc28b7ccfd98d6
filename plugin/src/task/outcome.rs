//! Waiting for a Task to finish, and what its end means for the exit code.

use std::time::Duration;

use std::pin::pin;

use crds::{Phase, Task};
use futures::TryStreamExt;
use kube::Api;
use kube::runtime::watcher::{self, Event, ListSemantic, watcher};

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
    let cond = watch_until(k.tasks(), name, |t| t.is_none_or(finished));
    let waited = match timeout {
        Some(d) => tokio::time::timeout(d, cond).await.map_err(|_| {
            crate::print::note!("timed out after {}s waiting for task {name}", d.as_secs());
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

/// Watches Task `name` until `cond` holds for it (`None`: it is gone).
///
/// Not kube's `await_condition`: that lists with resourceVersion=0, which
/// the API server answers from its watch cache, and right after a create
/// (`run --wait`, or a script's create then `wait`) a busy server's cache
/// may not hold the Task yet: the wait took it for deleted. A most-recent
/// list is a consistent read (`kubectl wait` has the same race: it lists
/// with resourceVersion=0 after its GET and answers NotFound).
async fn watch_until(
    api: Api<Task>,
    name: &str,
    cond: impl Fn(Option<&Task>) -> bool,
) -> Result<Option<Task>, watcher::Error> {
    let config = watcher::Config::default()
        .fields(&format!("metadata.name={name}"))
        .list_semantic(ListSemantic::MostRecent);
    let mut events = pin!(watcher(api, config));
    let mut seen = false;
    while let Some(event) = events.try_next().await? {
        if let Some(now) = observe(&mut seen, event)
            && cond(now.as_ref())
        {
            return Ok(now);
        }
    }
    unreachable!("a watcher stream does not end")
}

/// What one watch event says of the watched Task: `Some(Some)` it is
/// there, `Some(None)` it is gone (deleted, or absent from a whole list),
/// `None` nothing yet. `seen`: whether the list under way held it.
fn observe(seen: &mut bool, event: Event<Task>) -> Option<Option<Task>> {
    match event {
        Event::Init => {
            *seen = false;
            None
        }
        Event::InitApply(t) => {
            *seen = true;
            Some(Some(t))
        }
        Event::InitDone => (!*seen).then_some(None),
        Event::Apply(t) => Some(Some(t)),
        Event::Delete(_) => Some(None),
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
    crate::print::note!("task {name} {phase} ({reason}): {message}");
    if let Some(r) = s.result.filter(|r| !r.is_empty()) {
        crate::print::out_data(r.as_bytes())?;
        if !r.ends_with('\n') {
            crate::print::out("\n")?;
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

    #[test]
    fn a_list_without_the_task_means_it_is_gone() {
        let t = with(Phase::Running, None);
        let mut seen = false;
        assert!(observe(&mut seen, Event::Init).is_none());
        assert!(observe(&mut seen, Event::InitApply(t.clone())).is_some_and(|o| o.is_some()));
        assert!(
            observe(&mut seen, Event::InitDone).is_none(),
            "listed: no news"
        );
        // A relist (after the watch expired) that no longer holds it.
        assert!(observe(&mut seen, Event::Init).is_none());
        assert!(observe(&mut seen, Event::InitDone).is_some_and(|o| o.is_none()));
        assert!(observe(&mut seen, Event::Apply(t.clone())).is_some_and(|o| o.is_some()));
        assert!(observe(&mut seen, Event::Delete(t)).is_some_and(|o| o.is_none()));
    }

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
