//! Hostile tenants of a shared cluster (issue 24, items 1-4): users bound to a Role on
//! Tasks, pods and ConfigMaps in their own namespace only, acting through
//! `kubectl --as`. A shard bomb leaves the shared operator's memory bounded;
//! a result cannot be forged through an account a Task names; naming an
//! account needs its opt-in and binds it only while a Task needs it; a
//! namespace made again inherits no worker account.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use longtask_e2e::{Cluster, TestNs, operator, procs, sh_task, tasks, wait};

const MINUTE: Duration = Duration::from_secs(60);

/// A tenant of `ns`: a user with every verb on Tasks, pods and ConfigMaps
/// there, and nothing anywhere else. Returns the user's name.
pub fn tenant(ns: &TestNs, user: &str) -> Result<String> {
    let role = format!("tenant-{user}");
    if ns.k(&["get", "role", &role]).is_err() {
        ns.k(&[
            "create",
            "role",
            &role,
            "--verb=*",
            "--resource=tasks.longtask.dev,tasks.longtask.dev/status,pods,configmaps",
        ])?;
    }
    ns.k(&[
        "create",
        "rolebinding",
        &role,
        &format!("--role={role}"),
        &format!("--user={user}"),
    ])?;
    Ok(user.to_owned())
}

/// `kubectl -n NS --as USER ARGS...`
pub fn as_user(ns: &TestNs, user: &str, args: &[&str]) -> Result<String> {
    let mut full = vec!["--as", user];
    full.extend_from_slice(args);
    ns.k(&full)
}

/// `kubectl -n NS --as USER ARGS...` with `input` on stdin.
pub fn as_user_stdin(ns: &TestNs, user: &str, args: &[&str], input: &str) -> Result<String> {
    let mut full = vec!["-n", ns.name.as_str(), "--as", user];
    full.extend_from_slice(args);
    ns.kubectl.stdin(&full, input)
}

/// The highest resident memory (VmHWM, KiB) of each operator process of
/// this cluster, found by its pod's name in its environment.
async fn operator_peaks(c: &Cluster) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for p in operator::pods(&c.client).await? {
        let name = p.metadata.name.unwrap_or_default();
        for pid in procs::with_env("longtask-operator", &format!("POD_NAME={name}")) {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
            let kib = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .with_context(|| format!("no VmHWM in /proc/{pid}/status"))?;
            out.push((name.clone(), kib));
        }
    }
    ensure!(!out.is_empty(), "no operator process found");
    Ok(out)
}

