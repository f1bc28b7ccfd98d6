//! Issue 40, holes 1 to 3: what a colleague who may only create, get and
//! list Tasks in the namespace can do to a CronTask. Forged runs (a
//! controller owner reference to the CronTask) are refused by the
//! longtask-cron-runs policy, and runs named after a time to come, made
//! by someone the policy lets through, are ignored by the operator; a run
//! name taken beforehand is told and counted; a per-second Allow CronTask
//! stays within spec.maxActiveRuns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use longtask_e2e::{Cluster, TestNs, tasks, wait};
use serde_json::Value;

use super::cron::{cron, crontasks, events};

const MINUTE: Duration = Duration::from_secs(60);

/// The colleague: Tasks to create, get, list and watch; CronTasks to read
/// (a CronTask's UID is no secret). No update of CronTasks, no delete.
const COLLEAGUE: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: colleague}
rules:
- apiGroups: [longtask.dev]
  resources: [tasks]
  verbs: [get, list, watch, create]
- apiGroups: [longtask.dev]
  resources: [crontasks]
  verbs: [get, list, watch]
# Her own CronTask (it need not exist for the policy's check).
- apiGroups: [longtask.dev]
  resources: [crontasks]
  resourceNames: [mine]
  verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: colleague}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: colleague}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: mallory}
"#;

/// A Task `name` running `sh -c SCRIPT`, with `owner` (a JSON owner
/// reference) if given.
fn task(name: &str, script: &str, owner: Option<&Value>) -> String {
    let owners = owner.map_or(String::new(), |o| format!("  ownerReferences: [{o}]\n"));
    let script = serde_json::to_string(script).unwrap_or_default();
    format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: {name}\n{owners}\
         spec:\n  command: [sh, -c, {script}]\n"
    )
}

/// `kubectl --as mallory -n NS create -f -` of `yaml`.
fn as_colleague(ns: &TestNs, yaml: &str) -> Result<String> {
    ns.kubectl.stdin(
        &["--as", "mallory", "-n", &ns.name, "create", "-f", "-"],
        yaml,
    )
}

/// The Tasks a CronTask `cron` (UID `uid`) controls: (name, phase).
async fn runs(ns: &TestNs, uid: &str) -> Result<Vec<(String, String)>> {
    let list = tasks(&ns.client, &ns.name)
        .list(&ListParams::default())
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter(|t| {
            t.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid && o.controller == Some(true))
        })
        .map(|t| {
            let phase = t.data["status"]["phase"].as_str().unwrap_or_default();
            (t.metadata.name.unwrap_or_default(), phase.to_owned())
        })
        .collect())
}

/// A controller owner reference to CronTask `name`, as its runs carry.
async fn owner_ref(ns: &TestNs, name: &str) -> Result<(String, Value)> {
    let ct = crontasks(ns).get(name).await?;
    let uid = ct.metadata.uid.context("CronTask UID")?;
    let owner = serde_json::json!({"apiVersion": "longtask.dev/v1alpha1", "kind": "CronTask",
        "name": name, "uid": uid, "controller": true});
    Ok((uid, owner))
}

