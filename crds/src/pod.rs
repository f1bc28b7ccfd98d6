//! Where and how a Task's pod runs: `spec.podTemplate`, a documented subset
//! of the core/v1 PodSpec. What longtask owns (restartPolicy, init
//! containers, the work volume, the identity environment) is not in it, so
//! `kubectl apply` refuses those as unknown fields; the rules in
//! `crate::rules` refuse the names longtask reserves inside it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, LocalObjectReference, PodSecurityContext, Toleration, TopologySpreadConstraint,
    Volume,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pod of a Task: placement (nodeSelector, tolerations, affinity,
/// topologySpreadConstraints, priorityClassName, runtimeClassName), identity
/// (serviceAccountName, imagePullSecrets), data (volumes, mounted with
/// `spec.volumeMounts`), the pod securityContext, and labels and
/// annotations. Each field is the PodSpec field of the same name; longtask
/// sets restartPolicy, the init container that installs the worker, the
/// work volume `longtask` and the LONGTASK_* environment itself.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplate {
    /// Labels and annotations added to the pod (and only the pod). Keys
    /// under longtask.dev/, batch.kubernetes.io/ and the Job controller's
    /// job-name and controller-uid are longtask's and the Job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<PodMetadata>,

    /// Only nodes with all these labels run the pod (PodSpec nodeSelector).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,

    /// Taints the pod tolerates (PodSpec tolerations), e.g. a GPU pool's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,

    /// Node and pod affinity and anti-affinity (PodSpec affinity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,

    /// How the pods of many Tasks spread over zones or nodes (PodSpec
    /// topologySpreadConstraints).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,

    /// The pod's PriorityClass (scheduling and preemption by the cluster;
    /// `spec.priority` orders longtask's own queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,

    /// The RuntimeClass the pod runs with (e.g. gVisor, Kata, nvidia).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class_name: Option<String>,

    /// Secrets holding the credentials to pull `spec.image`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,

    /// The ServiceAccount the pod runs as, so that the program has its
    /// rights (e.g. a cloud identity through workload identity). longtask
    /// makes it a worker account of the Task's namespace: a subject of the
    /// RoleBinding longtask-worker (ClusterRole longtask-worker), and the
    /// admission policies then limit the account's ConfigMap writes in that
    /// namespace to results of its own Tasks' pods (its other rights stay as
    /// they are). The account must exist. Default: longtask-worker, which
    /// has no other rights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub service_account_name: Option<String>,

    /// Volumes of the pod (core/v1 Volume: configMap, secret,
    /// persistentVolumeClaim, emptyDir, projected, ...), mounted into the
    /// program's container by `spec.volumeMounts`. The name `longtask` is
    /// the work volume's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,

    /// The pod's securityContext, merged over longtask's defaults field by
    /// field. The defaults meet the restricted Pod Security Standard:
    /// runAsNonRoot, runAsUser, runAsGroup and fsGroup 65532, seccomp
    /// RuntimeDefault. Set runAsUser and runAsGroup to run as your own uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
}

/// Labels and annotations of a Task's pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PodMetadata {
    /// Labels added to the pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations added to the pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// When the kubelet pulls `spec.image`: Always, IfNotPresent or Never (the
/// container's imagePullPolicy). Only with `image`. Default: Kubernetes'
/// (Always for a :latest or untagged image, else IfNotPresent).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PullPolicy {
    /// Pull on every start.
    Always,
    /// Pull when the node does not have the image yet.
    IfNotPresent,
    /// Never pull: the node must have the image.
    Never,
}

impl PullPolicy {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PullPolicy::Always => "Always",
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Never => "Never",
        }
    }
}
