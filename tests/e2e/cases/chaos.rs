//! Chaos: the operator leader is killed every few seconds (its pod deleted,
//! or its process SIGKILLed) while Tasks of random length and outcome run.
//! Every Task ends exactly once with the right result, and had exactly one
//! Job UID. `LONGTASK_CHAOS_TASKS` sets how many Tasks (default 30; the
//! long run in docs/operations.md uses 100), `LONGTASK_CHAOS_SEED` the
//! random seed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use kube::api::ListParams;
use longtask_e2e::chaos::{Lcg, env_u64};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, operator, procs, sh_task, tasks, wait};

use super::ha::new_leader;

#[derive(Debug)]
struct Expect {
    name: String,
    /// None: succeeds with result `ok-<i>`; Some(code): fails with that code.
    fails_with: Option<u64>,
}

pub async fn leader_killed_in_a_loop(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let n = env_u64("LONGTASK_CHAOS_TASKS", 30);
    let seed = env_u64(
        "LONGTASK_CHAOS_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs(),
    );
    println!("chaos: {n} Tasks, seed {seed}");
    let mut rng = Lcg(seed);
    let log = JobLog::start(&ns.client, &ns.name);
    let mut expects = Vec::new();
    let mut docs = Vec::new();
    for i in 0..n {
        let name = format!("chaos-{i}");
        let secs = rng.next(8);
        let fails_with = (rng.next(3) == 0).then(|| 1 + rng.next(5));
        let (script, extra) = match fails_with {
            None => (
                format!("sleep {secs}; echo ok-{i} > \"$LONGTASK_RESULT\""),
                "",
            ),
            Some(code) => (format!("sleep {secs}; exit {code}"), "  retries: 1\n"),
        };
        docs.push(sh_task(&name, &script, extra));
        expects.push(Expect { name, fails_with });
    }
    // Apply in a few batches while the kills go on.
    let api = tasks(&ns.client, &ns.name);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(300 + 2 * n);
    let mut kills = 0u32;
    let mut longest = Duration::ZERO;
    let mut batches = docs.chunks(10);
    loop {
        if let Some(b) = batches.next() {
            ns.apply(&b.join("---\n"))?;
        }
        let list = api.list(&ListParams::default()).await?;
        let done = longtask_e2e::finished(&list.items);
        if done == expects.len() {
            break;
        }
        if Instant::now() > deadline {
            bail!("only {done} of {n} Tasks finished after {kills} kills");
        }
        // Kill the current leader: delete its pod, or SIGKILL its process.
        let (Some(leader), _) = operator::leader(&c.client).await? else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let how = if kills.is_multiple_of(2) {
            "delete"
        } else {
            "SIGKILL"
        };
        if how == "delete" {
            c.kubectl
                .run(&["-n", SYSTEM_NS, "delete", "pod", &leader, "--wait=false"])?;
        } else {
            // A kill that finds no process or leaves it alive tests
            // nothing: either fails the case.
            let pids = procs::with_env("longtask-operator", &format!("POD_NAME={leader}"));
            ensure!(
                !pids.is_empty(),
                "no process of the leader {leader} to kill"
            );
            for pid in &pids {
                procs::signal(*pid, "KILL")?;
            }
            wait::until(
                Duration::from_secs(10),
                "the leader's process to die",
                || async { Ok(!pids.iter().any(|p| procs::alive(*p))) },
            )
            .await
            .with_context(|| format!("pids {pids:?} of {leader}"))?;
        }
        let t0 = Instant::now();
        kills += 1;
        if how == "delete" {
            new_leader(&c, Some(&leader), Duration::from_secs(30)).await?;
        } else {
            // The killed process renews no more: any later renewal comes from
            // a live process (the standby, or the same pod's restarted container).
            let (_, at_kill) = operator::leader(&c.client).await?;
            wait::until(
                Duration::from_secs(30),
                "the Lease renewed by a live process",
                || async {
                    let (h, r) = operator::leader(&c.client).await?;
                    Ok(h.is_some() && r != at_kill)
                },
            )
            .await?;
        }
        let took = t0.elapsed();
        println!(
            "chaos: kill {kills} ({how} {leader}): new leader after {:.1}s, {done}/{n} done",
            took.as_secs_f64()
        );
        longest = longest.max(took);
        tokio::time::sleep(Duration::from_secs(2 + rng.next(3))).await;
    }
    let elapsed = started.elapsed();
    // Exactly one terminal state with the right result, one Job each.
    let mut lost = 0;
    for e in &expects {
        let t = serde_json::to_value(api.get(&e.name).await?)?;
        let st = &t["status"];
        let ok = match e.fails_with {
            None => {
                st["phase"] == "Completed"
                    && st["result"].as_str().map(str::trim) == Some(&format!("ok-{}", &e.name[6..]))
            }
            Some(code) => {
                st["phase"] == "Failed"
                    && st["reason"] == "BackoffLimitExceeded"
                    && st["exitCode"] == code
            }
        };
        let terminal_conditions = ["Complete", "Failed"]
            .iter()
            .filter(|c| longtask_e2e::wait::has_condition(&t, c))
            .count();
        if !ok || terminal_conditions != 1 {
            lost += 1;
            println!("chaos: {} wrong: want {:?}, got {st}", e.name, e.fails_with);
        }
    }
    let dup = expects
        .iter()
        .filter(|e| log.uids(&e.name).len() != 1)
        .count();
    println!(
        "chaos: {n} Tasks in {:.0}s, {kills} operator kills, {lost} lost or wrong, {dup} with other than one Job, longest failover {:.1}s",
        elapsed.as_secs_f64(),
        longest.as_secs_f64()
    );
    ensure!(lost == 0 && dup == 0, "{lost} wrong, {dup} duplicated");
    log.one_each(expects.iter().map(|e| e.name.as_str()))?;
    ensure!(
        kills >= 3,
        "only {kills} kills: the Tasks finished too fast to test anything"
    );
    Ok(())
}
