//! A program holds a right to its own Task's key prefix and nothing else:
//! even with its worker's upload grant in hand (read from the worker's
//! environment, which the program's own lacks), it can neither overwrite
//! nor read another Task's objects, in its namespace or another, nor list
//! the bucket.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use longtask_e2e::{Cluster, TestNs, tasks, wait};
use serde_json::Value;

use crate::cases::task;
use crate::store;

/// What the intruder tries, printed as JSON to its result.
const INTRUDER: &str = r#"
import json, os, sys, uuid, urllib.request, urllib.error
victim_key, neighbour_key, planted = sys.argv[1], sys.argv[2], sys.argv[3]
env = open("/proc/%d/environ" % os.getppid(), "rb").read().split(b"\0")
raw = [e.split(b"=", 1)[1] for e in env if e.startswith(b"LONGTASK_UPLOAD_GRANT=")]
g = json.loads(raw[0])
def post(key, data):
    b = uuid.uuid4().hex
    fields = dict(g["fields"]); fields["key"] = key; fields["x-amz-meta-sha256"] = "0" * 64
    body = b"".join(('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (b, k, v)).encode() for k, v in fields.items())
    body += ('--%s\r\nContent-Disposition: form-data; name="file"; filename="f"\r\nContent-Type: application/octet-stream\r\n\r\n' % b).encode() + data + ("\r\n--%s--\r\n" % b).encode()
    r = urllib.request.Request(g["url"], data=body, headers={"Content-Type": "multipart/form-data; boundary=" + b})
    try: return urllib.request.urlopen(r, timeout=10).status
    except urllib.error.HTTPError as e: return e.code
def get(url):
    try: return urllib.request.urlopen(url, timeout=10).status
    except urllib.error.HTTPError as e: return e.code
base = g["url"].rstrip("/")
res = dict(hidden="LONGTASK_UPLOAD_GRANT" not in os.environ,
           own=post(g["keyPrefix"] + "own.txt", b"mine"),
           overwrite=post(victim_key, b"overwritten"),
           neighbour=post(neighbour_key, b"overwritten"),
           planted=post(planted, b"x"),
           escape=post(g["keyPrefix"] + "../../../" + planted, b"x"),
           read=get(base + "/" + victim_key),
           list=get(base + "?list-type=2"))
open(os.environ["LONGTASK_RESULT"], "w").write(json.dumps(res, sort_keys=True))
"#;

/// Runs a one-file Task and returns its object key.
async fn victim(ns: &TestNs, store: &str, name: &str, data: &str) -> Result<String> {
    let script = format!(r#"printf '{data}' > "$LONGTASK_OUTPUTS/secret.txt""#);
    ns.apply(&task(name, &script, store))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, name, "Complete", Duration::from_secs(120)).await?;
    let uid = t["metadata"]["uid"].as_str().context("uid")?;
    Ok(format!(
        "{}secret.txt",
        store::task_prefix(&ns.name, name, uid)
    ))
}

fn intruder_yaml(store: &str, args: &[&str]) -> String {
    let script = serde_json::to_string(INTRUDER).unwrap_or_default();
    let args = serde_json::to_string(args).unwrap_or_default();
    format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata: {{name: intruder}}\nspec:\n  \
         command: [python3, -c, {script}]\n  args: {args}\n  outputs: {{store: {store}}}\n"
    )
}

/// Another namespace's Task and a neighbour in the same namespace keep
/// their objects whole and unread; the intruder writes only its own prefix.
pub async fn tenancy_is_the_task_prefix(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let other = c.namespace("outputs-victim").await?;
    let (mine, theirs) = (ns.name.clone(), other.name.clone());
    store::setup(&c, &ns, &mine, "", "").await?;
    store::setup(&c, &other, &theirs, "", "").await?;
    let victim_key = victim(&other, &theirs, "victim", "victim data").await?;
    let neighbour_key = victim(&ns, &mine, "neighbour", "neighbour data").await?;
    let planted = format!(
        "{}planted/x.txt",
        store::task_prefix(&other.name, "victim", "u")
    );
    ns.apply(&intruder_yaml(
        &mine,
        &[&victim_key, &neighbour_key, &planted],
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "intruder", "Finished", Duration::from_secs(120)).await?;
    let got: Value = serde_json::from_str(t["status"]["result"].as_str().unwrap_or("{}"))
        .with_context(|| format!("intruder: {}", t["status"]))?;
    println!("tenancy_is_the_task_prefix: {got}");
    ensure!(
        got["hidden"] == true,
        "the grant is in the program's env: {got}"
    );
    ensure!(
        matches!(got["own"].as_u64(), Some(200..=204)),
        "its own prefix refused: {got}"
    );
    for k in [
        "overwrite",
        "neighbour",
        "planted",
        "escape",
        "read",
        "list",
    ] {
        let code = got[k].as_u64().unwrap_or(0);
        ensure!(
            code == 403 || code == 400,
            "{k}: {code}, want a refusal: {got}"
        );
    }
    let admin = store::admin().await;
    ensure!(
        &admin.get(&victim_key).await?[..] == b"victim data",
        "the victim's object changed"
    );
    ensure!(
        &admin.get(&neighbour_key).await?[..] == b"neighbour data",
        "the neighbour's object changed"
    );
    ensure!(
        store::objects(&format!("{}/", other.name)).await?.len() == 1,
        "something planted in {}",
        other.name
    );
    store::remove(&c, &[&mine, &theirs]);
    other.delete().await;
    Ok(())
}
