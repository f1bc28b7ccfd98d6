//! Least privilege of the worker's credentials: a pod running as the
//! longtask-worker ServiceAccount, which is not a Task's pod, tries what a
//! compromised program could try. RBAC refuses reads and Task writes; the
//! ValidatingAdmissionPolicy `longtask-worker-results` refuses every
//! ConfigMap write but a pod's own Task's result.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject};
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};
use serde_json::json;

const MINUTE: Duration = Duration::from_secs(60);

/// Who refused an attempt, read from kubectl's error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Allowed,
    /// RBAC: `... is forbidden: User "system:serviceaccount:NS:longtask-worker" cannot ...`.
    Rbac,
    /// `... denied request: ...` by the ValidatingAdmissionPolicy.
    Policy,
    /// Anything else (no credentials, no connection, ...): not a refusal.
    Other,
}

/// The attempts, in order, and who must refuse each.
const ATTEMPTS: &[(&str, Outcome)] = &[
    ("read-secret", Outcome::Rbac),
    ("list-configmaps", Outcome::Rbac),
    ("create-configmap", Outcome::Policy),
    // The worker writes whole objects (create, update); it may not patch.
    ("patch-configmap", Outcome::Rbac),
    ("replace-configmap", Outcome::Policy),
    ("forge-victim-result", Outcome::Policy),
    ("patch-victim-result", Outcome::Rbac),
    ("delete-victim-result", Outcome::Rbac),
    ("patch-victim-status", Outcome::Rbac),
    ("create-task", Outcome::Rbac),
    // A result for a Task named like the intruder's own Job, stamped with
    // its own pod, passes the policy: proof that its token works and that
    // the refusals above are the policy's choice.
    ("own-job-result", Outcome::Allowed),
];

/// One line per attempt: `ATTEMPT <name> allowed|refused: <kubectl output>`.
const SCRIPT: &str = r#"
k() { kubectl -n "$NS" "$@"; }
try() {
  name=$1; shift
  if out=$("$@" 2>&1); then verdict=allowed; else verdict=refused; fi
  echo "ATTEMPT $name $verdict: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-600)"
}
# Stamped with this pod, as a worker stamps its writes.
stamp() { printf '%s' "$1" | sed "s/__POD__/$POD/; s/__UID__/$POD_UID/"; }
try read-secret k get secret precious -o name
try list-configmaps k get configmaps -o name
try create-configmap k create configmap intruder-notes --from-literal=a=b
# Server-side apply patches without reading first (kubectl patch would GET,
# which RBAC refuses before the policy is asked).
apply() { printf '%s' "$1" | kubectl -n "$NS" apply --server-side --force-conflicts --field-manager=longtask.dev/worker -f -; }
replace() { stamp "$1" | kubectl -n "$NS" replace -f -; }
create() { stamp "$1" | kubectl -n "$NS" create -f -; }
try patch-configmap apply '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"mode":"evil"}}'
try replace-configmap replace '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"mode":"evil"}}'
try forge-victim-result replace "$FORGED"
try patch-victim-result apply '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victim-result"},"data":{"result":"forged"}}'
try delete-victim-result k delete configmap victim-result
try patch-victim-status k patch task victim --subresource=status --type=merge -p '{"status":{"result":"forged","reason":"Forged"}}'
try create-task sh -c 'printf "%s" "$TASK" | kubectl -n "$NS" create -f -'
try own-job-result create "$OWN"
echo ATTEMPTS-DONE
"#;

pub async fn worker_credentials_confined(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    secrets_and_settings(&ns)?;
    confined(&c, &ns, "longtask-worker", ATTEMPTS).await
}

