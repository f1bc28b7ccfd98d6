//! Pure: the Job that runs a Task and the objects it needs, built from the
//! Task alone (no client, no cache, nothing else of the crate: only `crds`,
//! k8s-openapi and std), so that every builder is a table-driven unit test.
//! - [`identity`]: the Task's name, namespace and UID, which everything
//!   built hangs on.
//! - [`build`]: the Job, the Task's outputs Secret, and the worker's
//!   ServiceAccount and RoleBinding.
//! - [`pod`]: the Job's pod template (the worker, an `image` Task's
//!   installer, the user's pod settings under longtask's own).
//! - [`shape`]: one pod or an Indexed Job of shards, the shard
//!   environment, and the labels copied for admission systems.

pub mod build;
pub mod identity;
pub mod pod;
pub mod shape;
#[cfg(test)]
mod tests;
