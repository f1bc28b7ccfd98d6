//! What a hostile or careless user tried, each pinned (issue 9): results
//! forged through a colliding Task's pod, a result ConfigMap made before
//! the Task, a Task blocked by a Job that later went away, Jobs removed by
//! their TTL while no operator ran, a hand-edited status, a Task cancelled
//! before its pod started, a program that could not start.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use longtask_e2e::{Cluster, Runtime, TestNs, operator, procs, sh_task, tasks, wait};

use super::faults::scale;
use serde_json::{Value, json};

const MINUTE: Duration = Duration::from_secs(60);

/// Writes the ConfigMap `coll-3-result` as the victim's result, stamped
/// with pod `$1` (UID `$2`), by `$3` (replace, apply); prints one line.
const FORGE: &str = r#"
forged() {
  printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"coll-3-result",'
  printf '"labels":{"longtask.dev/task-uid":"%s","longtask.dev/job-uid":"%s"},' "$VICTIM_TASK_UID" "$VICTIM_JOB_UID"
  printf '"annotations":{"longtask.dev/writer-pod":"%s","longtask.dev/writer-pod-uid":"%s"},' "$1" "$2"
  printf '"ownerReferences":[{"apiVersion":"longtask.dev/v1alpha1","kind":"Task","name":"coll-3","uid":"%s"}]},' "$VICTIM_TASK_UID"
  printf '"data":{"result":"FORGED","exitCode":"0","resultSize":"6","resultEncoding":"plain"}}'
}
try() {
  name=$1; shift
  if out=$("$@" 2>&1); then v=allowed; else v=refused; fi
  echo "$name $v: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)" >> "$LONGTASK_RESULT"
}
k() { kubectl -n "$LONGTASK_NAMESPACE" "$@"; }
own() { forged "$LONGTASK_POD_NAME" "$LONGTASK_POD_UID"; }
theirs() { forged "$VICTIM_POD" "$VICTIM_POD_UID"; }
# Replace, else create; again if the victim's worker created it between the two.
replace_own() {
  for _ in 1 2 3; do own | k replace -f - && return 0; own | k create -f - && return 0; done
  return 1
}
replace_theirs() { theirs | k replace -f -; }
apply_own() { own | k apply --server-side --force-conflicts --field-manager=longtask.dev/worker -f -; }
"#;

/// The `a` / `a-3` collision: shard 3 of the sharded Task `coll` runs pods
/// named `coll-3-*`, like the pods of the plain Task `coll-3`, so the
/// admission policy lets it write `coll-3-result`. It does, in a loop, by
/// every verb its account has, while `coll-3` finishes: the victim never
/// reports the forged result, and forgeries that keep the victim's stamp
/// are refused at admission.
pub async fn collision_forgery_refused(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    ns.apply(&sh_task(
        "coll-3",
        r#"sleep 8; printf real > "$LONGTASK_RESULT""#,
        "",
    ))?;
    let (victim, victim_pod) = running_pod(&ns, "coll-3").await?;
    let task_uid = victim["metadata"]["uid"].as_str().context("uid")?;
    let job_uid = victim["status"]["jobUid"].as_str().context("jobUid")?;
    let script = format!(
        r#"{FORGE}
if [ "$LONGTASK_SHARD" != 3 ]; then echo ok > "$LONGTASK_RESULT"; exit 0; fi
: > "$LONGTASK_RESULT"
try replace-own-stamp replace_own
try keep-victim-stamp replace_theirs
try apply-data apply_own
try patch-data k patch configmap coll-3-result --type=merge -p '{{"data":{{"result":"FORGED"}}}}'
end=$(( $(date +%s) + 25 ))
while [ "$(date +%s)" -lt "$end" ]; do
  apply_own >/dev/null 2>&1; replace_own >/dev/null 2>&1; sleep 0.2
done
"#
    );
    let env = format!(
        "{}  shards: 4\n  parallelism: 4\n  env:\n  - {{name: VICTIM_TASK_UID, value: {task_uid}}}\n  - {{name: VICTIM_JOB_UID, value: {job_uid}}}\n  - {{name: VICTIM_POD, value: {}}}\n  - {{name: VICTIM_POD_UID, value: {}}}\n",
        c.kubectl_spec(),
        victim_pod.0,
        victim_pod.1
    );
    ns.apply(&sh_task("coll", &script, &env))?;
    let victim = wait::condition(&api, "coll-3", "Finished", Duration::from_secs(90)).await?;
    let st = &victim["status"];
    ensure!(
        st["result"] != "FORGED",
        "the victim reports the forged result: {st}"
    );
    let ok = (st["phase"] == "Completed" && st["result"] == "real")
        || (st["phase"] == "Failed"
            && st["reason"] == "ResultMissing"
            && st["message"]
                .as_str()
                .unwrap_or_default()
                .contains("coll-3-"));
    ensure!(ok, "victim: {st}");
    let attacker = wait::condition(&api, "coll", "Finished", Duration::from_secs(90)).await?;
    let verdicts = attacker["status"]["shardResults"][3]["result"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    println!(
        "collision_forgery_refused: victim {} {}; attempts:\n{verdicts}",
        st["phase"], st["reason"]
    );
    for (name, want) in [
        ("keep-victim-stamp refused", "longtask-worker-results"),
        ("apply-data refused", "cannot patch"),
        ("patch-data refused", "is forbidden"),
        ("replace-own-stamp allowed", ""),
    ] {
        let line = verdicts
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("no verdict {name:?} in {verdicts:?}"))?;
        ensure!(line.contains(want), "{name}: {line}");
    }
    if st["phase"] == "Failed" {
        let events = ns.k(&[
            "get",
            "events",
            "--field-selector=involvedObject.name=coll-3,reason=ForeignResult",
            "-o",
            "name",
        ])?;
        ensure!(!events.trim().is_empty(), "no ForeignResult Event");
    }
    Ok(())
}

