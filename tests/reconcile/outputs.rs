//! Results by reference in the reconcile, against the devcluster's API
//! server (and SeaweedFS on loopback, tests/src/seaweed.rs, where the case
//! needs a store that answers): the Task's upload grant in its own Secret
//! before its Job, a Task whose store cannot be used failing before it
//! runs, a tenant's own Secret of that name never changed, and a real run
//! whose worker uploads, listed in the status and downloadable from the
//! URLs in the Secret. OutputStores are cluster-scoped: each case names
//! its own after its namespace.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use crds::outputs::{DownloadGrant, OutputStore, UploadGrant, object_prefix};
use crds::{Phase, Task};
use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use longtask_e2e::seaweed::{self, Seaweed};
use longtask_e2e::{Cluster, TestNs, wait};
use longtask_operator::context::{Config, Context};

use crate::cases::{context, reconcile};

/// A scratch directory under target/, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = longtask_e2e::root()
            .join("target/reconcile-outputs")
            .join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// SeaweedFS for `case`, or `None` (the case says it skipped) when weed is
/// not installed.
async fn seaweed(case: &str, scratch: &Scratch) -> Result<Option<Seaweed>> {
    if !Seaweed::installed() {
        println!(
            "SKIPPED {case}: {} is not installed (run tools/seaweedfs/install)",
            Seaweed::weed().display()
        );
        return Ok(None);
    }
    longtask_store::install_crypto_provider();
    Ok(Some(Seaweed::start(&scratch.0.join("seaweed")).await?))
}

/// The OutputStore cache, as the controller's watch fills it.
async fn store_cache(client: &Client) -> Result<Store<OutputStore>> {
    let (reader, writer) = reflector::store();
    let api: Api<OutputStore> = Api::all(client.clone());
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    )
    .applied_objects();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while stream.next().await.is_some() {}
    });
    reader.wait_until_ready().await?;
    Ok(reader)
}

/// A Context whose operator lives in `ns` (the stores' credentials are
/// there) and reads OutputStores.
async fn outputs_context(c: &Cluster, ns: &str) -> Result<Arc<Context>> {
    let base = context(&c.client);
    let mut ctx = Arc::try_unwrap(base).map_err(|_| anyhow::anyhow!("shared context"))?;
    ctx.config = Config {
        operator_namespace: Some(ns.to_owned()),
        ..ctx.config
    };
    ctx.caches.set_output_stores(store_cache(&c.client).await?);
    Ok(Arc::new(ctx))
}

