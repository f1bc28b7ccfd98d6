//! `kubectl longtask result -o DIR` against a real S3 store: SeaweedFS
//! (`tests/src/seaweed.rs`), the objects put by its admin under a Task's
//! key prefix, the download links presigned by longtask-store as the
//! operator presigns them. The store checks each signature; the plugin
//! checks each object's size and digest.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use k8s_openapi::jiff::Timestamp;
use longtask_e2e::objects::give_outputs;
use longtask_e2e::seaweed::Seaweed;
use longtask_e2e::{Cluster, TestNs, root};
use longtask_store::presign_get;

use super::plugin_outputs::{LATER, bytes, exited, finished, plugin, same_file, scratch};

/// Every output comes back byte-exact through presigned GETs; an object
/// changed in the store afterwards is refused naming it, and a link
/// whose signature the store refuses says what the store said.
pub async fn plugin_result_from_seaweedfs(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ensure!(
        Seaweed::installed(),
        "{} is missing: run tools/seaweedfs/install",
        Seaweed::weed().display()
    );
    longtask_store::install_crypto_provider();
    let data = root().join("target/e2e-seaweed").join(&ns.name);
    let store = Seaweed::start(&data).await?;
    let admin = store.client();
    let model = bytes(4 * 1024 * 1024 + 9, 7);
    let plot = bytes(1000, 8);
    let listed: [(&str, &[u8]); 2] = [("model.bin", &model), ("plots/loss.png", &plot)];
    let key = |name: &str| format!("lt/{}/train/uid/{name}", ns.name);
    for (name, data) in &listed {
        admin.put(&key(name), data.to_vec().into()).await?;
    }
    finished(&ns, "train").await?;
    let (bucket, creds) = (store.bucket(), store.admin());
    let hour = Duration::from_secs(3600);
    let link = |name: &str| presign_get(&bucket, &creds, &key(name), Timestamp::now(), hour);
    give_outputs(&ns, "train", &listed, &link, LATER)?;

    let dir = scratch(&ns, "s3")?;
    let d = dir.to_str().unwrap_or_default();
    let out = plugin(&ns, &["result", "train", "-o", d])?;
    exited(&out, 0, "result -o DIR from SeaweedFS")?;
    for (name, data) in &listed {
        same_file(&dir.join(name), data)?;
    }

    admin
        .put(&key("plots/loss.png"), bytes(1000, 9).into())
        .await?;
    let again = scratch(&ns, "s3-changed")?;
    let a = again.to_str().unwrap_or_default();
    let out = plugin(
        &ns,
        &["result", "train", "-o", a, "--file", "plots/loss.png"],
    )?;
    exited(&out, 1, "an object changed in the store")?;
    ensure!(
        out.stderr
            .contains("cannot download output \"plots/loss.png\"")
            && out.stderr.contains("sha256"),
        "{out}"
    );
    ensure!(
        !again.join("plots/loss.png").exists(),
        "the changed object was kept"
    );

    // The same link with its signature zeroed: the store must refuse it.
    let forged = |name: &str| {
        let good = link(name);
        match good.split_once("X-Amz-Signature=") {
            Some((head, sig)) => format!("{head}X-Amz-Signature={}", "0".repeat(sig.len())),
            None => good,
        }
    };
    give_outputs(&ns, "train", &listed, &forged, LATER)?;
    let out = plugin(&ns, &["result", "train", "--file", "model.bin"])?;
    exited(&out, 1, "a link the store refuses")?;
    ensure!(
        out.stderr
            .contains("the output store refused output \"model.bin\": HTTP 403"),
        "{out}"
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&data);
    Ok(())
}
