//! Issue 24, items 5 to 7: what one tenant of a shared cluster can do to a
//! colleague through longtask's tools. Alice and Bob are users bound to one
//! Role in their namespace only (Tasks, ConfigMaps, pods, Events; Jobs to
//! read), and act through `--as`: a tampered shard result, terminal escape
//! sequences in what `describe`, `get` and `logs` print, an oversized
//! progress message, mount paths written to dodge the CRD rule, a Task
//! re-created while `delete --finished` runs, a hand-made pod posing as an
//! attempt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use longtask_e2e::kubectl::Output;
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};
use serde_json::{Value, json};

const MINUTE: Duration = Duration::from_secs(60);

/// What a tenant may do in their own namespace, and nothing elsewhere.
const TENANT_ROLE: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant}
rules:
- apiGroups: [longtask.dev]
  resources: [tasks]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [configmaps, pods, events]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenants}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
"#;

/// Binds alice and bob to the tenant Role in `ns`.
fn tenants(ns: &TestNs) -> Result<()> {
    ns.apply(TENANT_ROLE)?;
    Ok(())
}

/// `kubectl --as USER -n NS ARGS...`
fn k_as(ns: &TestNs, user: &str, args: &[&str]) -> Result<String> {
    let mut full = vec!["--as", user, "-n", ns.name.as_str()];
    full.extend_from_slice(args);
    ns.kubectl.run(&full)
}

/// `kubectl --as USER -n NS ARGS...` with `input` on stdin.
fn k_as_stdin(ns: &TestNs, user: &str, args: &[&str], input: &str) -> Result<String> {
    let mut full = vec!["--as", user, "-n", ns.name.as_str()];
    full.extend_from_slice(args);
    ns.kubectl.stdin(&full, input)
}

/// `kubectl longtask --as USER -n NS ARGS...`
fn plugin_as(ns: &TestNs, user: &str, args: &[&str]) -> Result<Output> {
    let mut full = vec!["--as", user];
    full.extend_from_slice(args);
    ns.kubectl.plugin(&ns.name, &full)
}

/// The plugin's output cut short for a message.
fn short(out: &Output) -> String {
    out.to_string().chars().take(2000).collect()
}

/// Item 5: two shards of 40,000 bytes; shard 0 spends the 32 KiB status
/// budget, so shard 1's status entry is "". Bob strips the stamp of
/// shard 1's ConfigMap and changes its data: `result --shard 1` refuses it.
pub async fn tenant_shard_tamper_refused(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    tenants(&ns)?;
    let script = r#"if [ "$LONGTASK_SHARD" = 0 ]; then c=a; else c=b; fi
head -c 40000 /dev/zero | tr '\0' "$c" > "$LONGTASK_RESULT""#;
    k_as_stdin(
        &ns,
        "alice",
        &["apply", "-f", "-"],
        &sh_task("sh2", script, "  shards: 2\n"),
    )?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "sh2", "Complete", 2 * MINUTE).await?;
    let entries = &t["status"]["shardResults"];
    ensure!(
        entries[1]["result"] == "" && t["status"]["shardResultsTruncated"] == true,
        "shard 1's status entry should be empty: {entries}"
    );
    for (shard, byte) in [("0", b'a'), ("1", b'b')] {
        let out = plugin_as(&ns, "alice", &["result", "sh2", "--shard", shard])?;
        ensure!(
            out.code == Some(0) && out.stdout == vec![byte; 40_000],
            "genuine shard {shard}: {}",
            short(&out)
        );
    }
    let tampered = tamper(&ns, "sh2-result-1");
    println!("tenant_shard_tamper_refused: bob's tampering: {tampered:?}");
    let out = plugin_as(&ns, "alice", &["result", "sh2", "--shard", "1"])?;
    let evil = String::from_utf8_lossy(&out.stdout).contains("EVIL");
    match tampered {
        Some(_) => ensure!(
            out.code != Some(0) && !evil && out.stderr.contains("error:"),
            "a tampered shard was not refused: {}",
            short(&out)
        ),
        None => ensure!(
            out.code == Some(0) && out.stdout == vec![b'b'; 40_000],
            "nothing changed, yet: {}",
            short(&out)
        ),
    }
    Ok(())
}

