//! The operator Deployment as the cases see it: who leads, its pods.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::SYSTEM_NS;

/// The leader-election Lease's name (in `longtask-system`).
pub const LEASE: &str = "longtask-operator";
/// Label selector of the operator's pods.
pub const SELECTOR: &str = "app.kubernetes.io/name=longtask-operator";

/// (holder, renewTime) of the Lease, if any.
pub async fn leader(client: &kube::Client) -> anyhow::Result<(Option<String>, Option<String>)> {
    let api: Api<Lease> = Api::namespaced(client.clone(), SYSTEM_NS);
    let l = api.get_opt(LEASE).await?;
    let spec = l.and_then(|l| l.spec).unwrap_or_default();
    Ok((
        spec.holder_identity.filter(|h| !h.is_empty()),
        spec.renew_time.map(|t| t.0.to_string()),
    ))
}

/// Names of the operator pods that are not being deleted.
pub async fn pods(client: &kube::Client) -> anyhow::Result<Vec<Pod>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), SYSTEM_NS);
    Ok(api
        .list(&ListParams::default().labels(SELECTOR))
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

/// Deletes every operator pod without waiting (the Deployment makes new ones).
pub fn delete_pods(kubectl: &crate::Kubectl) -> anyhow::Result<()> {
    kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "delete",
        "pod",
        "-l",
        SELECTOR,
        "--wait=false",
    ])?;
    Ok(())
}
