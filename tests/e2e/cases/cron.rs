//! CronTasks end to end, on schedules with a seconds field: runs start
//! within 2 s of their time and complete; the history limits delete the
//! oldest; Forbid skips while a run is active; Replace cancels it (its
//! partial result kept); stopAfterFailures suspends; after the operator was
//! stopped over 3 scheduled times one catch-up run starts within the
//! window and none outside it; the leader deleted at 10 scheduled times
//! gives exactly one Task per time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, operator, tasks, wait};
use serde_json::Value;

use super::faults::scale;
use super::ha::new_leader;

const MINUTE: Duration = Duration::from_secs(60);

pub(super) fn crontasks(ns: &TestNs) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("longtask.dev", "v1alpha1", "CronTask");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "crontasks");
    Api::namespaced_with(ns.client.clone(), &ns.name, &ar)
}

/// A CronTask `name` on `schedule` running `sh -c SCRIPT`, with extra spec
/// lines (indented by two spaces).
pub(super) fn cron(name: &str, schedule: &str, script: &str, extra: &str) -> String {
    let script = serde_json::to_string(script).unwrap_or_default();
    format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: CronTask\nmetadata:\n  name: {name}\nspec:\n  \
         schedule: \"{schedule}\"\n{extra}  taskTemplate:\n    spec:\n      command: [sh, -c, {script}]\n"
    )
}

/// The runs of CronTask `name`: (scheduled unix second, Task), oldest first.
async fn runs(ns: &TestNs, name: &str) -> Result<Vec<(i64, Value)>> {
    let lp = ListParams::default().labels(&format!("longtask.dev/crontask={name}"));
    let list = tasks(&ns.client, &ns.name).list(&lp).await?;
    let mut out = Vec::new();
    for t in list.items {
        let v = serde_json::to_value(&t)?;
        let n = t.metadata.name.clone().unwrap_or_default();
        let suffix = n.rsplit('-').next().unwrap_or_default();
        if let Ok(s) = suffix.parse::<i64>() {
            out.push((s, v));
        }
    }
    out.sort_by_key(|(s, _)| *s);
    Ok(out)
}

fn created_second(t: &Value) -> Result<i64> {
    let at: k8s_openapi::jiff::Timestamp = t["metadata"]["creationTimestamp"]
        .as_str()
        .context("creationTimestamp")?
        .parse()?;
    Ok(at.as_second())
}

fn phase(t: &Value) -> &str {
    t["status"]["phase"].as_str().unwrap_or_default()
}

/// Events on CronTask `name` with `reason`: their messages.
pub(super) fn events(ns: &TestNs, name: &str, reason: &str) -> Result<Vec<String>> {
    let out = ns.k(&[
        "get",
        "events",
        &format!("--field-selector=involvedObject.name={name},involvedObject.kind=CronTask,reason={reason}"),
        "-o",
        "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}",
    ])?;
    Ok(out.lines().map(str::to_owned).collect())
}