/// ConfigMaps of `size` bytes each, labelled as results of shard 0 of the
/// Task `uid`, one YAML stream.
fn bomb(prefix: &str, uid: &str, count: usize, size: usize) -> String {
    let filler = "x".repeat(size);
    (0..count)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {prefix}-{i}\n  labels:\n    \
                 longtask.dev/task-uid: \"{uid}\"\n    longtask.dev/shard: \"0\"\ndata:\n  result: {filler}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// A tenant labels 100 ConfigMaps of 1 MB with a sharded Task's UID (no
/// owner, names of their own): the Task completes from its own two shards
/// and the operator's peak memory stays low. Then 40 shards write 920 KB
/// results each, 36 MB together: the Task fails ResultTooLarge naming the
/// shards past the operator's 32 MiB read budget, and memory stays bounded.
pub async fn tenant_shard_bomb_bounded(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    let user = tenant(&ns, "mallory")?;
    let before = operator_peaks(&c).await?;
    let task = sh_task(
        "bombed",
        r#"sleep 40; echo "r$LONGTASK_SHARD" > "$LONGTASK_RESULT""#,
        "  shards: 2\n",
    );
    as_user_stdin(&ns, &user, &["apply", "-f", "-"], &task)?;
    let t = wait::condition(&api, "bombed", "Running", MINUTE).await?;
    let uid = t["metadata"]["uid"].as_str().context("uid")?.to_owned();
    for part in 0..4 {
        let stream = bomb(&format!("bomb-{part}"), &uid, 25, 1_000_000);
        as_user_stdin(&ns, &user, &["create", "-f", "-"], &stream)?;
    }
    let t = wait::condition(&api, "bombed", "Finished", Duration::from_secs(120)).await?;
    let st = &t["status"];
    ensure!(
        st["phase"] == "Completed" && st["shardResults"][1]["result"] == "r1\n",
        "bombed: {st}"
    );
    let after_bomb = operator_peaks(&c).await?;
    let big = sh_task(
        "big",
        r#"head -c 690000 /dev/urandom | base64 -w0 > "$LONGTASK_RESULT""#,
        "  shards: 40\n  parallelism: 40\n",
    );
    as_user_stdin(&ns, &user, &["apply", "-f", "-"], &big)?;
    let t = wait::condition(&api, "big", "Finished", Duration::from_secs(180)).await?;
    let st = &t["status"];
    let after_big = operator_peaks(&c).await?;
    println!(
        "tenant_shard_bomb_bounded: operator VmHWM KiB before {before:?}, after 100 MB bomb \
         {after_bomb:?}, after 40 x 920 KB shards {after_big:?}; big: {} {} {}",
        st["phase"], st["reason"], st["message"]
    );
    ensure!(
        st["phase"] == "Failed"
            && st["reason"] == "ResultTooLarge"
            && st["message"].as_str().unwrap_or_default().contains("39"),
        "big: {st}"
    );
    for (pod, kib) in after_bomb.iter().chain(&after_big) {
        ensure!(*kib < 128 * 1024, "operator {pod} peaked at {kib} KiB");
    }
    Ok(())
}

/// Refused by the ValidatingAdmissionPolicy `policy`.
fn refused_by(out: Result<String>, policy: &str) -> Result<()> {
    match out {
        Ok(o) => bail!("allowed, want refused by {policy}: {o}"),
        Err(e) => {
            let e = format!("{e:#}");
            ensure!(
                e.contains(&format!("ValidatingAdmissionPolicy '{policy}'")),
                "not refused by {policy}: {e}"
            );
            Ok(())
        }
    }
}

/// A ServiceAccount `name` whose own Role lets it create ConfigMaps.
fn account_that_writes(ns: &TestNs, name: &str) -> Result<String> {
    if ns.k(&["get", "serviceaccount", name]).is_err() {
        ns.k(&["create", "serviceaccount", name])?;
    }
    let role = format!("{name}-writes");
    ns.k(&[
        "create",
        "role",
        &role,
        "--verb=create",
        "--resource=configmaps",
    ])?;
    ns.k(&[
        "create",
        "rolebinding",
        &role,
        &format!("--role={role}"),
        &format!("--serviceaccount={}:{name}", ns.name),
    ])?;
    Ok(format!("system:serviceaccount:{}:{name}", ns.name))
}

/// The account's own write: a ConfigMap of its own.
fn own_write(ns: &TestNs, user: &str, cm: &str) -> Result<String> {
    as_user(ns, user, &["create", "configmap", cm, "--from-literal=a=b"])
}

/// Subjects of the RoleBinding longtask-worker (none before it exists).
fn subjects(ns: &TestNs) -> Result<Vec<String>> {
    let out = ns.k(&[
        "get",
        "rolebinding",
        "longtask-worker",
        "--ignore-not-found",
        "-o",
        "jsonpath={.subjects[*].name}",
    ])?;
    Ok(out.split_whitespace().map(str::to_owned).collect())
}

/// A Warning Event on Task `task` whose message contains `text`.
fn warned(ns: &TestNs, task: &str, text: &str) -> Result<bool> {
    let out = ns.k(&[
        "get",
        "events",
        &format!("--field-selector=involvedObject.name={task},type=Warning"),
        "-o",
        "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}",
    ])?;
    Ok(out.lines().any(|l| l.contains(text)))
}

/// Issue 24 item 3: a tenant's Task naming account `ci` (which has its own
/// right to write ConfigMaps) is refused up front while `ci` has not opted
/// in, and `ci` keeps its writes. Opted in, `ci` runs the Task, and once
/// the Task has ended `ci` is no worker account any more: its own writes
/// work again.
pub async fn tenant_borrowed_account_recovers(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    let user = tenant(&ns, "mallory")?;
    let ci = account_that_writes(&ns, "ci")?;
    let spec = "  podTemplate:\n    serviceAccountName: ci\n";
    let task = sh_task("borrow", r#"printf ok > "$LONGTASK_RESULT""#, spec);
    as_user_stdin(&ns, &user, &["apply", "-f", "-"], &task)?;
    let t = wait::condition(&api, "borrow", "Failed", MINUTE).await?;
    let msg = t["status"]["message"].as_str().unwrap_or_default();
    ensure!(
        t["status"]["reason"] == "InvalidSpec" && msg.contains("longtask.dev/worker"),
        "borrow: {}",
        t["status"]
    );
    ensure!(!subjects(&ns)?.contains(&"ci".to_owned()), "ci bound");
    own_write(&ns, &ci, "ci-notes-1").context("ci's own write while refused")?;
    wait::until(MINUTE, "a Warning Event naming the account", || async {
        warned(&ns, "borrow", "ServiceAccount ci")
    })
    .await?;
    // Opted in by someone who may update ServiceAccounts (not the tenant).
    let opt_in = [
        "annotate",
        "serviceaccount",
        "ci",
        "longtask.dev/worker=true",
    ];
    ensure!(
        as_user(&ns, &user, &opt_in).is_err(),
        "the tenant opted ci in"
    );
    ns.k(&opt_in)?;
    let task = sh_task("borrow2", r#"printf ok > "$LONGTASK_RESULT""#, spec);
    as_user_stdin(&ns, &user, &["apply", "-f", "-"], &task)?;
    let t = wait::condition(&api, "borrow2", "Complete", MINUTE).await?;
    ensure!(t["status"]["result"] == "ok", "borrow2: {}", t["status"]);
    as_user(&ns, &user, &["delete", "task", "borrow2"])?;
    wait::until(
        Duration::from_secs(90),
        "ci unbound and writing again",
        || async {
            Ok(!subjects(&ns)?.contains(&"ci".to_owned())
                && own_write(&ns, &ci, "ci-notes-2").is_ok())
        },
    )
    .await?;
    Ok(())
}

/// Issue 24 item 1: a tenant cannot make a pod that writes a colleague's
/// result. Her pod named like the victim's, made while `default` is no
/// worker account, keeps `default` from becoming one (her Task naming it is
/// refused, naming the pod); a pod claiming the victim's Job, by owner
/// reference or by the Job controller's label, is refused; a frozen
/// (immutable) result is refused for anyone. The victim completes with its
/// own result.
pub async fn tenant_forged_result_refused(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    let user = tenant(&ns, "mallory")?;
    ns.k(&[
        "annotate",
        "serviceaccount",
        "default",
        "longtask.dev/worker=true",
    ])?;
    ns.apply(&sh_task(
        "vic",
        r#"sleep 15; printf real > "$LONGTASK_RESULT""#,
        "",
    ))?;
    let t = wait::condition(&api, "vic", "Running", MINUTE).await?;
    let job_uid = t["status"]["jobUid"].as_str().context("jobUid")?.to_owned();
    let pod = |name: &str, meta: serde_json::Value| {
        let mut p = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "serviceAccountName": "default", "restartPolicy": "Never",
                "securityContext": {"runAsNonRoot": true, "runAsUser": 65532,
                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{"name": "c", "image": c.kubectl_image(),
                    "command": ["sleep", "600"],
                    "securityContext": {"allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"]}}}],
            },
        });
        if let Some(m) = meta.as_object() {
            for (k, v) in m {
                p["metadata"][k] = v.clone();
            }
        }
        p.to_string()
    };
    // A pod claiming the victim's Job, either way: refused.
    let owned = pod(
        "vic-owned",
        serde_json::json!({"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
            "name": "vic", "uid": job_uid, "controller": true}]}),
    );
    refused_by(
        as_user_stdin(&ns, &user, &["create", "-f", "-"], &owned),
        "longtask-worker-pods",
    )?;
    let labelled = pod(
        "vic-label",
        serde_json::json!({"labels": {"batch.kubernetes.io/controller-uid": job_uid}}),
    );
    refused_by(
        as_user_stdin(&ns, &user, &["create", "-f", "-"], &labelled),
        "longtask-worker-pods",
    )?;
    // Her look-alike pod, made while default is no worker account yet.
    let lookalike = pod("vic-q7x2k", serde_json::json!({}));
    as_user_stdin(&ns, &user, &["create", "-f", "-"], &lookalike)?;
    let mine = sh_task(
        "mine",
        "true",
        "  podTemplate:\n    serviceAccountName: default\n",
    );
    as_user_stdin(&ns, &user, &["apply", "-f", "-"], &mine)?;
    let t = wait::condition(&api, "mine", "Failed", MINUTE).await?;
    let msg = t["status"]["message"].as_str().unwrap_or_default();
    ensure!(msg.contains("vic-q7x2k"), "mine: {}", t["status"]);
    ensure!(
        !subjects(&ns)?.contains(&"default".to_owned()),
        "default bound"
    );
    // A frozen result, by the tenant or an admin: refused.
    let frozen = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vic2-result\nimmutable: true\ndata:\n  result: forged\n";
    refused_by(
        as_user_stdin(&ns, &user, &["create", "-f", "-"], frozen),
        "longtask-results-mutable",
    )?;
    refused_by(ns.apply(frozen), "longtask-results-mutable")?;
    let t = wait::condition(&api, "vic", "Finished", MINUTE).await?;
    ensure!(
        t["status"]["phase"] == "Completed" && t["status"]["result"] == "real",
        "vic: {}",
        t["status"]
    );
    wait::until(MINUTE, "a Warning Event naming the pod", || async {
        warned(&ns, "mine", "vic-q7x2k")
    })
    .await?;
    Ok(())
}