/// Waits for the Task's pod to exist; returns the Task and (pod name, UID).
async fn running_pod(ns: &TestNs, task: &str) -> Result<(Value, (String, String))> {
    let api = tasks(&ns.client, &ns.name);
    wait::condition(&api, task, "Running", MINUTE).await?;
    let mut found = None;
    wait::until(MINUTE, "the Task's pod", || {
        let out = ns.k(&[
            "get",
            "pods",
            &format!("-l=job-name={task}"),
            "-o=jsonpath={.items[0].metadata.name} {.items[0].metadata.uid}",
        ]);
        let pair = out.ok().and_then(|o| {
            let (n, u) = o.trim().split_once(' ')?;
            (!n.is_empty() && !u.is_empty()).then(|| (n.to_owned(), u.to_owned()))
        });
        let done = pair.is_some();
        found = pair;
        async move { Ok(done) }
    })
    .await?;
    let t = serde_json::to_value(api.get(task).await?)?;
    Ok((t, found.unwrap_or_default()))
}

/// `kubectl -n NS ARGS...` with `input` on stdin.
fn stdin(ns: &TestNs, args: &[&str], input: &str) -> Result<String> {
    let mut full = vec!["-n", ns.name.as_str()];
    full.extend_from_slice(args);
    ns.kubectl.stdin(&full, input)
}

/// Pods that run as longtask-worker come from the Job controller only, and
/// nobody but a worker sets or changes a result's stamp, admins included.
pub async fn worker_identity_cannot_be_borrowed(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    ns.apply(&sh_task(
        "victim",
        r#"printf real > "$LONGTASK_RESULT""#,
        "",
    ))?;
    let t = wait::condition(&api, "victim", "Complete", MINUTE).await?;
    let job_uid = t["status"]["jobUid"].as_str().context("jobUid")?;
    // A pod named like the victim's, claiming its Job, as the worker.
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "victim-zzzzz", "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": "victim", "uid": job_uid,
            "controller": true,
        }]},
        "spec": {
            "serviceAccountName": "longtask-worker", "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": true, "runAsUser": 65532,
                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "worker", "image": "busybox:1.36", "command": ["true"],
                "securityContext": {"allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}}}],
        },
    });
    let out = stdin(&ns, &["create", "-f", "-"], &pod.to_string());
    refused_by(out, "longtask-worker-pods")?;
    // The victim's result, its content changed by someone else.
    let cms: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    let mut cm = serde_json::to_value(cms.get("victim-result").await?)?;
    cm["data"]["result"] = json!("FORGED");
    let out = stdin(&ns, &["replace", "-f", "-"], &cm.to_string());
    refused_by(out, "longtask-result-stamps")?;
    // A new ConfigMap carrying a stamp.
    let stamped = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "stamped", "annotations": {
            "longtask.dev/writer-pod": "victim-abcde", "longtask.dev/writer-pod-uid": "x"}},
        "data": {"exitCode": "0"},
    });
    let out = stdin(&ns, &["create", "-f", "-"], &stamped.to_string());
    refused_by(out, "longtask-result-stamps")?;
    // A label added by hand is fine.
    ns.k(&["label", "configmap", "victim-result", "checked=yes"])?;
    Ok(())
}

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

