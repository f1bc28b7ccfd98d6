//! Whether a Task is still to be cancelled, for `cancel` and the web page.

use crds::Task;

/// What to say instead of cancelling: the Task finished, or is being cancelled.
pub fn already(t: &Task) -> Option<String> {
    let name = t.metadata.name.as_deref().unwrap_or_default();
    let s = t.status.as_ref();
    if let Some(p) = s.and_then(|s| s.phase).filter(|p| p.is_terminal()) {
        let reason = s.and_then(|s| s.reason.as_deref()).unwrap_or_default();
        return Some(format!(
            "task/{name} already finished ({}{}{reason}): nothing to cancel",
            p.as_str(),
            if reason.is_empty() { "" } else { ", " }
        ));
    }
    t.spec
        .cancel
        .then(|| format!("task/{name} is already being cancelled"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::task;
    use crds::Phase;

    #[test]
    fn finished_or_cancelling_tasks_are_left_alone() {
        let done = task("d")
            .phase(Phase::Completed)
            .reason("Succeeded", "")
            .build();
        assert_eq!(
            already(&done).as_deref(),
            Some("task/d already finished (Completed, Succeeded): nothing to cancel")
        );
        let mut c = task("c").phase(Phase::Running).build();
        c.spec.cancel = true;
        assert!(already(&c).is_some_and(|l| l.contains("already being cancelled")));
        assert_eq!(already(&task("r").phase(Phase::Running).build()), None);
        assert_eq!(already(&task("n").build()), None);
    }
}