/// Forged runs: the colleague's Tasks with a controller owner reference
/// to the CronTask are refused by the policy; hers naming a CronTask she
/// may edit with this one's UID pass it and are no runs to the operator. The same Tasks made by an
/// admin (whom the policy lets through) are named after a time to come:
/// the operator ignores them (two fail, one completes, one never ends).
/// Genuine completed runs stay (the newest 2),
/// the CronTask is not suspended, lastSuccessfulTime is not ahead.
pub async fn cron_forged_runs_ignored(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(COLLEAGUE)?;
    ns.apply(&cron(
        "nightly",
        "*/3 * * * * *",
        "true",
        "  successfulTasksHistoryLimit: 2\n  stopAfterFailures: 2\n",
    ))?;
    let (uid, owner) = owner_ref(&ns, "nightly").await?;
    let done = |rs: &[(String, String)]| rs.iter().filter(|r| r.1 == "Completed").count();
    // Up to 3 minutes for each wait on pods: on container nodes beside the
    // containers suite's chaos a pod took 12 s to start, with a run due
    // every 3 s ahead of the forged ones.
    wait::until(3 * MINUTE, "two completed runs", || async {
        Ok(done(&runs(&ns, &uid).await?) >= 2)
    })
    .await?;
    for i in 0..3 {
        let name = format!("nightly-999999999{i}");
        let refused = as_colleague(&ns, &task(&name, "exit 1", Some(&owner)));
        let why = format!(
            "{:#}",
            refused
                .as_ref()
                .err()
                .context("a forged run was accepted")?
        );
        ensure!(
            why.contains("may not name CronTask nightly"),
            "refused for another reason: {why}"
        );
    }
    // The victim's UID under the name of a CronTask she may edit passes
    // the policy (it authorizes by the name a reference carries); the
    // operator takes no run from a reference whose name and UID disagree.
    // Named after times 20 s ahead (within the operator's 60 s of clock
    // skew, and after the last run it counted), two failures would
    // otherwise count and suspend it (stopAfterFailures: 2). Seconds off
    // the */3 schedule: no genuine run's name.
    let mut swapped = Vec::new();
    let mut at = Timestamp::now().as_second() + 20;
    let mut mine = owner.clone();
    mine["name"] = "mine".into();
    while swapped.len() < 2 {
        if at % 3 != 0 {
            let name = format!("nightly-{at}");
            as_colleague(&ns, &task(&name, "exit 1", Some(&mine)))
                .with_context(|| format!("{name}, owner named mine with nightly's UID"))?;
            swapped.push(name);
        }
        at += 1;
    }
    // Failed, or gone: the garbage collector checks a reference by name
    // and UID too, finds "mine" dangling and deletes the Task, often before
    // its pod ends on container nodes (the forgery only races it).
    wait::until(
        3 * MINUTE,
        "the name-swapped Tasks to fail or be collected",
        || async {
            let rs = runs(&ns, &uid).await?;
            Ok(swapped.iter().all(|n| {
                rs.iter()
                    .find(|r| &r.0 == n)
                    .is_none_or(|r| r.1 == "Failed")
            }))
        },
    )
    .await?;
    // Who may update the CronTask passes the policy: the operator's guard.
    let forged: Vec<String> = (0..4).map(|i| format!("nightly-999999999{i}")).collect();
    for (i, name) in forged.iter().enumerate() {
        let script = match i {
            0 | 1 => "exit 1",
            2 => "true",
            _ => "sleep 3600",
        };
        ns.apply(&task(name, script, Some(&owner)))?;
    }
    // Ended, or gone (then the check below names it).
    let ended = |rs: &[(String, String)]| {
        forged[..3]
            .iter()
            .filter(|f| {
                rs.iter()
                    .find(|r| r.0 == **f)
                    .is_none_or(|r| matches!(r.1.as_str(), "Failed" | "Completed"))
            })
            .count()
    };
    wait::until(3 * MINUTE, "the forged runs to end", || async {
        Ok(ended(&runs(&ns, &uid).await?) == 3)
    })
    .await?;
    let all_forged_kept = |rs: &[(String, String)]| -> Result<()> {
        for f in &forged {
            ensure!(rs.iter().any(|r| &r.0 == f), "forged {f} deleted: {rs:?}");
        }
        Ok(())
    };
    // A few scheduled times with the forged runs in the cache.
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        all_forged_kept(&runs(&ns, &uid).await?)?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The history keeps 2 genuine completed runs: a run that completed a
    // moment ago may wait for the CronTask's next reconcile to delete the
    // oldest, so a third is seen for that moment.
    let kept = |rs: &[(String, String)]| {
        rs.iter()
            .filter(|r| !forged.contains(&r.0) && r.1 == "Completed")
            .count()
    };
    let seen: std::sync::Mutex<Vec<(String, String)>> = Default::default();
    let two = wait::until(MINUTE, "2 genuine completed runs kept", || async {
        let rs = runs(&ns, &uid).await?;
        all_forged_kept(&rs)?;
        let done = kept(&rs) == 2;
        *seen.lock().unwrap() = rs;
        Ok(done)
    })
    .await;
    let rs = seen.lock().unwrap().clone();
    two.with_context(|| format!("{} genuine completed runs kept, want 2: {rs:?}", kept(&rs)))?;
    let ct = crontasks(&ns).get("nightly").await?;
    ensure!(
        ct.data["spec"]["suspend"].as_bool() != Some(true),
        "suspended by forged failures: {}",
        ct.data["status"]
    );
    let st = &ct.data["status"];
    let last: Timestamp = st["lastSuccessfulTime"]
        .as_str()
        .context("no lastSuccessfulTime")?
        .parse()?;
    ensure!(
        last.as_second() <= Timestamp::now().as_second() + 60,
        "lastSuccessfulTime {last} is ahead"
    );
    ensure!(
        st["consecutiveFailures"].as_i64().unwrap_or_default() == 0,
        "forged failures counted: {st}"
    );
    let mut ignored: Vec<String> = serde_json::from_value(st["ignoredRuns"].clone())?;
    ignored.sort();
    ensure!(
        ignored == forged,
        "status.ignoredRuns {ignored:?}, want {forged:?}"
    );
    let told = events(&ns, "nightly", "ForgedRun")?;
    for f in &forged {
        ensure!(
            told.iter().any(|m| m.contains(f.as_str())),
            "no ForgedRun Event for {f}: {told:?}"
        );
    }
    Ok(())
}

