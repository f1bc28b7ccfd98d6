//! Result sizes: results up to 1 MiB are kept whole in the ConfigMap
//! (plain up to 900 KiB of UTF-8, else gzip in binaryData) and cut to
//! 32 KiB in status (resultTruncated), with the digest of the raw bytes;
//! one byte more fails the Task with ResultTooLarge, giving the size and
//! the limit; a binary result shows lossily in status and says so.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};

const MIB: usize = 1024 * 1024;
const STATUS_CAP: usize = 32 * 1024;

/// Hex of random bytes: random-ish but compressible (to about half), cut to `len`.
fn hex_task(name: &str, len: usize) -> String {
    let script = format!(
        "head -c {} /dev/urandom | od -An -v -tx1 | tr -d ' \\n' | head -c {len} > \"$LONGTASK_RESULT\"",
        len / 2 + 16
    );
    sh_task(name, &script, "")
}

fn sha256(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The raw result the ConfigMap `<task>-result` holds, decoded here
/// independently of the operator, and its encoding.
async fn stored(ns: &TestNs, task: &str) -> Result<(Vec<u8>, String)> {
    let api: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    let cm = api.get(&format!("{task}-result")).await?;
    let data = cm.data.unwrap_or_default();
    let encoding = data.get("resultEncoding").cloned().unwrap_or_default();
    let raw = match encoding.as_str() {
        "gzip" => {
            let gz = cm
                .binary_data
                .and_then(|mut b| b.remove("resultGzip"))
                .context("no binaryData.resultGzip")?;
            let mut raw = Vec::new();
            flate2::read::GzDecoder::new(gz.0.as_slice()).read_to_end(&mut raw)?;
            raw
        }
        _ => data.get("result").cloned().unwrap_or_default().into_bytes(),
    };
    Ok((raw, encoding))
}

/// Waits for `task` to complete; checks that the ConfigMap holds `len`
/// bytes in `encoding`, status.result their first 32 KiB, and the digest.
async fn kept_whole(ns: &TestNs, task: &str, len: usize, encoding: &str) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, task, "Complete", Duration::from_secs(120)).await?;
    let st = &t["status"];
    let (raw, enc) = stored(ns, task).await?;
    ensure!(
        enc == encoding,
        "{task}: stored as {enc:?}, want {encoding:?}"
    );
    ensure!(
        raw.len() == len,
        "{task}: ConfigMap holds {} bytes",
        raw.len()
    );
    ensure!(
        st["resultDigest"].as_str() == Some(sha256(&raw).as_str()),
        "{task}: digest {} differs from the stored bytes' {}",
        st["resultDigest"],
        sha256(&raw)
    );
    ensure!(
        st["resultTruncated"] == true,
        "{task}: {}",
        st["resultTruncated"]
    );
    let shown = st["result"].as_str().unwrap_or_default().as_bytes();
    ensure!(
        shown.len() == STATUS_CAP && raw.starts_with(shown),
        "{task}: status.result is not the first 32 KiB ({} bytes)",
        shown.len()
    );
    Ok(())
}

pub async fn result_sizes(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    // 200,000 bytes: plain, over the 32 KiB status cap.
    ns.apply(&sh_task(
        "big",
        "head -c 200000 /dev/zero | tr '\\0' x > \"$LONGTASK_RESULT\"",
        "",
    ))?;
    // 1,000,000 and 1,048,576 bytes: past 900 KiB, so gzip.
    ns.apply(&hex_task("million", 1_000_000))?;
    ns.apply(&hex_task("mib", MIB))?;
    // 1 MiB + 1: too large.
    ns.apply(&hex_task("over", MIB + 1))?;
    // Not UTF-8.
    ns.apply(&sh_task(
        "binary",
        "printf 'ok\\377\\n' > \"$LONGTASK_RESULT\"",
        "",
    ))?;
    kept_whole(&ns, "big", 200_000, "plain").await?;
    kept_whole(&ns, "million", 1_000_000, "gzip").await?;
    kept_whole(&ns, "mib", MIB, "gzip").await?;

    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "over", "Failed", Duration::from_secs(120)).await?;
    let st = &t["status"];
    ensure!(st["reason"] == "ResultTooLarge", "over: {st}");
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(
        msg.contains("1048577") && msg.contains("1048576"),
        "over: {msg}"
    );

    let t = wait::condition(&api, "binary", "Complete", Duration::from_secs(120)).await?;
    let st = &t["status"];
    ensure!(st["result"] == "ok\u{FFFD}\n", "binary: {}", st["result"]);
    let (raw, enc) = stored(&ns, "binary").await?;
    ensure!(raw == b"ok\xff\n" && enc == "gzip", "binary: {raw:?} {enc}");
    ensure!(
        st["resultDigest"].as_str() == Some(sha256(&raw).as_str()),
        "binary: digest"
    );
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(msg.contains("binary"), "binary: {msg}");
    Ok(())
}