/// Runs start within 2 s of their scheduled time, complete with their
/// result, carry the scheduled time, and the history keeps the newest 2.
pub async fn cron_runs_on_time(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&cron(
        "tick",
        "*/6 * * * * *",
        r#"echo "at $(date +%s)" > "$LONGTASK_RESULT""#,
        "  successfulTasksHistoryLimit: 2\n",
    ))?;
    // Every run seen, with the second it was created. A run is recorded
    // only once its checks passed: a failed check fails the poll, which
    // looks at the same run again, so a run without its annotation keeps
    // failing until the wait gives up with that error.
    let seen: std::sync::Mutex<BTreeMap<i64, i64>> = Default::default();
    let record = |rs: &[(i64, Value)]| -> Result<()> {
        for (s, t) in rs {
            if seen.lock().unwrap().contains_key(s) {
                continue;
            }
            let at = t["metadata"]["annotations"]["longtask.dev/scheduled-at"]
                .as_str()
                .with_context(|| format!("run {s}: no scheduled-at: {}", t["metadata"]))?;
            let at: k8s_openapi::jiff::Timestamp = at.parse()?;
            ensure!(at.as_second() == *s, "run {s}: scheduled-at {at}");
            seen.lock().unwrap().insert(*s, created_second(t)?);
        }
        Ok(())
    };
    wait::until(Duration::from_secs(90), "5 runs of tick", || async {
        record(&runs(&ns, "tick").await?)?;
        Ok(seen.lock().unwrap().len() >= 5)
    })
    .await?;
    for (scheduled, created) in seen.lock().unwrap().iter() {
        ensure!(
            (0..=2).contains(&(created - scheduled)),
            "run of {scheduled} created at {created}"
        );
        ensure!(scheduled % 6 == 0, "{scheduled} is no time of */6");
    }
    // The history: at most 2 Completed runs stay, and older ones were
    // deleted. Runs still starting or running are not history and not
    // counted: on loaded container nodes a pod may take longer than the
    // 6 s between runs to start, so several are in flight at once (the
    // bound of 3 runs in all failed there twice).
    // (kept: Completed runs present; gone: runs seen, now deleted.)
    let split = |rs: &[(i64, Value)]| {
        let kept: Vec<i64> = rs
            .iter()
            .filter(|(_, t)| phase(t) == "Completed")
            .map(|(s, _)| *s)
            .collect();
        let gone: Vec<i64> = seen
            .lock()
            .unwrap()
            .keys()
            .filter(|s| !rs.iter().any(|(r, _)| r == *s))
            .copied()
            .collect();
        (kept, gone)
    };
    let last = std::sync::Mutex::new(String::new());
    wait::until(MINUTE, "history trimmed to 2", || async {
        let rs = runs(&ns, "tick").await?;
        record(&rs)?;
        let (kept, gone) = split(&rs);
        *last.lock().unwrap() = rs
            .iter()
            .map(|(s, t)| format!("{s}: {}", phase(t)))
            .collect::<Vec<_>>()
            .join(", ");
        Ok(kept.len() <= 2 && !gone.is_empty())
    })
    .await
    .with_context(|| format!("runs then: {}", last.lock().unwrap()))?;
    // The kept ones are the newest: every run deleted is older than every
    // Completed run still there (a run leaves only through the history
    // limit here: none fails).
    let (kept, gone) = split(&runs(&ns, "tick").await?);
    ensure!(
        gone.iter().max() < kept.iter().min(),
        "history kept {kept:?} but deleted the newer {gone:?}"
    );
    let rs = runs(&ns, "tick").await?;
    let done = rs
        .iter()
        .find(|(_, t)| phase(t) == "Completed")
        .context("a completed run")?;
    ensure!(
        done.1["status"]["result"]
            .as_str()
            .unwrap_or_default()
            .starts_with("at "),
        "{}",
        done.1["status"]
    );
    let ct = crontasks(&ns).get("tick").await?;
    let st = &ct.data["status"];
    ensure!(
        st["lastScheduleTime"].is_string()
            && st["lastSuccessfulTime"].is_string()
            && st["nextScheduleTimes"]
                .as_array()
                .is_some_and(|a| a.len() == 3),
        "status: {st}"
    );
    ensure!(
        !events(&ns, "tick", "Created")?.is_empty(),
        "no Created Event"
    );
    Ok(())
}

/// Forbid: a run of 14 s on a 5-second schedule; the times while it runs
/// are skipped (counted, told), and never do two runs overlap.
pub async fn cron_forbid_skips(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&cron(
        "one",
        "*/5 * * * * *",
        "sleep 14",
        "  concurrencyPolicy: Forbid\n",
    ))?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(40) {
        let rs = runs(&ns, "one").await?;
        let active = rs
            .iter()
            .filter(|(_, t)| !matches!(phase(t), "Completed" | "Failed"))
            .count();
        ensure!(active <= 1, "{active} runs active at once");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let ct = crontasks(&ns).get("one").await?;
    let skipped = ct.data["status"]["skipped"].as_i64().unwrap_or_default();
    ensure!(skipped >= 3, "skipped {skipped}: {}", ct.data["status"]);
    let told = events(&ns, "one", "Skipped")?;
    ensure!(
        told.iter().any(|m| m.contains("Forbid")),
        "no Skipped Event: {told:?}"
    );
    Ok(())
}