/// Issue 24 item 4: a namespace deleted and made again under the same name
/// inherits none of the old one's worker accounts: its `default` writes
/// its own ConfigMaps though a Task of the old namespace ran as it, and a
/// Task of the new one binds only longtask-worker.
pub async fn tenant_recreated_namespace_inherits_nothing(
    c: Arc<Cluster>,
    ns: TestNs,
) -> Result<()> {
    let name = format!("{}-again", ns.name);
    let make = || -> Result<TestNs> {
        let yaml = format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    \
             longtask-e2e: \"true\"\n    pod-security.kubernetes.io/enforce: restricted\n"
        );
        c.kubectl.stdin(&["apply", "-f", "-"], &yaml)?;
        Ok(TestNs {
            name: name.clone(),
            client: ns.client.clone(),
            kubectl: ns.kubectl.clone(),
        })
    };
    let old = make()?;
    wait::until(MINUTE, "default service account", || async {
        Ok(old.k(&["get", "serviceaccount", "default"]).is_ok())
    })
    .await?;
    old.k(&[
        "annotate",
        "serviceaccount",
        "default",
        "longtask.dev/worker=true",
    ])?;
    let spec = "  podTemplate:\n    serviceAccountName: default\n";
    // The namespace goes while the Task runs (its account still bound),
    // so the program outlives the wait: with 5 s, a loaded container node
    // once ran it start to end between two of the operator's status
    // writes, and the Task went from waiting to Completed without ever
    // saying Running. Deleting the namespace ends it.
    old.apply(&sh_task(
        "old",
        r#"sleep 300; printf ok > "$LONGTASK_RESULT""#,
        spec,
    ))?;
    let api = tasks(&old.client, &old.name);
    wait::condition(&api, "old", "Running", MINUTE).await?;
    c.kubectl
        .run(&["delete", "namespace", &name, "--wait=false"])?;
    gone(&old).await?;
    let new = make()?;
    wait::until(MINUTE, "default service account", || async {
        Ok(new.k(&["get", "serviceaccount", "default"]).is_ok())
    })
    .await?;
    let default = account_that_writes(&new, "default")?;
    new.apply(&sh_task("new", r#"printf ok > "$LONGTASK_RESULT""#, ""))?;
    let api = tasks(&new.client, &new.name);
    wait::condition(&api, "new", "Complete", MINUTE).await?;
    let bound = subjects(&new)?;
    let res = own_write(&new, &default, "mine");
    let _ = c
        .kubectl
        .run(&["delete", "namespace", &name, "--wait=false"]);
    ensure!(
        bound == ["longtask-worker"],
        "subjects in the new namespace: {bound:?}"
    );
    res.context("default's own write in the new namespace")?;
    Ok(())
}

/// Waits for namespace `ns` to be gone. Its deletion waits on the pod's
/// grace period, the Job controller's pod finalizers and the namespace
/// controller's backoff: 50-100 s on a loaded node, once over 120 s in CI.
/// On a timeout, says what the namespace controller was still waiting for.
async fn gone(ns: &TestNs) -> Result<()> {
    let api: Api<Namespace> = Api::all(ns.client.clone());
    let waited = wait::until(4 * MINUTE, "the namespace to be deleted", || async {
        Ok(api.get_opt(&ns.name).await?.is_none())
    })
    .await;
    if let Err(e) = waited {
        let left = api
            .get_opt(&ns.name)
            .await
            .ok()
            .flatten()
            .and_then(|n| n.status)
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.status == "True")
            .map(|c| format!("{}: {}", c.type_, c.message.unwrap_or_default()))
            .collect::<Vec<_>>();
        bail!("{e:#}; still: {left:?}");
    }
    Ok(())
}
