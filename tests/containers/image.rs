//! Tasks in the user's own image (`spec.image`, the worker injected by an
//! init container) and pods shaped by `spec.podTemplate`, on real
//! containers with images assembled here (tests/images).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use longtask_e2e::{Cluster, PYTHON_IMAGE, ROOT_IMAGE, SCRATCH_IMAGE, TestNs, tasks, wait};
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);

/// A Task manifest from its spec lines (YAML, indented by two spaces).
fn task(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: {name}\nspec:\n{spec}"
    )
}

async fn completes(ns: &TestNs, name: &str) -> Result<Value> {
    let t = wait::condition(&tasks(&ns.client, &ns.name), name, "Complete", 2 * MINUTE).await;
    t.with_context(|| format!("task {name}:\n{}", ns.dump()))
}

fn result(t: &Value) -> &str {
    t["status"]["result"].as_str().unwrap_or_default().trim()
}

/// A Python program in a Python image (Debian's python3, user root) writes
/// its result, as uid 65532 with a writable HOME.
pub async fn python_image(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let program = "import os, pathlib; home = pathlib.Path.home(); (home / 'cache').write_text('x'); open(os.environ['LONGTASK_RESULT'], 'w').write(f'python uid={os.getuid()} home={home}')";
    ns.apply(&task(
        "py",
        &format!("  image: {PYTHON_IMAGE}\n  imagePullPolicy: Never\n  command: [python3, -c, {program:?}]\n"),
    ))?;
    let t = completes(&ns, "py").await?;
    ensure!(
        result(&t) == "python uid=65532 home=/longtask",
        "result: {}",
        t["status"]
    );
    Ok(())
}

/// A static program in a FROM-scratch image (no shell, no libc) runs under
/// the injected worker and reports progress and a result.
pub async fn scratch_image(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&task(
        "bare",
        &format!(
            "  image: {SCRATCH_IMAGE}\n  imagePullPolicy: Never\n  command: [/report, \"4\"]\n"
        ),
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + MINUTE;
    loop {
        let t = serde_json::to_value(api.get("bare").await?)?;
        if let Some(p) = t["status"]["progress"]["percent"].as_i64()
            && seen.last() != Some(&p)
        {
            seen.push(p);
        }
        if t["status"]["phase"] == "Completed" || t["status"]["phase"] == "Failed" {
            ensure!(
                t["status"]["phase"] == "Completed" && result(&t) == "uid=65532 gid=65532 steps=4",
                "status: {}",
                t["status"]
            );
            ensure!(
                t["status"]["progress"]["percent"] == 100,
                "progress: {}",
                t["status"]
            );
            break;
        }
        if std::time::Instant::now() > deadline {
            bail!("bare never finished:\n{}", ns.dump());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ensure!(
        seen.iter().any(|p| *p > 0 && *p < 100),
        "no progress seen while it ran: {seen:?}"
    );
    Ok(())
}

/// An image whose user is root runs, under the default settings, as uid
/// 65532; a uid and gid the Task sets are honoured.
pub async fn root_image_and_own_uid(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let script = r#"echo "$(id -u) $(id -g)" > "$LONGTASK_RESULT""#;
    ns.apply(&task(
        "as-default",
        &format!(
            "  image: {ROOT_IMAGE}\n  imagePullPolicy: Never\n  command: [sh, -c, {script:?}]\n"
        ),
    ))?;
    ns.apply(&task(
        "as-mine",
        &format!(
            "  image: {ROOT_IMAGE}\n  imagePullPolicy: Never\n  command: [sh, -c, {script:?}]\n  podTemplate:\n    securityContext:\n      runAsUser: 4242\n      runAsGroup: 4343\n"
        ),
    ))?;
    let t = completes(&ns, "as-default").await?;
    ensure!(result(&t) == "65532 65532", "default: {}", t["status"]);
    let t = completes(&ns, "as-mine").await?;
    ensure!(result(&t) == "4242 4343", "own uid: {}", t["status"]);
    Ok(())
}

/// A ConfigMap volume mounted where the program reads it, in the
/// working directory the Task names.
pub async fn configmap_volume(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.k(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=greeting=hello from a volume",
    ])?;
    let script = r#"cat greeting > "$LONGTASK_RESULT""#;
    ns.apply(&task(
        "reads",
        &format!(
            "  command: [sh, -c, {script:?}]\n  workingDir: /etc/settings\n  volumeMounts:\n  - {{name: settings, mountPath: /etc/settings, readOnly: true}}\n  podTemplate:\n    volumes:\n    - name: settings\n      configMap: {{name: settings}}\n"
        ),
    ))?;
    let t = completes(&ns, "reads").await?;
    ensure!(
        result(&t) == "hello from a volume",
        "result: {}",
        t["status"]
    );
    Ok(())
}

/// Node `node` labelled `label` (k=v) and tainted `taint` (k=v:Effect), as
/// a pool of special nodes is; `remove` takes both off again.
struct Pool<'a> {
    cluster: &'a Cluster,
    node: &'a str,
    label: &'a str,
    taint: &'a str,
}

impl Pool<'_> {
    fn apply(&self) -> Result<()> {
        let k = &self.cluster.kubectl;
        k.run(&["label", "node", self.node, self.label, "--overwrite"])?;
        k.run(&["taint", "node", self.node, self.taint, "--overwrite"])?;
        Ok(())
    }

    fn remove(&self) -> Result<()> {
        let k = &self.cluster.kubectl;
        k.run(&["taint", "node", self.node, &format!("{}-", self.taint)])?;
        let key = self.label.split_once('=').map_or(self.label, |(k, _)| k);
        k.run(&["label", "node", self.node, &format!("{key}-")])?;
        Ok(())
    }
}