/// Bob changes `name` to EVIL by the first way his Role and the admission
/// policies let through: the way that worked, or `None`.
fn tamper(ns: &TestNs, name: &str) -> Option<&'static str> {
    let strip = [
        "annotate",
        "configmap",
        name,
        "longtask.dev/writer-pod-",
        "longtask.dev/writer-pod-uid-",
    ];
    let patch = [
        "patch",
        "configmap",
        name,
        "--type=merge",
        "-p",
        r#"{"data":{"result":"EVIL","resultSize":"4"}}"#,
    ];
    let stripped = k_as(ns, "bob", &strip).is_ok();
    if k_as(ns, "bob", &patch).is_ok() {
        return Some(if stripped {
            "stamp stripped, data patched"
        } else {
            "data patched"
        });
    }
    let got = k_as(ns, "bob", &["get", "configmap", name, "-o", "json"]).ok()?;
    let mut cm: Value = serde_json::from_str(&got).ok()?;
    if let Some(m) = cm["metadata"].as_object_mut() {
        for k in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "managedFields",
            "annotations",
        ] {
            m.remove(k);
        }
    }
    cm["data"]["result"] = json!("EVIL");
    cm["data"]["resultSize"] = json!("4");
    k_as(ns, "bob", &["delete", "configmap", name]).ok()?;
    k_as_stdin(ns, "bob", &["create", "-f", "-"], &cm.to_string()).ok()?;
    Some("deleted and made again, unstamped")
}

/// The characters a terminal would act on: C0 controls but newline and
/// tab, DEL, C1 (U+0080..U+009F), and the bidirectional controls that
/// reorder a line (U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069).
fn controls(text: &str) -> Vec<String> {
    text.chars()
        .filter(|c| {
            let n = u32::from(*c);
            (n < 0x20 && *c != '\n' && *c != '\t')
                || (0x7f..=0x9f).contains(&n)
                || matches!(n, 0x061c | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069)
        })
        .map(|c| format!("{c:?}"))
        .collect()
}

/// A program that writes terminal escape sequences into its progress, its
/// output (so the log tail) and its result.
const ESCAPES: &str = r#"printf '50 \033]0;pwned\007 copying \302\2332J\n' >> "$LONGTASK_PROGRESS"
printf 'log \033]52;c;ZXZpbA==\007 \033[8mhidden\n'
sleep 4
printf '\033]0;title\007\033[2J\302\233done' > "$LONGTASK_RESULT""#;