/// A Task may run as an account of its own (spec.podTemplate
/// .serviceAccountName): the program has that account's rights (it reads a
/// Secret only that account may read) and the worker writes the result,
/// while the same intruder, now with that account's credentials, is
/// refused everything else, as for longtask-worker.
pub async fn own_account_reads_its_secret_and_stays_confined(
    c: Arc<Cluster>,
    ns: TestNs,
) -> Result<()> {
    secrets_and_settings(&ns)?;
    ns.k(&["create", "serviceaccount", "analytics"])?;
    ns.k(&[
        "annotate",
        "serviceaccount",
        "analytics",
        "longtask.dev/worker=true",
    ])?;
    ns.k(&[
        "create",
        "role",
        "read-precious",
        "--verb=get",
        "--resource=secrets",
        "--resource-name=precious",
    ])?;
    ns.k(&[
        "create",
        "rolebinding",
        "read-precious",
        "--role=read-precious",
        &format!("--serviceaccount={}:analytics", ns.name),
    ])?;
    ns.apply(&sh_task(
        "reader",
        r#"kubectl get secret precious -o jsonpath='{.data.k}' | base64 -d > "$LONGTASK_RESULT""#,
        &format!(
            "{}  podTemplate:\n    serviceAccountName: analytics\n",
            c.kubectl_spec()
        ),
    ))?;
    let t = wait::condition(&tasks(&ns.client, &ns.name), "reader", "Complete", MINUTE).await?;
    ensure!(
        t["status"]["result"].as_str().map(str::trim) == Some("v"),
        "reader: {}",
        t["status"]
    );
    let subjects = ns.k(&[
        "get",
        "rolebinding",
        "longtask-worker",
        "-o",
        "jsonpath={.subjects[*].name}",
    ])?;
    ensure!(
        subjects.split_whitespace().any(|s| s == "analytics"),
        "RoleBinding longtask-worker subjects: {subjects:?}"
    );
    // The binding lasts only while a Task needs the account (plus a short
    // grace): a Task that holds it keeps it bound while the intruder runs,
    // however slowly its pod starts (container nodes took over 30 s).
    ns.apply(&sh_task(
        "holder",
        "sleep 600",
        &format!(
            "{}  podTemplate:\n    serviceAccountName: analytics\n",
            c.kubectl_spec()
        ),
    ))?;
    wait::condition(&tasks(&ns.client, &ns.name), "holder", "Running", MINUTE).await?;
    // The account's own right stays; everything else is refused as before.
    let attempts: Vec<(&str, Outcome)> = ATTEMPTS
        .iter()
        .map(|&(n, o)| {
            if n == "read-secret" {
                (n, Outcome::Allowed)
            } else {
                (n, o)
            }
        })
        .collect();
    confined(&c, &ns, "analytics", &attempts).await
}

/// The Secret `precious` and the ConfigMap `settings` the intruder aims at.
fn secrets_and_settings(ns: &TestNs) -> Result<()> {
    ns.k(&[
        "create",
        "secret",
        "generic",
        "precious",
        "--from-literal=k=v",
    ])?;
    ns.k(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=mode=safe",
    ])?;
    Ok(())
}

/// A victim Task completes; then the intruder Job, running as `account`,
/// makes every attempt, each with the outcome `attempts` says, and nothing
/// of the victim's, nor `settings`, changes.
async fn confined(
    c: &Cluster,
    ns: &TestNs,
    account: &str,
    attempts: &[(&str, Outcome)],
) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    ns.apply(&sh_task(
        "victim",
        r#"printf 'the real result' > "$LONGTASK_RESULT""#,
        "",
    ))?;
    let before = wait::condition(&api, "victim", "Complete", MINUTE).await?;
    let cms: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    let result_before = cms.get("victim-result").await?;

    // The intruder knows everything a worker could learn: the victim's
    // Task and Job UIDs.
    let task_uid = before["metadata"]["uid"].as_str().context("victim uid")?;
    let job_uid = before["status"]["jobUid"]
        .as_str()
        .context("victim jobUid")?;
    let result_cm = |name: &str, task: &str| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "labels": {"longtask.dev/task-uid": task_uid, "longtask.dev/job-uid": job_uid},
                "annotations": {
                    "longtask.dev/writer-pod": "__POD__",
                    "longtask.dev/writer-pod-uid": "__UID__",
                },
                "ownerReferences": [{
                    "apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
                    "name": task, "uid": task_uid,
                }],
            },
            "data": {"result": "forged", "exitCode": "0"},
        })
        .to_string()
    };
    let forged = result_cm("victim-result", "victim");
    let own = result_cm("intruder-result", "intruder");
    let task = json!({
        "apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
        "metadata": {"name": "spawned"}, "spec": {"command": ["true"]},
    })
    .to_string();
    ns.apply(&intruder_job(
        c.kubectl_image(),
        &forged,
        &own,
        &task,
        account,
    ))?;
    // Polled, not `kubectl wait`: that fails at once when its first read
    // does not find the Job (seen once in CI right after the apply).
    let jobs: Api<DynamicObject> =
        Api::namespaced_with(ns.client.clone(), &ns.name, &ApiResource::erase::<Job>(&()));
    wait::condition(&jobs, "intruder", "Complete", MINUTE).await?;
    let logs = ns.k(&["logs", "job/intruder"])?;
    ensure!(
        logs.contains("ATTEMPTS-DONE"),
        "the intruder did not finish:\n{logs}"
    );
    let seen = parse(&logs, account);
    let mut wrong = Vec::new();
    for (name, want) in attempts {
        let got = seen.get(*name).copied();
        println!("confined ({account}): {name}: {got:?}");
        if got != Some(*want) {
            wrong.push(format!("{name}: want {want:?}, got {got:?}"));
        }
    }
    if !wrong.is_empty() {
        bail!("{}\nintruder log:\n{logs}", wrong.join("\n"));
    }

    // Nothing changed.
    let after = api.get("victim").await?;
    let after = serde_json::to_value(after)?;
    ensure!(
        after["status"] == before["status"],
        "the victim's status changed:\nbefore {}\nafter  {}",
        before["status"],
        after["status"]
    );
    let result_after = cms.get("victim-result").await?;
    ensure!(
        result_after.data == result_before.data
            && result_after.metadata.labels == result_before.metadata.labels
            && result_after.metadata.resource_version == result_before.metadata.resource_version,
        "the victim's result ConfigMap changed: {:?}",
        result_after.data
    );
    let settings = cms.get("settings").await?;
    ensure!(
        settings.data == Some(BTreeMap::from([("mode".into(), "safe".into())])),
        "ConfigMap settings changed: {:?}",
        settings.data
    );
    ensure!(
        cms.get_opt("intruder-notes").await?.is_none(),
        "ConfigMap intruder-notes was created"
    );
    ensure!(
        api.get_opt("spawned").await?.is_none(),
        "Task spawned was created"
    );
    Ok(())
}

