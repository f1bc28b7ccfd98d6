//! `kubectl longtask cancel NAME...`: sets spec.cancel (merge patch), the
//! one spec field that may change. A finished Task is reported, not an
//! error; every name is tried, and the command fails if any failed.

use crds::Task;
use kube::api::{Patch, PatchParams};

use crate::cli::NamesArg;
use crate::client::{Error, Kube};

pub async fn run(k: &Kube, a: NamesArg) -> Result<(), Error> {
    if let [name] = a.names.as_slice() {
        return cancel(k, name).await;
    }
    let mut all_ok = true;
    for name in &a.names {
        if let Err(e) = cancel(k, name).await {
            crate::print::note!("error: {e}");
            all_ok = false;
        }
    }
    if all_ok { Ok(()) } else { Err(Error::Exit(1)) }
}

async fn cancel(k: &Kube, name: &str) -> Result<(), Error> {
    let t = k.task(name).await?;
    if let Some(line) = already(&t) {
        crate::print::out(format!("{line}\n"))?;
        return Ok(());
    }
    let patch = serde_json::json!({ "spec": { "cancel": true } });
    k.tasks()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::api("patch", "tasks", &k.namespace, Some(name), e))?;
    crate::print::out(format!("task/{name} cancelled\n"))?;
    Ok(())
}

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