/// Item 6: a program's progress, log tail and result, and an Event Bob
/// made, all holding OSC 52, OSC 0, clear-screen and hidden-text sequences,
/// reach `describe`, `get`, `logs` and `wait` only as visible text.
pub async fn tenant_escapes_made_visible(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    tenants(&ns)?;
    k_as_stdin(
        &ns,
        "alice",
        &["apply", "-f", "-"],
        &sh_task("esc", ESCAPES, ""),
    )?;
    let api = tasks(&ns.client, &ns.name);
    let t = match wait::condition(&api, "esc", "Complete", 2 * MINUTE).await {
        Ok(t) => t,
        Err(e) => {
            let pod = longtask_e2e::operator::leader_pod(&c).await?;
            let log = c
                .kubectl
                .run(&["-n", longtask_e2e::SYSTEM_NS, "logs", &pod, "--tail=40"])?;
            bail!("{e:#}\nleader's log:\n{log}");
        }
    };
    let uid = t["metadata"]["uid"].as_str().context("uid")?;
    let now = Timestamp::now().to_string();
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "esc.bob"},
        "involvedObject": {"apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
            "name": "esc", "namespace": ns.name, "uid": uid},
        "type": "Normal", "reason": "Note", "count": 1,
        "message": "event \u{1b}]52;c;ZXZpbA==\u{7} \u{9b}2J end \u{202e}gnp.exe",
        "firstTimestamp": now, "lastTimestamp": now,
        "source": {"component": "bob"},
    });
    k_as_stdin(&ns, "bob", &["create", "-f", "-"], &event.to_string())?;
    let describe = plugin_as(&ns, "bob", &["describe", "esc"])?;
    let shown = describe.stdout();
    for want in [
        "^[]0;pwned^G copying \\u{9b}2J",
        "log ^[]52;c;ZXZpbA==^G ^[[8mhidden",
        "event ^[]52;c;ZXZpbA==^G \\u{9b}2J end \\u{202e}gnp.exe",
    ] {
        ensure!(shown.contains(want), "describe lacks {want:?}:\n{shown}");
    }
    let runs = [
        ("describe", describe),
        ("get", plugin_as(&ns, "bob", &["get", "esc"])?),
        ("get (list)", plugin_as(&ns, "bob", &["get"])?),
        (
            "logs --all-attempts",
            plugin_as(&ns, "bob", &["logs", "esc", "--all-attempts"])?,
        ),
        ("wait", plugin_as(&ns, "bob", &["wait", "esc"])?),
    ];
    for (what, out) in &runs {
        ensure!(out.code == Some(0), "{what}: {}", short(out));
        let stderr = controls(&out.stderr);
        ensure!(stderr.is_empty(), "{what}: {stderr:?} on stderr: {out}");
        // The program's own log lines and result go out exactly into a
        // pipe (only a terminal gets them made visible): look at the rest.
        let text = out.stdout();
        let ours: Vec<&str> = match *what {
            "logs --all-attempts" => text.lines().filter(|l| l.starts_with("==>")).collect(),
            "wait" => Vec::new(),
            _ => text.lines().collect(),
        };
        let found = controls(&ours.join("\n"));
        ensure!(found.is_empty(), "{what}: {found:?} in\n{text}");
    }
    Ok(())
}

/// Item 7a: a program replaces its own result ConfigMap (its worker account
/// may create and replace it, stamped with its own pod) with progress whose
/// message is 600,000 bytes. The status keeps 256.
pub async fn tenant_progress_message_bounded(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    tenants(&ns)?;
    let script = r#"echo "10 start" >> "$LONGTASK_PROGRESS"
sleep 4
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
f=$(mktemp)
{ printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s-result",' "$LONGTASK_TASK_NAME"
  printf '"labels":{"longtask.dev/task-uid":"%s","longtask.dev/job-uid":"%s"},' "$LONGTASK_TASK_UID" "$LONGTASK_JOB_UID"
  printf '"annotations":{"longtask.dev/writer-pod":"%s","longtask.dev/writer-pod-uid":"%s"},' "$LONGTASK_POD_NAME" "$LONGTASK_POD_UID"
  printf '"ownerReferences":[{"apiVersion":"longtask.dev/v1alpha1","kind":"Task","name":"%s","uid":"%s"}]},' "$LONGTASK_TASK_NAME" "$LONGTASK_TASK_UID"
  printf '"data":{"progress.percent":"77","progress.updatedAt":"%s","progress.firstPercent":"10","progress.firstAt":"%s","progress.message":"' "$now" "$now"
  head -c 600000 /dev/zero | tr '\0' x; printf '"}}'; } > "$f"
kubectl -n "$LONGTASK_NAMESPACE" replace -f "$f"
rm -f "$f"
sleep 30"#;
    k_as_stdin(
        &ns,
        "alice",
        &["apply", "-f", "-"],
        &sh_task("big-progress", script, c.kubectl_spec()),
    )?;
    let api = tasks(&ns.client, &ns.name);
    wait::until(2 * MINUTE, "progress 77% in the status", || {
        let api = api.clone();
        async move {
            let t = serde_json::to_value(api.get("big-progress").await?)?;
            ensure!(
                t["status"]["phase"] == "Running",
                "not running: {}",
                t["status"]
            );
            Ok(t["status"]["progress"]["percent"] == 77)
        }
    })
    .await?;
    let t = serde_json::to_value(api.get("big-progress").await?)?;
    let msg = t["status"]["progress"]["message"]
        .as_str()
        .unwrap_or_default();
    println!(
        "tenant_progress_message_bounded: status.progress.message is {} bytes",
        msg.len()
    );
    ensure!(
        msg.len() <= 256 && msg.starts_with("xxxx"),
        "status.progress.message is {} bytes",
        msg.len()
    );
    Ok(())
}