/// Store `name` at `endpoint` (prefix `lt/`), keys in Secret `keys` of the
/// operator's namespace; made again if the CRD is not served yet.
async fn make_store(c: &Cluster, name: &str, endpoint: &str, keys: &str) -> Result<OutputStore> {
    let store: OutputStore = serde_json::from_value(serde_json::json!({
        "apiVersion": "longtask.dev/v1alpha1",
        "kind": "OutputStore",
        "metadata": { "name": name },
        "spec": { "s3": {
            "endpoint": endpoint,
            "bucket": seaweed::BUCKET,
            "prefix": "lt/",
            "credentialsSecret": keys,
        } },
    }))?;
    let api: Api<OutputStore> = Api::all(c.client.clone());
    // The CRD was applied with the others; it may not be served yet.
    for _ in 0..60 {
        match api.create(&PostParams::default(), &store).await {
            Ok(s) => return Ok(s),
            Err(kube::Error::Api(e)) if e.code == 404 => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    bail!("the OutputStore API is not served after 30 s")
}

/// Deletes the cluster-scoped store `name` (the namespace takes the rest).
async fn drop_store(c: &Cluster, name: &str) {
    let api: Api<OutputStore> = Api::all(c.client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

/// The Secret `name` in `ns` with `data`, no owner.
async fn put_secret(c: &Cluster, ns: &str, name: &str, data: &[(&str, &str)]) -> Result<()> {
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Secret::default()
    };
    let api: Api<Secret> = Api::namespaced(c.client.clone(), ns);
    api.create(&PostParams::default(), &secret).await?;
    Ok(())
}

/// Creates a Task from `spec` (JSON) and returns it as stored.
async fn create(c: &Cluster, ns: &str, name: &str, spec: serde_json::Value) -> Result<Task> {
    let task: Task = serde_json::from_value(serde_json::json!({
        "apiVersion": "longtask.dev/v1alpha1",
        "kind": "Task",
        "metadata": { "name": name },
        "spec": spec,
    }))?;
    let api: Api<Task> = Api::namespaced(c.client.clone(), ns);
    Ok(api.create(&PostParams::default(), &task).await?)
}

/// Reconciles Task `name` (read afresh) once, and returns it as it is then.
async fn look(c: &Cluster, ctx: &Arc<Context>, ns: &str, name: &str) -> Result<Task> {
    let api: Api<Task> = Api::namespaced(c.client.clone(), ns);
    reconcile(&api.get(name).await?, ctx).await?;
    Ok(api.get(name).await?)
}

fn reason(t: &Task) -> (Option<Phase>, String, String) {
    let s = t.status.clone().unwrap_or_default();
    (
        s.phase,
        s.reason.unwrap_or_default(),
        s.message.unwrap_or_default(),
    )
}

/// The JSON under `key` of the Secret `name`, and the Secret.
async fn secret_json<T: serde::de::DeserializeOwned>(
    c: &Cluster,
    ns: &str,
    name: &str,
    key: &str,
) -> Result<(T, Secret)> {
    let api: Api<Secret> = Api::namespaced(c.client.clone(), ns);
    let s = api.get(name).await?;
    let data = s.data.clone().unwrap_or_default();
    let keys: Vec<&String> = data.keys().collect();
    let raw = data
        .get(key)
        .with_context(|| format!("Secret {name} has no {key}, only {keys:?}"))?;
    Ok((serde_json::from_slice(&raw.0)?, s))
}

/// Before its Job, the Task's own Secret holds an upload grant for its own
/// prefix, which the Job's worker gets by reference; the grant creates
/// objects below that prefix and nowhere else, and holds no key.
pub async fn outputs_grant_before_the_job(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let scratch = Scratch::new(&ns.name);
    let Some(weed) = seaweed("outputs_grant_before_the_job", &scratch).await? else {
        return Ok(());
    };
    let store = ns.name.clone();
    let res = grant_case(&c, &ns, &weed, &store).await;
    drop_store(&c, &store).await;
    res.map_err(|e| e.context(format!("weed log:\n{}", weed.log_tail())))
}

async fn grant_case(c: &Cluster, ns: &TestNs, weed: &Seaweed, store: &str) -> Result<()> {
    let keys = [
        ("accessKeyId", seaweed::ADMIN_KEY),
        ("secretAccessKey", seaweed::ADMIN_SECRET),
    ];
    put_secret(c, &ns.name, "s3-keys", &keys).await?;
    make_store(c, store, &weed.endpoint(), "s3-keys").await?;
    let ctx = outputs_context(c, &ns.name).await?;
    wait::until(Duration::from_secs(30), "the store cached", || {
        let cached = ctx.caches.output_stores().map(|s| s.state().len());
        async move { Ok(cached.unwrap_or(0) > 0) }
    })
    .await?;
    let spec = serde_json::json!({ "command": ["sleep", "600"], "timeoutSeconds": 600,
        "outputs": { "store": store } });
    let task = create(c, &ns.name, "train", spec).await?;
    let t = look(c, &ctx, &ns.name, "train").await?;
    ensure!(reason(&t).0 == Some(Phase::Running), "{:?}", reason(&t));
    let (grant, secret): (UploadGrant, Secret) =
        secret_json(c, &ns.name, "train-outputs", "upload.json").await?;
    let uid = task.uid().context("uid")?;
    let owner = secret.owner_references();
    ensure!(
        owner.len() == 1 && owner[0].uid == uid && owner[0].controller == Some(true),
        "owners: {owner:?}"
    );
    let prefix = object_prefix("lt/", &ns.name, "train", &uid);
    ensure!(
        grant.key_prefix == prefix,
        "{} != {prefix}",
        grant.key_prefix
    );
    let raw = serde_json::to_string(&grant)?;
    ensure!(
        !raw.contains(seaweed::ADMIN_SECRET),
        "the grant holds the key"
    );
    let expires: k8s_openapi::jiff::Timestamp = grant.expires.parse()?;
    let left = expires.as_second() - k8s_openapi::jiff::Timestamp::now().as_second();
    ensure!(
        (4100..=4200).contains(&left),
        "expires in {left} s, not 600 s + 1 h"
    );
    job_takes_it(c, &ns.name, store).await?;
    uploads_stay_inside(weed, &grant, &scratch_file(&ns.name)?).await
}

/// A file to upload.
fn scratch_file(ns: &str) -> Result<PathBuf> {
    let p = longtask_e2e::root()
        .join("target/reconcile-outputs")
        .join(format!("{ns}.bin"));
    std::fs::create_dir_all(p.parent().context("parent")?)?;
    std::fs::write(&p, b"forty-two")?;
    Ok(p)
}

/// The Job names the store and passes the grant by reference only.
async fn job_takes_it(c: &Cluster, ns: &str, store: &str) -> Result<()> {
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), ns);
    let job = jobs.get("train").await?;
    let a = job.annotations();
    ensure!(
        a.get("longtask.dev/output-store").map(String::as_str) == Some(store),
        "{a:?}"
    );
    let pod = job.spec.and_then(|s| s.template.spec).context("pod spec")?;
    let env = pod.containers[0].env.clone().unwrap_or_default();
    let grant = env
        .iter()
        .find(|e| e.name == "LONGTASK_UPLOAD_GRANT")
        .context("no LONGTASK_UPLOAD_GRANT")?;
    let r = grant
        .value_from
        .as_ref()
        .and_then(|v| v.secret_key_ref.as_ref())
        .context("not from a Secret")?;
    ensure!(grant.value.is_none() && r.name == "train-outputs" && r.key == "upload.json");
    Ok(())
}

/// The grant creates below its prefix and is refused anywhere else.
async fn uploads_stay_inside(weed: &Seaweed, grant: &UploadGrant, file: &PathBuf) -> Result<()> {
    let http = longtask_store::http_client(Duration::from_secs(10))?;
    let opts = longtask_store::UploadOptions {
        attempts: 1,
        ..Default::default()
    };
    let key = format!("{}model.bin", grant.key_prefix);
    longtask_store::upload_file(&http, grant, &key, file, &opts).await?;
    let got = weed.client().get(&key).await?;
    ensure!(&got[..] == b"forty-two", "stored {got:?}");
    let outside = grant.key_prefix.replacen("/train/", "/other/", 1) + "model.bin";
    if longtask_store::upload_file(&http, grant, &outside, file, &opts)
        .await
        .is_ok()
    {
        bail!("the grant wrote {outside}, outside its prefix");
    }
    ensure!(
        weed.client().get(&outside).await.is_err(),
        "{outside} exists"
    );
    let _ = std::fs::remove_file(file);
    Ok(())
}

/// A store the Task names that does not exist, or whose keys are missing,
/// fails the Task before it runs (OutputStoreUnavailable, no Job); a
/// tenant's own Secret named like the outputs Secret is never changed
/// (the Task fails so too); a Task opting out runs as before.
pub async fn unavailable_stores_fail_before_the_run(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let store = ns.name.clone();
    let res = unavailable_case(&c, &ns, &store).await;
    drop_store(&c, &store).await;
    res
}

async fn unavailable_case(c: &Cluster, ns: &TestNs, store: &str) -> Result<()> {
    // No Secret s3-keys yet.
    make_store(c, store, "http://127.0.0.1:9", "s3-keys").await?;
    let ctx = outputs_context(c, &ns.name).await?;
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), &ns.name);
    let named = |s: &str| serde_json::json!({ "command": ["true"], "outputs": { "store": s } });
    let cases = [
        ("missing", named("no-such-store"), "which does not exist"),
        ("keyless", named(store), "s3-keys"),
    ];
    for (name, spec, says) in cases {
        create(c, &ns.name, name, spec).await?;
        let t = look(c, &ctx, &ns.name, name).await?;
        let (phase, why, message) = reason(&t);
        ensure!(
            phase == Some(Phase::Failed)
                && why == "OutputStoreUnavailable"
                && message.contains(says),
            "{name}: {phase:?} {why}: {message}"
        );
        ensure!(jobs.get_opt(name).await?.is_none(), "{name} has a Job");
    }
    let keys = [("accessKeyId", "AK"), ("secretAccessKey", "SK")];
    put_secret(c, &ns.name, "s3-keys", &keys).await?;
    // A tenant's own Secret of the outputs Secret's name.
    put_secret(c, &ns.name, "squat-outputs", &[("mine", "keep")]).await?;
    create(c, &ns.name, "squat", named(store)).await?;
    let t = look(c, &ctx, &ns.name, "squat").await?;
    let (phase, why, message) = reason(&t);
    ensure!(
        phase == Some(Phase::Failed)
            && why == "OutputStoreUnavailable"
            && message.contains("is not this Task's"),
        "squat: {phase:?} {why}: {message}"
    );
    let secrets: Api<Secret> = Api::namespaced(c.client.clone(), &ns.name);
    let kept = secrets.get("squat-outputs").await?;
    let data: BTreeMap<String, ByteString> = kept.data.clone().unwrap_or_default();
    ensure!(
        data.len() == 1 && data.get("mine").map(|v| v.0.as_slice()) == Some(b"keep".as_slice()),
        "the tenant's Secret changed: {:?}",
        data.keys().collect::<Vec<_>>()
    );
    ensure!(kept.owner_references().is_empty(), "an owner was added");
    // Opted out: as before, whatever store applies.
    let off =
        serde_json::json!({ "command": ["true"], "outputs": { "store": store, "enabled": false } });
    create(c, &ns.name, "off", off).await?;
    let t = look(c, &ctx, &ns.name, "off").await?;
    ensure!(
        reason(&t).0 == Some(Phase::Running),
        "off: {:?}",
        reason(&t)
    );
    let job = jobs.get("off").await?;
    ensure!(!job.annotations().contains_key("longtask.dev/output-store"));
    ensure!(
        secrets.get_opt("off-outputs").await?.is_none(),
        "off got a Secret"
    );
    Ok(())
}

