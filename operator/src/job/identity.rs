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
pub fn identity(task: &Task) -> Result<Identity<'_>, IdentityError> {
    let m = &task.metadata;
    Ok(Identity {
        name: m
            .name
            .as_deref()
            .ok_or(IdentityError::MissingMetadata("name"))?,
        namespace: m
            .namespace
            .as_deref()
            .ok_or(IdentityError::MissingMetadata("namespace"))?,
        uid: m
            .uid
            .as_deref()
            .ok_or(IdentityError::MissingMetadata("uid"))?,
    })
}

/// A Task without the identity the API server gives every stored object:
/// nothing can be built for it (the builders' only failure).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("Task has no metadata.{0} (not read from the API server?)")]
    MissingMetadata(&'static str),
}