/// Item 7b: mount paths that mean /longtask-bin or /longtask however they
/// are written are refused at apply; look-alikes elsewhere are not.
pub async fn tenant_mount_paths_normalised(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    tenants(&ns)?;
    let task = |path: &str| {
        sh_task(
            "mnt",
            "true",
            &format!(
                "  volumeMounts: [{{name: data, mountPath: {}}}]\n  podTemplate:\n    volumes: [{{name: data, emptyDir: {{}}}}]\n",
                serde_json::to_string(path).unwrap_or_default()
            ),
        )
    };
    let dry = ["apply", "--dry-run=server", "-f", "-"];
    let refused = [
        "/longtask-bin",
        "//longtask-bin",
        "/./longtask-bin",
        "/longtask-bin/",
        "/longtask-bin/.",
        "longtask-bin",
        "./longtask-bin/x",
        "/longtask//sub",
        "/longtask/../longtask-bin",
        "/tmp/../longtask-bin",
        "/data/..",
    ];
    let mut wrong = Vec::new();
    for path in refused {
        match k_as_stdin(&ns, "alice", &dry, &task(path)) {
            Ok(_) => wrong.push(format!("{path:?} accepted")),
            Err(e) => {
                let e = format!("{e:#}");
                if !(e.contains("mounted by longtask") || e.contains("'..'")) {
                    wrong.push(format!("{path:?} refused for another reason: {e}"));
                }
            }
        }
    }
    for path in [
        "/data",
        "/longtask-binx",
        "/.longtask-bin",
        "/data/longtask-bin",
        "/..data",
    ] {
        if let Err(e) = k_as_stdin(&ns, "alice", &dry, &task(path)) {
            wrong.push(format!("{path:?} refused: {e:#}"));
        }
    }
    if !wrong.is_empty() {
        bail!("mount paths:\n{}", wrong.join("\n"));
    }
    Ok(())
}

