//! The longtask API: the `Task` custom resource and every name, label,
//! environment variable, condition, reason and result key that the operator,
//! the worker and the manifests share.

pub mod bounds;
pub mod conditions;
pub mod names;
pub mod pod;
pub mod progress;
pub mod result;
pub mod rules;
pub mod task;

pub use conditions::{ConditionType, Reason};
pub use pod::{PodMetadata, PodTemplate, PullPolicy};
pub use task::{
    Disruption, Phase, ShardCounts, ShardResult, Task, TaskProgress, TaskSpec, TaskStatus,
};

use kube::CustomResourceExt;

/// The CRD as YAML, exactly as `crdgen` prints it and `manifests/crd.yaml` holds it.
pub fn crd_yaml() -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(&Task::crd())
}
