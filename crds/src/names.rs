//! Names both binaries and the manifests agree on: API identity, labels,
//! environment variables, field managers, service accounts.

/// API group of the `Task` resource.
pub const GROUP: &str = "longtask.dev";
/// The prefix of longtask's own label and annotation keys.
pub const GROUP_PREFIX: &str = "longtask.dev/";
/// API version of the `Task` resource.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` string of the `Task` resource.
pub const API_VERSION: &str = "longtask.dev/v1alpha1";
/// Kind of the `Task` resource.
pub const KIND: &str = "Task";
/// Plural resource name.
pub const PLURAL: &str = "tasks";
/// `kubectl` short name.
pub const SHORT_NAME: &str = "lt";
/// Kind of the `CronTask` resource.
pub const CRON_KIND: &str = "CronTask";
/// Plural of the `CronTask` resource.
pub const CRON_PLURAL: &str = "crontasks";

/// Longest Task name we accept: the Job takes the Task's name, and the Job
/// controller copies it into a label value, which is limited to 63 characters.
pub const MAX_NAME_LEN: usize = 63;

/// Namespaces where no Task runs and the operator writes nothing but a
/// Task's status and Events (the admission policy
/// `longtask-operator-system-namespaces` refuses the rest).
pub const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// Field manager of every write the operator makes.
pub const OPERATOR_FIELD_MANAGER: &str = "longtask.dev/operator";
/// Field manager of the worker's result ConfigMap writes.
pub const WORKER_FIELD_MANAGER: &str = "longtask.dev/worker";

/// ServiceAccount (per namespace) that worker pods run as.
pub const WORKER_SERVICE_ACCOUNT: &str = "longtask-worker";
/// RoleBinding (per namespace) granting the worker ClusterRole to that account.
pub const WORKER_ROLE_BINDING: &str = "longtask-worker";
/// ClusterRole with the worker's rights (configmaps create/update).
pub const WORKER_CLUSTER_ROLE: &str = "longtask-worker";
/// Name of the program's container in every Task's Job.
pub const WORKER_CONTAINER: &str = "worker";
/// Name of the init container that copies the worker binary into a pod
/// whose Task names its own `image`.
pub const INSTALL_CONTAINER: &str = "install-worker";
/// Name of the volume the worker binary is copied into (`image` Tasks).
pub const BIN_VOLUME: &str = "longtask-bin";
/// Where that volume is mounted (read-only in the program's container).
pub const BIN_DIR: &str = "/longtask-bin";
/// The worker binary's file name in [`BIN_DIR`] and in the worker image.
pub const WORKER_BINARY: &str = "longtask-worker";
/// Name of the scratch volume mounted at [`WORK_DIR`].
pub const WORK_VOLUME: &str = "longtask";
/// Mount path of the per-pod scratch volume (an `emptyDir` in real clusters).
pub const WORK_DIR: &str = "/longtask";

/// Labels the operator puts on Jobs, pods and the worker on result ConfigMaps
/// (and the plugin on the Tasks it reruns).
pub mod labels {
    /// Name of the owning Task (Job and pod template).
    pub const TASK_NAME: &str = "longtask.dev/task-name";
    /// UID of the owning Task (Job, pod template, result ConfigMap).
    pub const TASK_UID: &str = "longtask.dev/task-uid";
    /// UID of the Job that produced a result (result ConfigMap).
    pub const JOB_UID: &str = "longtask.dev/job-uid";
    /// Label the Job controller puts on its pods, carrying the Job's UID.
    pub const JOB_CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
    /// On a Task made by `kubectl longtask rerun`: the name of the Task it
    /// was made from.
    pub const RERUN_OF: &str = "longtask.dev/rerun-of";
    /// On a CronTask's run: the CronTask's name.
    pub const CRON_TASK: &str = "longtask.dev/crontask";
    /// Shard index of a sharded Task's result ConfigMap.
    pub const SHARD: &str = "longtask.dev/shard";
    /// Labels with this prefix on a Task are copied to its Job, so an
    /// admission system such as Kueue (`kueue.x-k8s.io/queue-name`) can manage it.
    pub const KUEUE_PREFIX: &str = "kueue.x-k8s.io/";
    /// The Kueue label that puts a Job under Kueue: the LocalQueue's name.
    pub const KUEUE_QUEUE_NAME: &str = "kueue.x-k8s.io/queue-name";
    /// The label Kueue puts on a Job's Workload: the Job's UID.
    pub const KUEUE_JOB_UID: &str = "kueue.x-k8s.io/job-uid";
    /// Standard `managed-by` label for objects the operator owns.
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    /// Value of [`MANAGED_BY`].
    pub const MANAGED_BY_VALUE: &str = "longtask-operator";
}

