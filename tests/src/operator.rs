//! The operator Deployment as the cases see it: who leads, its pods.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::{Cluster, SYSTEM_NS};

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

/// The pod that holds the leader Lease.
pub async fn leader_pod(c: &Cluster) -> Result<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(name) = leader(&c.client).await?.0 {
            return Ok(name);
        }
        ensure!(Instant::now() < deadline, "no leader within 60 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Scrapes the pod's /metrics through the API server's pod proxy; where the
/// API server refuses to proxy to the pod's address (the devcluster's pod IPs
/// are loopback addresses, which kube-apiserver does not proxy to), directly
/// from the pod's IP on this host.
pub async fn scrape(c: &Cluster, pod: &str) -> Result<Vec<crate::openmetrics::Family>> {
    let path = format!("/api/v1/namespaces/{SYSTEM_NS}/pods/{pod}:8080/proxy/metrics");
    let text = match c.kubectl.run(&["get", "--raw", &path]) {
        Ok(t) => t,
        Err(e) if format!("{e:#}").contains("address not allowed") => {
            let api: Api<Pod> = Api::namespaced(c.client.clone(), SYSTEM_NS);
            let ip = api
                .get(pod)
                .await?
                .status
                .and_then(|s| s.pod_ip)
                .context("operator pod without IP")?;
            http_get(&format!("{ip}:8080"), "/metrics").await?
        }
        Err(e) => return Err(e),
    };
    crate::openmetrics::parse(&text).with_context(|| format!("/metrics of {pod}:\n{text}"))
}

/// A plain HTTP/1.1 GET; the body of a 200 answer.
async fn http_get(addr: &str, path: &str) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(addr).await?;
    sock.write_all(
        format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), sock.read_to_end(&mut buf)).await??;
    let text = String::from_utf8(buf)?;
    let (head, body) = text.split_once("\r\n\r\n").context("no HTTP header end")?;
    ensure!(head.starts_with("HTTP/1.1 200"), "GET {path}: {head}");
    ensure!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "GET {path}: not OpenMetrics: {head}"
    );
    Ok(body.to_owned())
}
