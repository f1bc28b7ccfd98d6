//! Hostile tenants of a shared cluster (issue 24, items 1-4): users bound to a Role on
//! Tasks, pods and ConfigMaps in their own namespace only, acting through
//! `kubectl --as`. A shard bomb leaves the shared operator's memory bounded.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
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