/// A Job of this namespace, not a Task's, running as the worker account,
/// restricted-PSS compliant. On process nodes the devcluster runs
/// `command` on the host, where kubectl uses the pod's KUBECONFIG (its bound
/// token); in a container kubectl uses the mounted token (in-cluster).
fn intruder_job(image: &str, forged: &str, own: &str, task: &str, account: &str) -> String {
    let env = |n: &str, v: &str| json!({"name": n, "value": v});
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "intruder"},
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {
                "serviceAccountName": account,
                "restartPolicy": "Never",
                "securityContext": {
                    "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [{
                    "name": "intruder",
                    "image": image,
                    "command": ["sh", "-c", SCRIPT],
                    "env": [
                        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                        env("FORGED", forged),
                        env("OWN", own),
                        env("TASK", task),
                        // kubectl's cache; the image's / is not the uid's.
                        env("HOME", "/tmp"),
                    ],
                    "securityContext": {
                        "allowPrivilegeEscalation": false,
                        "runAsNonRoot": true,
                        "capabilities": {"drop": ["ALL"]},
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                }],
            }},
        },
    })
    .to_string()
}

/// The outcome of each `ATTEMPT` line of the intruder's log.
fn parse(logs: &str, account: &str) -> BTreeMap<String, Outcome> {
    logs.lines()
        .filter_map(|l| l.strip_prefix("ATTEMPT "))
        .filter_map(|l| {
            let (name, rest) = l.split_once(' ')?;
            let (verdict, text) = rest.split_once(':').unwrap_or((rest, ""));
            Some((name.to_owned(), classify(verdict, text, account)))
        })
        .collect()
}

fn classify(verdict: &str, text: &str, account: &str) -> Outcome {
    if verdict == "allowed" {
        Outcome::Allowed
    } else if text.contains("ValidatingAdmissionPolicy 'longtask-worker-results'")
        && text.contains("denied request")
    {
        Outcome::Policy
    } else if text.contains("is forbidden") && text.contains(&format!(":{account}\" cannot")) {
        Outcome::Rbac
    } else {
        Outcome::Other
    }
}

/// The policy admits the real worker's writes where the Job controller cuts
/// pod names (to 58 characters before the random part): a Task of the
/// longest name, and a sharded one whose `<name>-<index>-` is cut too.
pub async fn long_names_write_results(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    let single = format!("l{}", "o".repeat(61) + "g");
    let sharded = format!("s{}", "h".repeat(58) + "d");
    ensure!(single.len() == 63 && sharded.len() == 60);
    let script = r#"echo "r$LONGTASK_SHARD" > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task(&single, script, ""))?;
    ns.apply(&sh_task(&sharded, script, "  shards: 2\n"))?;
    let t = wait::condition(&api, &single, "Complete", MINUTE).await?;
    ensure!(t["status"]["result"] == "r0\n", "{}", t["status"]);
    let t = wait::condition(&api, &sharded, "Complete", MINUTE).await?;
    let results = t["status"]["shardResults"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure!(
        results.len() == 2 && results[0]["result"] == "r0\n" && results[1]["result"] == "r1\n",
        "{}",
        t["status"]
    );
    Ok(())
}
