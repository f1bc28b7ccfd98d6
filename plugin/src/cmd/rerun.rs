//! `kubectl longtask rerun NAME [--name NEW] [--wait|--follow]`: a new Task
//! with the spec of an existing one (not cancelled), its labels, and the
//! label longtask.dev/rerun-of naming the origin. Without --name the API
//! server picks `NAME-rerun-<5 random characters>` (generateName).

use crate::cli::RerunArgs;
use crate::client::{Error, Kube};
use crate::task::rerun::build;
use crate::task::run::{create, follow_or_wait};

pub async fn run(k: &Kube, a: RerunArgs) -> Result<(), Error> {
    let origin = k.task(&a.name).await?;
    let task = build(&origin, a.new_name.as_deref());
    let name = create(k, &task).await?;
    follow_or_wait(k, &name, a.wait, a.follow).await
}