/// A result ConfigMap someone made before the Task is replaced whole by the
/// worker's first write: when the worker then dies before its final write,
/// the Task reports the death, never the stale keys.
pub async fn precreated_result_not_taken_over(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.k(&[
        "create",
        "configmap",
        "pre-result",
        "--from-literal=result=PRE-CREATED",
        "--from-literal=exitCode=0",
    ])?;
    // Progress first (the worker writes it within a second, and the Task
    // shows it), then the worker is SIGKILLed from outside: no final write.
    // (Not by its own program: in a container the worker is PID 1, which
    // ignores a SIGKILL sent from inside.)
    let marker = format!("longtask-e2e-pre-{}", ns.name);
    ns.apply(&sh_task(
        "pre",
        &format!(r#"echo "50 half" >> "$LONGTASK_PROGRESS"; sleep 300; echo {marker}"#),
        "",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    wait::until(MINUTE, "progress 50 shown", || async {
        let t = serde_json::to_value(api.get("pre").await?)?;
        Ok(t["status"]["progress"]["percent"] == 50)
    })
    .await?;
    let worker = procs::workers_with(&marker, &[]);
    ensure!(worker.len() == 1, "workers of pre: {worker:?}");
    procs::signal(worker[0], "KILL")?;
    let t = wait::condition(&api, "pre", "Finished", MINUTE).await?;
    let st = &t["status"];
    ensure!(
        st["phase"] == "Failed" && st["exitCode"] == 137 && st.get("result").is_none(),
        "status: {st}"
    );
    let cms: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &ns.name);
    let data = cms.get("pre-result").await?.data.unwrap_or_default();
    ensure!(
        !data.contains_key("result") && !data.contains_key("exitCode"),
        "the stale keys survived the worker's write: {data:?}"
    );
    Ok(())
}

/// A Task whose name another Job held starts once that Job is deleted.
pub async fn blocked_task_starts_when_job_goes(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "taken"},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": true, "runAsUser": 65532,
                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": c.kubectl_image(), "command": ["sleep", "300"],
                "securityContext": {"allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}}}],
        }}},
    });
    ns.apply(&job.to_string())?;
    ns.apply(&sh_task("taken", r#"printf mine > "$LONGTASK_RESULT""#, ""))?;
    let api = tasks(&ns.client, &ns.name);
    wait::until(MINUTE, "JobOwnedByOther", || async {
        let t = serde_json::to_value(api.get("taken").await?)?;
        Ok(t["status"]["reason"] == "JobOwnedByOther")
    })
    .await?;
    ns.k(&["delete", "job", "taken", "--wait=true"])?;
    let t = wait::condition(&api, "taken", "Complete", Duration::from_secs(90)).await?;
    ensure!(t["status"]["result"] == "mine", "status: {}", t["status"]);
    Ok(())
}

/// Jobs removed by `ttlSecondsAfterFinished` while no operator runs: a
/// sharded Task finishes from its shard results, and a failed Task gets the
/// reason it gets when the operator is there (BackoffLimitExceeded).
pub async fn ttl_while_operator_down(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    ns.apply(&sh_task(
        "lost-shards",
        r#"sleep 12; echo "r$LONGTASK_SHARD" > "$LONGTASK_RESULT""#,
        "  shards: 2\n  ttlSecondsAfterFinished: 1\n",
    ))?;
    ns.apply(&sh_task(
        "lost-fail",
        "sleep 12; exit 3",
        "  ttlSecondsAfterFinished: 1\n",
    ))?;
    for t in ["lost-shards", "lost-fail"] {
        wait::condition(&api, t, "Running", MINUTE).await?;
    }
    scale(&c, 0)?;
    let res = async {
        wait::until(MINUTE, "no operator pods", || async {
            Ok(operator::pods(&c.client).await?.is_empty())
        })
        .await?;
        wait::until(
            Duration::from_secs(90),
            "both Jobs removed by their TTL",
            || async { Ok(ns.k(&["get", "jobs", "-o", "name"])?.trim().is_empty()) },
        )
        .await
    }
    .await;
    scale(&c, 2)?;
    res?;
    let t = wait::condition(&api, "lost-shards", "Complete", Duration::from_secs(90)).await?;
    let results: Vec<&str> = t["status"]["shardResults"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["result"].as_str()).collect())
        .unwrap_or_default();
    ensure!(results == ["r0\n", "r1\n"], "status: {}", t["status"]);
    let t = wait::condition(&api, "lost-fail", "Failed", Duration::from_secs(90)).await?;
    let st = &t["status"];
    ensure!(
        st["reason"] == "BackoffLimitExceeded" && st["exitCode"] == 3,
        "status: {st}"
    );
    Ok(())
}