/// Annotations the operator reads.
pub mod annotations {
    /// On a result ConfigMap: the name of the pod whose worker wrote it. The
    /// admission policy `longtask-worker-results` makes every worker write
    /// set it to the pod its bound token names, and `longtask-result-stamps`
    /// keeps anyone else from setting or changing it.
    pub const WRITER_POD: &str = "longtask.dev/writer-pod";
    /// On a result ConfigMap: the UID of that pod (from the same token).
    pub const WRITER_POD_UID: &str = "longtask.dev/writer-pod-uid";
    /// On a ServiceAccount, set to `"true"` by someone who may update the
    /// namespace's ServiceAccounts: Tasks may run as it
    /// (`spec.podTemplate.serviceAccountName`), which makes it a worker
    /// account while they run. Without it such a Task is refused.
    pub const WORKER_ACCOUNT: &str = "longtask.dev/worker";
    /// On a CronTask's run: the time it was scheduled for (RFC 3339, UTC).
    pub const SCHEDULED_AT: &str = "longtask.dev/scheduled-at";
    /// On a CronTask's run: `scheduled`, or `manual` for one started by
    /// `kubectl longtask trigger`.
    pub const RUN: &str = "longtask.dev/run";
    /// On a Namespace: at most this many of its Tasks have a Job at once.
    pub const MAX_ACTIVE_TASKS: &str = "longtask.dev/max-active-tasks";
    /// On a Namespace: seconds after a Task finishes before it is deleted,
    /// for its Tasks without `spec.deleteAfterSeconds`.
    pub const DELETE_FINISHED_AFTER: &str = "longtask.dev/delete-finished-after";
    /// On a Namespace: keep only this many finished Tasks (the newest by
    /// finish time); older ones are deleted with their Jobs, pods and results.
    pub const KEEP_FINISHED: &str = "longtask.dev/keep-finished";
    /// On a Task's Job that longtask stopped because the Task ended while the
    /// Job ran (e.g. `spec.startTimeoutSeconds`): how it ended, as JSON
    /// `{"phase", "reason", "message", "at"}`, written with the stop and
    /// before the Task's status. A status write lost after the stop (a
    /// conflict, an operator killed) is then written again from it: the pods
    /// that showed why are gone by then.
    pub const ENDED: &str = "longtask.dev/ended";
    /// On an Indexed Job's pods (set by the Job controller): the completion index.
    pub const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
    /// Annotations with this prefix on a Task (Kueue's, e.g.
    /// `kueue.x-k8s.io/job-min-parallelism`) are copied to its Job.
    pub const KUEUE_PREFIX: &str = "kueue.x-k8s.io/";
    /// Kueue's ProvisioningRequest parameters, also copied to the Job.
    pub const KUEUE_PROVREQ_PREFIX: &str = "provreq.kueue.x-k8s.io/";
}

/// Environment variables of the worker container (and of the program it runs).
pub mod env {
    /// Name of the Task (set by the operator).
    pub const TASK_NAME: &str = "LONGTASK_TASK_NAME";
    /// UID of the Task (set by the operator).
    pub const TASK_UID: &str = "LONGTASK_TASK_UID";
    /// Namespace (downward API `metadata.namespace`).
    pub const NAMESPACE: &str = "LONGTASK_NAMESPACE";
    /// Pod name (downward API `metadata.name`).
    pub const POD_NAME: &str = "LONGTASK_POD_NAME";
    /// Pod UID (downward API `metadata.uid`): the worker stamps its writes with it.
    pub const POD_UID: &str = "LONGTASK_POD_UID";
    /// Job UID (downward API `metadata.labels['batch.kubernetes.io/controller-uid']`).
    pub const JOB_UID: &str = "LONGTASK_JOB_UID";
    /// Shard index, 0-based (downward API of the Job's completion index, or "0").
    pub const SHARD: &str = "LONGTASK_SHARD";
    /// Number of shards of the Task (set by the operator).
    pub const SHARDS: &str = "LONGTASK_SHARDS";
    /// Writable per-pod directory the worker keeps its files in (set by the operator).
    pub const WORK_DIR: &str = "LONGTASK_WORK_DIR";
    /// File the program may write its result to (set by the worker for the program).
    pub const RESULT: &str = "LONGTASK_RESULT";
    /// File the program may append progress lines to (set by the worker for the program).
    pub const PROGRESS: &str = "LONGTASK_PROGRESS";
    /// Directory whose files are uploaded to the Task's output store when
    /// the program ends (set by the worker, only when a store applies).
    pub const OUTPUTS: &str = "LONGTASK_OUTPUTS";
    /// The Task's upload grant, JSON (set by the operator from the Secret
    /// `<task>-outputs` by a `secretKeyRef`, only when a store applies; the
    /// worker reads it and removes it from the program's environment).
    pub const UPLOAD_GRANT: &str = "LONGTASK_UPLOAD_GRANT";
    /// Prefix reserved for longtask; Task env entries may not use it.
    pub const RESERVED_PREFIX: &str = "LONGTASK_";
    /// Operator: at most this many Tasks have a Job at once.
    pub const MAX_ACTIVE_TASKS: &str = "LONGTASK_MAX_ACTIVE_TASKS";
    /// Operator: the worker image reference.
    pub const WORKER_IMAGE: &str = "LONGTASK_WORKER_IMAGE";
}
