//! A Task's key in the caches, shared by the Task-keyed indexes of this
//! folder.

use crds::Task;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

/// A Task's key in the store: its namespace and name. Not
/// `ObjectRef::from_obj`, which panics on a Task without a name and keeps
/// its resourceVersion and UID in every key.
pub fn task_key(t: &Task) -> ObjectRef<Task> {
    let key = ObjectRef::new(&t.name_any());
    match t.metadata.namespace.as_deref() {
        Some(ns) => key.within(ns),
        None => key,
    }
}