/// Conditions follow the phase: a terminal status edited by hand to say
/// Finished=False is set right, so `kubectl wait` ends.
pub async fn conditions_follow_the_phase(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    ns.apply(&sh_task("edited", r#"printf 1 > "$LONGTASK_RESULT""#, ""))?;
    wait::condition(&api, "edited", "Complete", MINUTE).await?;
    let patch = json!({"status": {"conditions": [{
        "type": "Finished", "status": "False", "reason": "EditedByHand", "message": "",
        "lastTransitionTime": "2020-01-01T00:00:00Z",
    }]}});
    ns.k(&[
        "patch",
        "task",
        "edited",
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch.to_string(),
    ])?;
    ns.k(&[
        "wait",
        "--for=condition=Finished",
        "task/edited",
        "--timeout=30s",
    ])?;
    let t = wait::condition(&api, "edited", "Complete", Duration::from_secs(30)).await?;
    ensure!(t["status"]["result"] == "1", "status: {}", t["status"]);
    Ok(())
}

/// Cancelling a Task whose pod never started says so, not "SIGTERM".
pub async fn cancel_before_start_says_so(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    ns.apply(&sh_task(
        "never",
        "true",
        "  resources: {requests: {cpu: \"500\"}}\n",
    ))?;
    wait::condition(&api, "never", "Waiting", MINUTE).await?;
    ns.k(&[
        "patch",
        "task",
        "never",
        "--type=merge",
        "-p",
        r#"{"spec":{"cancel":true}}"#,
    ])?;
    let t = wait::condition(&api, "never", "Failed", MINUTE).await?;
    let msg = t["status"]["message"].as_str().unwrap_or_default();
    ensure!(
        t["status"]["reason"] == "Cancelled"
            && msg.contains("before the program started")
            && msg.contains("Unschedulable")
            && !msg.contains("SIGTERM"),
        "status: {}",
        t["status"]
    );
    Ok(())
}

/// A program the runtime cannot start (an argument over the kernel's
/// 128 KiB limit): the Task says what the runtime said, not only an exit
/// code. A process node reports StartError (exit code 128); runc starts
/// the container and then fails its exec, exit code 1, saying why in the
/// container's log, which the kubelet makes the termination message.
pub async fn start_error_is_named(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let api = tasks(&ns.client, &ns.name);
    let big = "x".repeat(140 * 1024);
    ns.apply(&format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: unstartable\nspec:\n  command: [echo, {big}]\n"
    ))?;
    let t = wait::condition(&api, "unstartable", "Failed", MINUTE).await?;
    let msg = t["status"]["message"].as_str().unwrap_or_default();
    let said = match c.runtime {
        Runtime::Process => "StartError",
        Runtime::Containerd => "log: ",
    };
    ensure!(
        msg.contains(said) && msg.contains("argument list too long"),
        "status: {}",
        t["status"]
    );
    Ok(())
}