/// nodeSelector plus a toleration put the pod on the one tainted,
/// labelled node; without the toleration it waits, Unschedulable.
pub async fn node_selector_and_toleration(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let node = "devcluster-node-2";
    let pool = Pool {
        cluster: &c,
        node,
        label: "pool=special",
        taint: "dedicated=special:NoSchedule",
    };
    pool.apply()?;
    let outcome = async {
        let placed = "  nodeSelector: {pool: special}\n";
        let tolerate = "    tolerations: [{key: dedicated, operator: Equal, value: special, effect: NoSchedule}]\n";
        let script = "echo placed > \"$LONGTASK_RESULT\"";
        ns.apply(&task(
            "placed",
            &format!("  command: [sh, -c, {script:?}]\n  podTemplate:\n  {placed}{tolerate}"),
        ))?;
        ns.apply(&task(
            "untolerated",
            &format!("  command: [sh, -c, {script:?}]\n  podTemplate:\n  {placed}"),
        ))?;
        completes(&ns, "placed").await?;
        let on = ns.k(&["get", "pods", "-l", "job-name=placed", "-o", "jsonpath={.items[0].spec.nodeName}"])?;
        ensure!(on.trim() == node, "placed on {on:?}, want {node}");
        let t = wait::condition(&tasks(&ns.client, &ns.name), "untolerated", "Waiting", MINUTE).await?;
        ensure!(
            t["status"]["conditions"].to_string().contains("Unschedulable"),
            "untolerated: {}",
            t["status"]
        );
        Ok(())
    }
    .await;
    pool.remove()?;
    outcome
}

/// Fields longtask owns are refused at `kubectl apply`, naming the field.
pub async fn owned_fields_refused(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let cases = [
        (
            "  command: [\"true\"]\n  podTemplate:\n    restartPolicy: Always\n",
            "spec.podTemplate.restartPolicy",
        ),
        (
            "  command: [\"true\"]\n  podTemplate:\n    initContainers: []\n",
            "spec.podTemplate.initContainers",
        ),
        (
            "  command: [\"true\"]\n  podTemplate:\n    volumes: [{name: longtask, emptyDir: {}}]\n",
            "spec.podTemplate.volumes",
        ),
        (
            "  command: [\"true\"]\n  volumeMounts: [{name: x, mountPath: /longtask}]\n",
            "spec.volumeMounts",
        ),
        (
            "  command: [\"true\"]\n  podTemplate:\n    metadata: {labels: {job-name: x}}\n",
            "spec.podTemplate.metadata.labels",
        ),
        ("  image: x\n", "spec.command"),
    ];
    for (i, (spec, field)) in cases.iter().enumerate() {
        match ns.apply(&task(&format!("owned-{i}"), spec)) {
            Ok(out) => bail!("case {i} ({field}) was accepted: {out}"),
            Err(e) => {
                let msg = format!("{e:#}");
                ensure!(
                    msg.contains(field),
                    "case {i}: error does not name {field}: {msg}"
                );
            }
        }
    }
    Ok(())
}

/// A pod that cannot start because of its image or its user says why in
/// the Task's Waiting condition: an image the node does not have (and may
/// not pull), a uid the namespace's Pod Security level refuses.
pub async fn cannot_start_is_named(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&task(
        "no-image",
        "  image: longtask-never-loaded:1\n  imagePullPolicy: Never\n  command: [run]\n",
    ))?;
    ns.apply(&task(
        "as-root",
        &format!("  image: {ROOT_IMAGE}\n  command: [id]\n  podTemplate:\n    securityContext: {{runAsUser: 0, runAsNonRoot: false}}\n"),
    ))?;
    let api = tasks(&ns.client, &ns.name);
    for (name, want) in [("no-image", "ImagePullFailed"), ("as-root", "PodRefused")] {
        let t = wait::condition(&api, name, "Waiting", MINUTE).await;
        let t = t.with_context(|| format!("{name}:\n{}", ns.dump()))?;
        let conds = t["status"]["conditions"].to_string();
        ensure!(conds.contains(want), "{name}: want {want}: {}", t["status"]);
    }
    Ok(())
}

/// Every sample in `manifests/samples/pods/` reaches its documented end
/// state, public images standing in for their local builds and one node
/// labelled and tainted as the GPU pool the sample selects.
pub async fn pod_samples(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let pool = Pool {
        cluster: &c,
        node: "devcluster-node-1",
        label: "pool=gpu",
        taint: "nvidia.com/gpu=present:NoSchedule",
    };
    pool.apply()?;
    let dir = longtask_e2e::root().join("manifests/samples/pods");
    let standins = [("python:3.12-slim", PYTHON_IMAGE)];
    let outcome = longtask_e2e::samples::reach_their_end_state(&ns, &dir, 4, &standins).await;
    pool.remove()?;
    outcome
}