/// Replace: the next time cancels the active run, which keeps the result
/// it had written, and starts a new one.
pub async fn cron_replace_cancels(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    // Every 20 s: a run whose pod took longer than the period to start is
    // replaced before its program ran (nothing to keep; in one CI run on
    // container nodes beside the chaos suite pods took 12 s to start, past
    // a 10 s period), so wait for a replaced run that had started.
    ns.apply(&cron(
        "swap",
        "*/20 * * * * *",
        r#"echo partial > "$LONGTASK_RESULT"; sleep 300"#,
        "  concurrencyPolicy: Replace\n",
    ))?;
    let got: std::sync::Mutex<Option<Value>> = Default::default();
    wait::until(3 * MINUTE, "a replaced run with its result", || async {
        let rs = runs(&ns, "swap").await?;
        let kept = rs.into_iter().map(|(_, t)| t).find(|t| {
            phase(t) == "Failed" && t["status"]["result"].as_str().map(str::trim) == Some("partial")
        });
        let found = kept.is_some();
        *got.lock().unwrap() = kept;
        Ok(found)
    })
    .await?;
    let t = got.lock().unwrap().clone().context("replaced")?;
    // Every ended run was replaced, whether its program ran or not.
    for (_, r) in runs(&ns, "swap").await? {
        let st = &r["status"];
        ensure!(
            phase(&r) != "Failed" || st["reason"] == "Cancelled",
            "a run failed otherwise: {st}"
        );
    }
    ensure!(
        t["status"]["reason"] == "Cancelled",
        "replaced run: {}",
        t["status"]
    );
    let message = t["status"]["message"].as_str().unwrap_or_default();
    ensure!(
        message.starts_with("cancelled (spec.cancel)"),
        "replaced run's message: {message}"
    );
    ensure!(
        !events(&ns, "swap", "Replaced")?.is_empty(),
        "no Replaced Event"
    );
    Ok(())
}

/// stopAfterFailures 2: two failed runs in a row suspend the CronTask, with
/// reason TooManyFailures, and no third run starts (Forbid keeps the runs
/// from overlapping, so there are exactly two).
pub async fn cron_stop_after_failures(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&cron(
        "broken",
        "*/4 * * * * *",
        "exit 3",
        // Forbid: one run at a time, so the two failures are the only runs
        // however slowly pods start.
        "  stopAfterFailures: 2\n  failedTasksHistoryLimit: 5\n  concurrencyPolicy: Forbid\n",
    ))?;
    let api = crontasks(&ns);
    let suspended = |ct: &Value| {
        ct["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Suspended").cloned())
    };
    // Two writes: spec.suspend (the spec) and then the condition (the
    // status subresource), so wait for both rather than read between them.
    // Two runs one after the other on container nodes, beside the
    // containers suite's chaos: in one CI run the Job controller still had
    // the second run's Job Running 34 s after its pod exited, past 60 s.
    wait::until(3 * MINUTE, "broken suspended", || async {
        let ct = api.get("broken").await?;
        let told = suspended(&ct.data).is_some_and(|c| c["status"] == "True");
        Ok(ct.data["spec"]["suspend"] == true && told)
    })
    .await?;
    let ct = api.get("broken").await?;
    let cond = suspended(&ct.data).context("Suspended condition")?;
    ensure!(
        cond["status"] == "True" && cond["reason"] == "TooManyFailures",
        "{cond}"
    );
    let n = runs(&ns, "broken").await?.len();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let rs = runs(&ns, "broken").await?;
    ensure!(
        rs.len() == n && n == 2,
        "{} runs after suspension (had {n})",
        rs.len()
    );
    ensure!(
        rs.iter().all(|(_, t)| phase(t) == "Failed"),
        "runs: {:?}",
        rs.iter().map(|(_, t)| phase(t)).collect::<Vec<_>>()
    );
    ensure!(
        !events(&ns, "broken", "TooManyFailures")?.is_empty(),
        "no Event"
    );
    Ok(())
}

