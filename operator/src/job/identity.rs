//! Pure: the Task's identity as stored by the API server, what every built
//! object hangs on.

use crds::Task;

/// The Task's name, namespace and UID, which everything else hangs on.
pub struct Identity<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
}

/// Reads the identity of a Task as stored by the API server.
pub fn identity(task: &Task) -> Result<Identity<'_>, BuildError> {
    let m = &task.metadata;
    Ok(Identity {
        name: m
            .name
            .as_deref()
            .ok_or(BuildError::MissingMetadata("name"))?,
        namespace: m
            .namespace
            .as_deref()
            .ok_or(BuildError::MissingMetadata("namespace"))?,
        uid: m.uid.as_deref().ok_or(BuildError::MissingMetadata("uid"))?,
    })
}

/// Failures of the pure Job builder .
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("Task has no metadata.{0} (not read from the API server?)")]
    MissingMetadata(&'static str),
}