/// Squatted name: the colleague makes a Task (no owner) with the name of
/// the next scheduled run. The time is told (RunNameTaken, naming the
/// Task and that it has no owner) and counted (status.nameTaken), and the
/// following time runs as usual.
pub async fn cron_squatted_name_told(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(COLLEAGUE)?;
    ns.apply(&cron("report", "*/10 * * * * *", "true", ""))?;
    let (uid, _) = owner_ref(&ns, "report").await?;
    // The next time at least 4 s ahead.
    let at = (Timestamp::now().as_second() + 13) / 10 * 10;
    let squat = format!("report-{at}");
    as_colleague(&ns, &task(&squat, "true", None))?;
    let following = format!("report-{}", at + 10);
    wait::until(MINUTE, "the following time's run", || async {
        Ok(runs(&ns, &uid).await?.iter().any(|r| r.0 == following))
    })
    .await?;
    let ct = crontasks(&ns).get("report").await?;
    let taken = ct.data["status"]["nameTaken"].as_i64().unwrap_or_default();
    ensure!(taken >= 1, "nameTaken {taken}: {}", ct.data["status"]);
    wait::until(Duration::from_secs(20), "a RunNameTaken Event", || async {
        let told = events(&ns, "report", "RunNameTaken")?;
        Ok(told
            .iter()
            .any(|m| m.contains(&squat) && m.contains("no owner")))
    })
    .await?;
    let rs = runs(&ns, &uid).await?;
    ensure!(
        !rs.iter().any(|r| r.0 == squat),
        "the squatted Task taken as a run: {rs:?}"
    );
    Ok(())
}

/// A cap: a `* * * * * *` Allow CronTask whose runs sleep, with
/// maxActiveRuns 3: for 60 s (the issue's measure: two such CronTasks
/// made 121 runs in 60 s before) at most 3 runs exist, and the times beyond
/// are skipped (counted, told).
pub async fn cron_max_active_runs_caps(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&cron(
        "flood",
        "* * * * * *",
        "sleep 600",
        "  maxActiveRuns: 3\n",
    ))?;
    let (uid, _) = owner_ref(&ns, "flood").await?;
    let start = Instant::now();
    let mut most = 0;
    while start.elapsed() < MINUTE {
        let n = runs(&ns, &uid).await?.len();
        most = most.max(n);
        ensure!(n <= 3, "{n} runs of a CronTask with maxActiveRuns 3");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    ensure!(most == 3, "only {most} runs started");
    let ct = crontasks(&ns).get("flood").await?;
    let skipped = ct.data["status"]["skipped"].as_i64().unwrap_or_default();
    ensure!(skipped >= 40, "skipped {skipped}: {}", ct.data["status"]);
    let told = events(&ns, "flood", "Skipped")?;
    ensure!(
        told.iter().any(|m| m.contains("maxActiveRuns: 3")),
        "no Skipped Event naming maxActiveRuns: {told:?}"
    );
    Ok(())
}