/// The operator is stopped over 3 or more scheduled times. Back, the
/// CronTask with a 60 s window starts one run, for the latest time missed,
/// and counts the others missed; the one with a 1 s window starts none.
pub async fn cron_catch_up_after_downtime(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(
        &[
            cron("wide", "*/5 * * * * *", "true", "  catchUpSeconds: 60\n"),
            cron("narrow", "*/5 * * * * *", "true", "  catchUpSeconds: 1\n"),
        ]
        .join("---\n"),
    )?;
    for name in ["wide", "narrow"] {
        wait::until(MINUTE, "a first run", || async {
            Ok(!runs(&ns, name).await?.is_empty())
        })
        .await?;
    }
    scale(&c, 0)?;
    let down = async {
        wait::until(MINUTE, "no operator pods", || async {
            Ok(operator::pods(&c.client).await?.is_empty())
        })
        .await?;
        let stopped = k8s_openapi::jiff::Timestamp::now().as_second();
        tokio::time::sleep(Duration::from_secs(17)).await;
        anyhow::Ok(stopped)
    }
    .await;
    scale(&c, 2)?;
    let stopped = down?;
    let back = k8s_openapi::jiff::Timestamp::now().as_second();
    c.wait_operator("60s")?;
    // The wide one: one run for the latest time before the restart.
    wait::until(MINUTE, "wide caught up", || async {
        Ok(runs(&ns, "wide").await?.iter().any(|(s, _)| *s > stopped))
    })
    .await?;
    // The downtime ends when the operator acts again: its first run after
    // the stop is made then (under load well after `back`, when the scale
    // returned: in one CI run the catch-up was for a time past it). Every
    // time up to that moment was missed; one run stands for them all.
    let wide = runs(&ns, "wide").await?;
    let first = wide
        .iter()
        .filter(|(s, _)| *s > stopped)
        .map(|(_, t)| created_second(t))
        .collect::<Result<Vec<i64>>>()?
        .into_iter()
        .min()
        .unwrap_or(back);
    let end = first.max(back);
    let caught: Vec<i64> = wide
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| *s > stopped && *s <= end)
        .collect();
    ensure!(
        caught.len() == 1,
        "wide ran {caught:?} for the downtime {stopped}..{end} (scaled back at {back})"
    );
    let st = crontasks(&ns).get("wide").await?.data["status"].clone();
    ensure!(st["missed"].as_i64().unwrap_or_default() >= 2, "wide: {st}");
    ensure!(
        !events(&ns, "wide", "Missed")?.is_empty(),
        "no Missed Event"
    );
    // The narrow one: none for the downtime, then on time again.
    let narrow = runs(&ns, "narrow").await?;
    let during: Vec<i64> = narrow
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| *s > stopped && *s <= back)
        .collect();
    ensure!(
        during.is_empty(),
        "narrow ran {during:?} outside its window"
    );
    // Then on time again: runs for times after the restart, each created
    // within 2 s of its time.
    let ready = k8s_openapi::jiff::Timestamp::now().as_second();
    wait::until(MINUTE, "narrow on time again", || async {
        Ok(runs(&ns, "narrow").await?.iter().any(|(s, _)| *s > ready))
    })
    .await?;
    for (s, t) in runs(&ns, "narrow")
        .await?
        .iter()
        .filter(|(s, _)| *s > ready)
    {
        let late = created_second(t)? - s;
        ensure!(
            (0..=2).contains(&late),
            "narrow's run of {s} created {late} s late"
        );
    }
    let st = crontasks(&ns).get("narrow").await?.data["status"].clone();
    ensure!(
        st["missed"].as_i64().unwrap_or_default() >= 3,
        "narrow: {st}"
    );
    Ok(())
}

