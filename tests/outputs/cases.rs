//! Outputs of every size, bad stores and files, and clean-up.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};
use serde_json::Value;

use crate::store;

const MINUTE: Duration = Duration::from_secs(60);
const GIB: u64 = 1024 * 1024 * 1024;

/// A Task running `script` that uploads to the store `store`.
pub fn task(name: &str, script: &str, store: &str) -> String {
    sh_task(
        name,
        script,
        &format!("  outputs: {{store: {store}}}\n  timeoutSeconds: 900\n"),
    )
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `sha256:<hex>` of what `sh -c script` prints (large streams, hashed by sha256sum).
fn sha256_of_command(script: &str) -> Result<String> {
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("{script} | sha256sum")])
        .output()?;
    ensure!(out.status.success(), "{script}: {out:?}");
    let hex = String::from_utf8_lossy(&out.stdout);
    Ok(format!(
        "sha256:{}",
        hex.split_whitespace().next().unwrap_or("")
    ))
}

/// `sha256:<hex>` of a file on disk (a missing file is an error, not the
/// digest of nothing).
fn sha256_of_file(path: &Path) -> Result<String> {
    let out = std::process::Command::new("sha256sum").arg(path).output()?;
    ensure!(
        out.status.success(),
        "sha256sum {}: {out:?}",
        path.display()
    );
    let hex = String::from_utf8_lossy(&out.stdout);
    Ok(format!(
        "sha256:{}",
        hex.split_whitespace().next().unwrap_or("")
    ))
}

/// The entry of `status.outputs.files` named `name`.
fn file<'a>(st: &'a Value, name: &str) -> Result<&'a Value> {
    st["outputs"]["files"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == name))
        .with_context(|| format!("no output {name} in {}", st["outputs"]))
}

/// The UID of a Task seen as JSON.
fn uid(t: &Value) -> Result<String> {
    Ok(t["metadata"]["uid"].as_str().context("uid")?.to_owned())
}