/// A real run: the worker uploads what the program left in
/// `$LONGTASK_OUTPUTS` with the Task's grant; the finished Task lists it
/// (size, digest, s3 URL), its Secret then holds download URLs only, and
/// the bytes downloaded from them are the program's.
pub async fn outputs_listed_and_downloadable(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let scratch = Scratch::new(&ns.name);
    let Some(weed) = seaweed("outputs_listed_and_downloadable", &scratch).await? else {
        return Ok(());
    };
    let store = ns.name.clone();
    let res = listed_case(&c, &ns, &weed, &store, &scratch).await;
    drop_store(&c, &store).await;
    res.map_err(|e| e.context(format!("{}\nweed log:\n{}", ns.dump(), weed.log_tail())))
}

async fn listed_case(
    c: &Cluster,
    ns: &TestNs,
    weed: &Seaweed,
    store: &str,
    scratch: &Scratch,
) -> Result<()> {
    let keys = [
        ("accessKeyId", seaweed::ADMIN_KEY),
        ("secretAccessKey", seaweed::ADMIN_SECRET),
    ];
    put_secret(c, &ns.name, "s3-keys", &keys).await?;
    make_store(c, store, &weed.endpoint(), "s3-keys").await?;
    let ctx = outputs_context(c, &ns.name).await?;
    wait::until(Duration::from_secs(30), "the store cached", || {
        let cached = ctx.caches.output_stores().map(|s| s.state().len());
        async move { Ok(cached.unwrap_or(0) > 0) }
    })
    .await?;
    let script = "mkdir -p \"$LONGTASK_OUTPUTS/plots\" && printf hello > \"$LONGTASK_OUTPUTS/a.txt\" \
                  && printf 12345678 > \"$LONGTASK_OUTPUTS/plots/b.bin\" && echo 42 > \"$LONGTASK_RESULT\"";
    let spec =
        serde_json::json!({ "command": ["sh", "-c", script], "outputs": { "store": store } });
    let task = create(c, &ns.name, "up", spec).await?;
    // The worker runs on the process node; each look is a reconcile.
    let mut t = look(c, &ctx, &ns.name, "up").await?;
    for _ in 0..240 {
        if t.status
            .as_ref()
            .and_then(|s| s.phase)
            .is_some_and(|p| p.is_terminal())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        t = look(c, &ctx, &ns.name, "up").await?;
    }
    let (phase, why, message) = reason(&t);
    ensure!(
        phase == Some(Phase::Completed),
        "{phase:?} {why}: {message}"
    );
    let o = t
        .status
        .and_then(|s| s.outputs)
        .context("no status.outputs")?;
    let uid = task.uid().context("uid")?;
    let prefix = object_prefix("lt/", &ns.name, "up", &uid);
    ensure!(
        o.location == format!("s3://{}/{prefix}", seaweed::BUCKET),
        "{}",
        o.location
    );
    ensure!(
        (o.count, o.total_bytes, o.size.as_str()) == (2, 13, "13"),
        "{o:?}"
    );
    let names: Vec<&str> = o.files.iter().map(|f| f.name.as_str()).collect();
    ensure!(names == ["a.txt", "plots/b.bin"], "{names:?}");
    let hello = &o.files[0];
    ensure!(
        hello.digest == longtask_e2e_digest(b"hello") && hello.size == 5,
        "{hello:?}"
    );
    ensure!(o.download_secret.as_deref() == Some("up-outputs"), "{o:?}");
    let (grant, secret): (DownloadGrant, Secret) =
        secret_json(c, &ns.name, "up-outputs", "download.json").await?;
    let data_keys: Vec<String> = secret.data.unwrap_or_default().into_keys().collect();
    ensure!(
        data_keys == ["download.json"],
        "the upload grant is still there: {data_keys:?}"
    );
    let url = grant.urls.get("a.txt").context("no URL for a.txt")?;
    let http = longtask_store::http_client(Duration::from_secs(10))?;
    let dest = scratch.0.join("a.txt");
    let hex = hello.digest.trim_start_matches("sha256:");
    longtask_store::download(&http, url, &dest, 5, hex, &mut |_| {}).await?;
    ensure!(std::fs::read(&dest)? == b"hello");
    Ok(())
}

/// `sha256:<hex>` of `bytes`, as the status writes digests.
fn longtask_e2e_digest(bytes: &[u8]) -> String {
    crds::result::digest(bytes)
}