/// The leader's pod is deleted just before 10 scheduled times of a
/// 10-second schedule: each time gets exactly one run (one Job), none
/// missing.
pub async fn cron_leader_killed_at_ticks(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let log = JobLog::start(&ns.client, &ns.name);
    ns.apply(&cron(
        "steady",
        "*/10 * * * * *",
        "true",
        "  successfulTasksHistoryLimit: 30\n",
    ))?;
    wait::until(MINUTE, "a first run", || async {
        Ok(!runs(&ns, "steady").await?.is_empty())
    })
    .await?;
    let first = runs(&ns, "steady").await?[0].0;
    let mut leader = new_leader(&c, None, MINUTE).await?;
    for _ in 0..10 {
        // 1 s before the next tick at least 1.5 s away (not the tick
        // whose kill was just made).
        let now = k8s_openapi::jiff::Timestamp::now().as_millisecond();
        let next = ((now + 1500) / 10_000 + 1) * 10_000;
        tokio::time::sleep(Duration::from_millis(u64::try_from(
            (next - now - 1000).max(0),
        )?))
        .await;
        c.kubectl
            .run(&["-n", SYSTEM_NS, "delete", "pod", &leader, "--wait=false"])?;
        leader = new_leader(&c, Some(&leader), Duration::from_secs(30)).await?;
    }
    let last = k8s_openapi::jiff::Timestamp::now().as_second() / 10 * 10;
    wait::until(MINUTE, "every tick run", || async {
        let have: BTreeSet<i64> = runs(&ns, "steady").await?.iter().map(|(s, _)| *s).collect();
        Ok((first..=last).step_by(10).all(|s| have.contains(&s)))
    })
    .await?;
    let rs = runs(&ns, "steady").await?;
    let names: Vec<String> = rs
        .iter()
        .filter(|(s, _)| *s >= first && *s <= last)
        .map(|(_, t)| {
            t["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let want = usize::try_from((last - first) / 10 + 1)?;
    if names.len() != want {
        bail!(
            "{} runs for {want} ticks {first}..{last}: {names:?}",
            names.len()
        );
    }
    log.one_each(names.iter().map(String::as_str))?;
    let st = crontasks(&ns).get("steady").await?.data["status"].clone();
    ensure!(
        st["missed"].as_i64().unwrap_or_default() == 0,
        "steady: {st}"
    );
    Ok(())
}

/// The plugin: `cron` makes a CronTask (a yearly schedule, so only manual
/// runs happen), `crons` shows its next run, `trigger` starts a manual run
/// that completes, `suspend` and `resume` flip spec.suspend, and a bad
/// schedule is refused before anything is sent.
pub async fn cron_plugin_commands(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let plugin = |args: &[&str]| ns.kubectl.plugin(&ns.name, args);
    let out = plugin(&[
        "cron",
        "rare",
        "--schedule",
        "0 0 1 1 *",
        "--time-zone",
        "Europe/Berlin",
        "--",
        "sh",
        "-c",
        "echo manual > \"$LONGTASK_RESULT\"",
    ])?;
    ensure!(
        out.code == Some(0) && out.stdout().contains("crontask/rare created"),
        "cron: {out}"
    );
    let bad = plugin(&[
        "cron",
        "bad",
        "--schedule",
        "TZ=UTC 0 * * * *",
        "--",
        "true",
    ])?;
    ensure!(
        bad.code != Some(0) && bad.stderr.contains("spec.timeZone"),
        "bad: {bad}"
    );
    ensure!(
        crontasks(&ns).get_opt("bad").await?.is_none(),
        "bad was created"
    );
    wait::until(MINUTE, "rare's next run shown", || async {
        let out = plugin(&["crons"])?;
        Ok(out.stdout().contains("rare") && out.stdout().contains("T23:00:00Z"))
    })
    .await?;
    // `get` shows it too, after the Tasks, by itself or by name.
    for args in [&["get"][..], &["get", "rare"]] {
        let out = plugin(args)?;
        ensure!(
            out.code == Some(0)
                && out.stdout().contains("SCHEDULE")
                && out.stdout().contains("T23:00:00Z"),
            "{args:?}: {out}"
        );
    }
    let out = plugin(&["trigger", "rare"])?;
    ensure!(
        out.code == Some(0) && out.stdout().contains("task/rare-m"),
        "trigger: {out}"
    );
    let name = out
        .stdout()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("task/").map(str::to_owned))
        .context("run name")?;
    let t = wait::condition(&tasks(&ns.client, &ns.name), &name, "Complete", MINUTE).await?;
    ensure!(
        t["status"]["result"].as_str().map(str::trim) == Some("manual")
            && t["metadata"]["annotations"]["longtask.dev/run"] == "manual",
        "{t}"
    );
    for (verb, want) in [("suspend", true), ("resume", false)] {
        let out = plugin(&[verb, "rare"])?;
        ensure!(out.code == Some(0), "{verb}: {out}");
        let ct = crontasks(&ns).get("rare").await?;
        ensure!(
            ct.data["spec"]["suspend"] == want,
            "{verb}: {}",
            ct.data["spec"]
        );
    }
    Ok(())
}