/// A Task's result over 1 MiB goes to the store as `.longtask/result`; with
/// the store opted out it fails ResultTooLarge as before.
pub async fn large_results_go_by_reference(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let name = ns.name.clone();
    store::setup(&c, &ns, &name, "", "").await?;
    let script = r#"seq 1 400000 > "$LONGTASK_RESULT""#;
    ns.apply(&task("big-result", script, &name))?;
    ns.apply(&sh_task(
        "opted-out",
        script,
        "  outputs: {enabled: false}\n",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "big-result", "Complete", 2 * MINUTE).await?;
    let st = &t["status"];
    let want = sha256_of_command("seq 1 400000")?;
    let f = file(st, crds::outputs::RESULT_OUTPUT)?;
    ensure!(f["digest"] == want.as_str(), "{f} vs {want}");
    ensure!(
        f["size"].as_u64() == Some(2_688_895),
        "size of seq 1 400000: {f}"
    );
    let t = wait::condition(&api, "opted-out", "Failed", 2 * MINUTE).await?;
    ensure!(t["status"]["reason"] == "ResultTooLarge", "{}", t["status"]);
    // Downloaded with the user's rights, byte-exact: with no other
    // outputs, `-o PATH` is the result's file, as it was before outputs.
    let path = c.dir.join(format!("{}-result.txt", ns.name));
    let out = ns.kubectl.plugin(
        &ns.name,
        &["result", "big-result", "-o", path.to_str().unwrap()],
    )?;
    ensure!(out.code == Some(0), "result -o: {}", out.stderr);
    let got = sha256_of_file(&path)?;
    ensure!(got == want, "downloaded {got}, want {want}");
    let _ = std::fs::remove_file(&path);
    store::remove(&c, &[&name]);
    Ok(())
}

/// Each bad store or file fails its Task with its own reason, the inline
/// result kept; nothing partial is listed as the Task's outputs.
pub async fn bad_stores_and_files_are_named(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let n = ns.name.clone();
    let ep = store::endpoint().await;
    let (good, keys, bucket, down, small) = (
        n.clone(),
        format!("{n}-keys"),
        format!("{n}-bucket"),
        format!("{n}-down"),
        format!("{n}-small"),
    );
    store::setup(&c, &ns, &good, "", "").await?;
    let wrong = "apiVersion: v1\nkind: Secret\nmetadata: {name: outputs-wrong, namespace: longtask-system}\n\
                 stringData: {accessKeyId: AKNOBODY, secretAccessKey: wrong}\n";
    c.kubectl.stdin(&["apply", "-f", "-"], wrong)?;
    let s3 = |endpoint: &str, bucket: &str, secret: &str| {
        format!("    endpoint: {endpoint}\n    bucket: {bucket}\n    credentialsSecret: {secret}\n")
    };
    store::setup(
        &c,
        &ns,
        &keys,
        "",
        &s3(&ep, store_bucket(), "outputs-wrong"),
    )
    .await?;
    store::setup(
        &c,
        &ns,
        &bucket,
        "",
        &s3(&ep, "no-such-bucket", store::SECRET),
    )
    .await?;
    store::setup(
        &c,
        &ns,
        &down,
        "",
        &s3("http://127.0.0.1:1", store_bucket(), store::SECRET),
    )
    .await?;
    store::setup(&c, &ns, &small, "  maxFileBytes: 1024\n", "").await?;
    let one = r#"echo kept > "$LONGTASK_RESULT"; echo data > "$LONGTASK_OUTPUTS/a.txt""#;
    let cases = [
        (
            "missing",
            "nope-no-store".to_owned(),
            one.to_owned(),
            "OutputStoreUnavailable",
        ),
        (
            "symlink",
            good.clone(),
            format!(r#"{one}; ln -s /etc/passwd "$LONGTASK_OUTPUTS/pw""#),
            "OutputNameInvalid",
        ),
        ("keys", keys.clone(), one.to_owned(), "OutputAccessDenied"),
        (
            "bucket",
            bucket.clone(),
            one.to_owned(),
            "OutputBucketMissing",
        ),
        (
            "down",
            down.clone(),
            one.to_owned(),
            "OutputStoreUnreachable",
        ),
        (
            "too-big",
            small.clone(),
            format!(r#"{one}; head -c 2048 /dev/zero > "$LONGTASK_OUTPUTS/big""#),
            "OutputQuotaExceeded",
        ),
    ];
    for (name, store, script, _) in &cases {
        ns.apply(&task(name, script, store))?;
    }
    let api = tasks(&ns.client, &ns.name);
    for (name, _, _, reason) in &cases {
        let t = wait::condition(&api, name, "Failed", 3 * MINUTE).await?;
        let st = &t["status"];
        ensure!(st["reason"] == *reason, "{name}: want {reason}: {st}");
        ensure!(
            st["outputs"]["files"]
                .as_array()
                .is_none_or(|f| f.is_empty()),
            "{name}: partial outputs listed: {st}"
        );
        if *name != "missing" {
            ensure!(
                st["result"] == "kept\n",
                "{name}: the inline result is lost: {st}"
            );
        }
        let events = ns.k(&[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={name}"),
            "-o",
            r#"jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}"#,
        ])?;
        // The Event's reason is the phase; its message names the reason.
        ensure!(
            events
                .lines()
                .any(|l| l.starts_with("Failed: ") && l.contains(reason)),
            "{name}: no Failed Event naming {reason}: {events}"
        );
    }
    store::remove(&c, &[&good, &keys, &bucket, &down, &small]);
    Ok(())
}

fn store_bucket() -> &'static str {
    longtask_e2e::seaweed::BUCKET
}

const BIG: &str = "seq 1 400000000 | head -c 2147483648";

/// A 2 GiB file and a directory of 1,000 small files: Completed, every
/// output listed with size and digest, downloaded byte-exact, the worker
/// under 64 MiB of memory; deleting the Task removes the objects.
pub async fn big_file_and_many_small_files(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let name = ns.name.clone();
    store::setup(&c, &ns, &name, "", "").await?;
    let script = format!(
        r#"set -e; o="$LONGTASK_OUTPUTS"; {BIG} > "$o/big.bin"; mkdir "$o/small"
i=0; while [ $i -lt 1000 ]; do echo "file $i" > "$o/small/$i.txt"; i=$((i+1)); done
echo uploaded > "$LONGTASK_RESULT""#
    );
    ns.apply(&task("big", &script, &name))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "big", "Finished", 10 * MINUTE).await?;
    let st = &t["status"];
    ensure!(st["phase"] == "Completed", "big: {st}");
    ensure!(
        st["outputs"]["count"] == 1001,
        "count: {}",
        st["outputs"]["count"]
    );
    let small_bytes: u64 = (0..1000).map(|i| format!("file {i}\n").len() as u64).sum();
    ensure!(
        st["outputs"]["totalBytes"].as_u64() == Some(2 * GIB + small_bytes),
        "{}",
        st["outputs"]["totalBytes"]
    );
    let want_big = sha256_of_command(BIG)?;
    ensure!(
        file(st, "big.bin")?["digest"] == want_big.as_str(),
        "big.bin digest"
    );
    ensure!(
        file(st, "small/7.txt")?["digest"] == sha256(b"file 7\n").as_str(),
        "small/7.txt digest"
    );
    let logs = ns.k(&["logs", "job/big"])?;
    let rss = peak_rss_mib(&logs).with_context(|| format!("no peak RSS in the log:\n{logs}"))?;
    println!("big_file_and_many_small_files: worker peak RSS {rss:.1} MiB");
    ensure!(rss < 64.0, "worker peak RSS {rss} MiB");
    downloaded_exact(&c, &ns, &want_big).await?;
    let prefix = store::task_prefix(&ns.name, "big", &uid(&t)?);
    ensure!(
        store::objects(&prefix).await?.len() == 1001,
        "objects under {prefix}"
    );
    ns.k(&["delete", "task", "big", "--timeout=30s"])?;
    store::until_empty(&prefix, MINUTE).await?;
    store::remove(&c, &[&name]);
    Ok(())
}

/// `kubectl longtask result big -o DIR` writes every file, byte-exact.
async fn downloaded_exact(c: &Cluster, ns: &TestNs, want_big: &str) -> Result<()> {
    let dir = c.dir.join(format!("{}-dl", ns.name));
    let _ = std::fs::remove_dir_all(&dir);
    let started = Instant::now();
    let out = ns
        .kubectl
        .plugin(&ns.name, &["result", "big", "-o", dir.to_str().unwrap()])?;
    ensure!(out.code == Some(0), "result -o: {}", out.stderr);
    println!(
        "big_file_and_many_small_files: downloaded in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    ensure!(
        sha256_of_file(&dir.join("big.bin"))? == want_big,
        "big.bin differs"
    );
    for i in [0, 7, 999] {
        let got = std::fs::read_to_string(dir.join(format!("small/{i}.txt")))?;
        ensure!(got == format!("file {i}\n"), "small/{i}.txt: {got:?}");
    }
    let n = std::fs::read_dir(dir.join("small"))?.count();
    ensure!(n == 1000, "{n} small files downloaded");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// The MiB figure of the worker's "peak RSS <n> MiB" log line.
fn peak_rss_mib(logs: &str) -> Option<f64> {
    let line = logs.lines().rev().find(|l| l.contains("peak RSS"))?;
    let after = line.split("peak RSS").nth(1)?;
    after
        .split(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
        .find(|s| !s.is_empty())?
        .parse()
        .ok()
}

/// Deleting a Task while the store is down completes at once; its objects
/// go once the store is back (the collector's sweep).
pub async fn delete_with_the_store_down(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let name = ns.name.clone();
    store::setup(&c, &ns, &name, "", "").await?;
    ns.apply(&task(
        "kept",
        r#"echo x > "$LONGTASK_OUTPUTS/x.txt""#,
        &name,
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "kept", "Complete", 2 * MINUTE).await?;
    let prefix = store::task_prefix(&ns.name, "kept", &uid(&t)?);
    ensure!(store::objects(&prefix).await?.len() == 1, "kept's object");
    store::pause().await;
    let started = Instant::now();
    let deleted = ns.k(&["delete", "task", "kept", "--timeout=20s"]);
    let took = started.elapsed();
    let back = store::restart().await;
    deleted.context("delete with the store down")?;
    back?;
    ensure!(took < Duration::from_secs(10), "the delete took {took:?}");
    println!(
        "delete_with_the_store_down: deleted in {:.1}s with the store down",
        took.as_secs_f64()
    );
    store::until_empty(&prefix, 3 * MINUTE).await?;
    store::remove(&c, &[&name]);
    Ok(())
}
