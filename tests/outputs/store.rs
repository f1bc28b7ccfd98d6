//! The suite's one SeaweedFS, and OutputStores pointing at it.

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use longtask_e2e::seaweed::{ADMIN_KEY, ADMIN_SECRET, BUCKET, Seaweed};
use longtask_e2e::{Cluster, TestNs};
use longtask_store::{Client, ObjectInfo};
use tokio::sync::Mutex;

static STORE: OnceLock<Mutex<Seaweed>> = OnceLock::new();
/// The Secret (in longtask-system) holding the admin's keys.
pub const SECRET: &str = "outputs-s3";

fn store() -> &'static Mutex<Seaweed> {
    STORE.get().expect("the store starts before the cases")
}

/// Starts the store, in a fresh `target/e2e-outputs-store`.
pub async fn start() -> Result<()> {
    let dir = longtask_e2e::root().join("target/e2e-outputs-store");
    let _ = std::fs::remove_dir_all(&dir);
    let s = Seaweed::start(&dir).await?;
    STORE
        .set(Mutex::new(s))
        .map_err(|_| anyhow::anyhow!("started twice"))
}

/// Stops the store for good (end of the suite).
pub fn stop() {
    if let Some(m) = STORE.get()
        && let Ok(mut s) = m.try_lock()
    {
        s.stop();
    }
}

/// Stops the store until [`restart`].
pub async fn pause() {
    store().lock().await.stop();
}

/// Starts it again on the same ports and data.
pub async fn restart() -> Result<()> {
    store().lock().await.restart().await
}

/// `http://127.0.0.1:<port>`.
pub async fn endpoint() -> String {
    store().lock().await.endpoint()
}

/// An admin client of the bucket.
pub async fn admin() -> Client {
    store().lock().await.client()
}

/// Every object under `prefix`.
pub async fn objects(prefix: &str) -> Result<Vec<ObjectInfo>> {
    Ok(admin().await.list(prefix, None).await?.objects)
}

/// Waits until nothing is left under `prefix`.
pub async fn until_empty(prefix: &str, timeout: Duration) -> Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let left = objects(prefix).await.map(|o| o.len());
        if left.as_ref().is_ok_and(|n| *n == 0) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{prefix}: still {left:?} objects after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The key prefix of a Task's objects (the store has no prefix of its own).
pub fn task_prefix(ns: &str, task: &str, uid: &str) -> String {
    crds::outputs::object_prefix("", ns, task, uid)
}

/// Makes the OutputStore `name`, for the namespace `ns` only, at this
/// store with the admin's keys (the Secret is made once), with `extra`
/// spec lines (two spaces deep) and `s3` overrides (four spaces deep).
pub async fn setup(c: &Cluster, ns: &TestNs, name: &str, extra: &str, s3: &str) -> Result<()> {
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: {SECRET}, namespace: longtask-system}}\n\
         stringData: {{accessKeyId: {ADMIN_KEY}, secretAccessKey: {ADMIN_SECRET}}}\n"
    );
    c.kubectl.stdin(&["apply", "-f", "-"], &secret)?;
    let yaml = store_yaml(name, &ns.name, &endpoint().await, BUCKET, SECRET, extra, s3);
    c.kubectl
        .stdin(&["apply", "-f", "-"], &yaml)
        .with_context(|| format!("OutputStore {name}"))?;
    Ok(())
}

/// An OutputStore manifest; `s3` lines override the defaults given.
pub fn store_yaml(
    name: &str,
    ns: &str,
    endpoint: &str,
    bucket: &str,
    secret: &str,
    extra: &str,
    s3: &str,
) -> String {
    let s3 = if s3.is_empty() {
        format!("    endpoint: {endpoint}\n    bucket: {bucket}\n    credentialsSecret: {secret}\n")
    } else {
        s3.to_owned()
    };
    format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: OutputStore\nmetadata: {{name: {name}}}\nspec:\n  s3:\n{s3}\
         \x20 namespaceSelector:\n    matchLabels: {{kubernetes.io/metadata.name: {ns}}}\n{extra}"
    )
}

/// Deletes the OutputStores named (cluster-scoped: the namespace's
/// deletion does not take them).
pub fn remove(c: &Cluster, names: &[&str]) {
    for n in names {
        let _ = c
            .kubectl
            .run(&["delete", "outputstore", n, "--ignore-not-found"]);
    }
}