/// Item 7c: `delete --finished` lists 80 finished Tasks and deletes them
/// one by one, `a-victim` last; meanwhile a colleague deletes `a-victim` and
/// makes it again (not finished). The new `a-victim` stays.
pub async fn tenant_delete_keeps_recreated_task(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const OLD: usize = 79;
    tenants(&ns)?;
    // No Job starts here: the Tasks finish by their cancel alone.
    ns.cap_active(0)?;
    let api = tasks(&ns.client, &ns.name);
    let cancelled = |name: &str| sh_task(name, "true", "  cancel: true\n");
    let all: String = (0..OLD)
        .map(|i| cancelled(&format!("old-{i:02}")) + "---\n")
        .collect();
    k_as_stdin(&ns, "alice", &["apply", "-f", "-"], &all)?;
    wait::until(2 * MINUTE, "the old Tasks to finish", || {
        let api = api.clone();
        async move { Ok(finished(&api).await? == OLD) }
    })
    .await?;
    k_as_stdin(&ns, "alice", &["apply", "-f", "-"], &cancelled("a-victim"))?;
    let old = wait::condition(&api, "a-victim", "Finished", MINUTE).await?;
    let old_uid = old["metadata"]["uid"].as_str().context("uid")?.to_owned();

    let mut delete = ns
        .kubectl
        .plugin_spawn(&ns.name, &["--as", "alice", "delete", "--finished"])?;
    // Once the first Task is gone the plugin has listed: replace a-victim.
    let start = Instant::now();
    while api.list(&ListParams::default()).await?.items.len() > OLD {
        ensure!(
            start.elapsed() < MINUTE,
            "delete --finished deleted nothing"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let gone = api.delete("a-victim", &DeleteParams::default()).await;
    ensure!(
        gone.is_ok(),
        "delete --finished reached a-victim first (race lost; more Tasks needed): {gone:?}"
    );
    let fresh: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
        "metadata": {"name": "a-victim"},
        "spec": {"command": ["sleep", "60"]},
    }))?;
    while let Err(e) = api.create(&PostParams::default(), &fresh).await {
        ensure!(start.elapsed() < MINUTE, "a-victim not made again: {e}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let code = delete.exit(2 * MINUTE).await?;
    let lines: Vec<String> = delete.lines().into_iter().map(|(_, l)| l).collect();
    let stderr = delete.stderr();
    ensure!(code == Some(0), "delete exit {code:?}: {lines:?} {stderr}");
    let now = api.get_opt("a-victim").await?;
    let now_uid = now.as_ref().and_then(|t| t.metadata.uid.clone());
    ensure!(
        now_uid.is_some() && now_uid.as_deref() != Some(old_uid.as_str()),
        "the re-created a-victim was deleted: {lines:?}\n{stderr}"
    );
    ensure!(
        stderr.contains("task/a-victim was not deleted"),
        "no word of the skipped Task: {lines:?}\n{stderr}"
    );
    Ok(())
}

/// How many Tasks have the Finished condition.
async fn finished(api: &kube::Api<DynamicObject>) -> Result<usize> {
    let list = api.list(&ListParams::default()).await?;
    let mut n = 0;
    for t in list.items {
        if wait::has_condition(&serde_json::to_value(t)?, "Finished") {
            n += 1;
        }
    }
    Ok(n)
}

/// Item 7d: Bob makes a pod with the labels of Alice's Task; `logs` shows
/// the Task's own pod only (before: the newest pod with the labels, his).
pub async fn tenant_logs_only_job_pods(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    tenants(&ns)?;
    k_as_stdin(
        &ns,
        "alice",
        &["apply", "-f", "-"],
        &sh_task("lg", "echo genuine line; sleep 20", ""),
    )?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "lg", "Running", MINUTE).await?;
    let task_uid = t["metadata"]["uid"].as_str().context("uid")?;
    wait::until(MINUTE, "the genuine log line", || {
        let out = plugin_as(&ns, "alice", &["logs", "lg"]);
        async move { Ok(out?.stdout().contains("genuine line")) }
    })
    .await?;
    let impostor = json!({
        "apiVersion": "v1", "kind": "Pod",
        // The Task's labels only: the Job controller's own (controller-uid)
        // are refused by the admission policy longtask-worker-pods.
        "metadata": {"name": "lg-impostor", "labels": {
            "longtask.dev/task-uid": task_uid, "longtask.dev/task-name": "lg",
        }},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": true, "runAsUser": 65532,
                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "worker", "image": c.kubectl_image(),
                "command": ["sh", "-c", "echo IMPOSTOR; sleep 30"],
                "securityContext": {"allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}}}],
        },
    });
    k_as_stdin(&ns, "bob", &["create", "-f", "-"], &impostor.to_string())?;
    for args in [&["logs", "lg"][..], &["logs", "lg", "--all-attempts"]] {
        let out = plugin_as(&ns, "alice", args)?;
        let all = format!("{}{}", out.stdout(), out.stderr);
        ensure!(
            out.code == Some(0) && all.contains("genuine line"),
            "{args:?}: {}",
            short(&out)
        );
        ensure!(
            !all.contains("IMPOSTOR") && !all.contains("lg-impostor"),
            "{args:?} shows the hand-made pod: {}",
            short(&out)
        );
    }
    Ok(())
}
