//! `kubectl longtask cancel NAME...`: sets spec.cancel (merge patch), the
//! one spec field that may change. A finished Task is reported, not an
//! error; every name is tried, and the command fails if any failed.

use kube::api::{Patch, PatchParams};

use crate::cli::NamesArg;
use crate::client::{Error, Kube};
use crate::task::cancel::already;

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
