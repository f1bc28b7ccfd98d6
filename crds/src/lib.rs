//! The longtask API: the `Task` and `CronTask` custom resources and every name, label,
//! environment variable, condition, reason and result key that the operator,
//! the worker and the manifests share.

pub mod after;
pub mod bounds;
pub mod conditions;
pub mod cron;
pub mod names;
pub mod outputs;
pub mod pod;
pub mod progress;
pub mod result;
pub mod rules;
pub mod schedule;
pub mod task;

pub use after::{Upstream, UpstreamCondition, UpstreamSeen};
pub use conditions::{ConditionType, Reason};
pub use cron::{ConcurrencyPolicy, CronTask, CronTaskSpec, CronTaskStatus};
pub use outputs::{OutputStore, OutputStoreSpec, OutputsSpec, OutputsStatus};
pub use pod::{PodMetadata, PodTemplate, PullPolicy};
pub use task::{
    Disruption, Phase, ShardCounts, ShardResult, Task, TaskProgress, TaskSpec, TaskStatus,
};

use kube::CustomResourceExt;

/// The CRDs (Task, CronTask, then OutputStore) as YAML, exactly as `crdgen` prints
/// them and `manifests/crd.yaml` holds them.
pub fn crd_yaml() -> Result<String, serde_saphyr::SerializeError> {
    Ok(format!(
        "{}---\n{}---\n{}",
        serde_saphyr::to_string(&Task::crd())?,
        serde_saphyr::to_string(&CronTask::crd())?,
        serde_saphyr::to_string(&OutputStore::crd())?
    ))
}
