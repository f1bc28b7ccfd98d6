//! CronTasks from the command line: `cron` makes one (as `run` makes a
//! Task, plus a schedule), `trigger` starts a run now, `suspend` and
//! `resume` set spec.suspend, `crons` lists them with their next run.

use crds::cron::{ConcurrencyPolicy, CronTask, CronTaskSpec, TaskTemplate};
use crds::schedule::Schedule;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams, PostParams};

use crate::cli::{CronArgs, GetArgs, NameArg, NamesArg};
use crate::client::{Error, Kube};
use crate::task::cron::{crons, list_all, table};
use crate::task::run;

async fn get_cron(k: &Kube, name: &str) -> Result<CronTask, Error> {
    crons(k)
        .get(name)
        .await
        .map_err(|e| Error::api("get", "crontasks", &k.namespace, Some(name), e))
}

/// `kubectl longtask cron NAME --schedule S [run's flags] -- COMMAND...`
pub async fn create(k: &Kube, a: CronArgs) -> Result<(), Error> {
    let cron = build(&a)?;
    if a.run.dry_run.as_deref() == Some("client") {
        let text = match a.run.output.as_str() {
            "json" => {
                serde_json::to_string_pretty(&cron).map_err(|e| Error::Usage(e.to_string()))?
            }
            _ => serde_saphyr::to_string(&cron).map_err(|e| Error::Usage(e.to_string()))?,
        };
        crate::print::out(text)?;
        return Ok(());
    }
    let made = crons(k)
        .create(&PostParams::default(), &cron)
        .await
        .map_err(|e| Error::api("create", "crontasks", &k.namespace, None, e))?;
    crate::print::out(format!("crontask/{} created\n", made.name_any()))?;
    Ok(())
}

/// The CronTask the flags describe.
pub fn build(a: &CronArgs) -> Result<CronTask, Error> {
    if a.run.wait || a.run.follow {
        return Err(Error::Usage(
            "a CronTask runs later: --wait and --follow apply to `run`, not `cron`".to_owned(),
        ));
    }
    if a.run.dry_run.as_deref().is_some_and(|d| d != "client") {
        return Err(Error::Usage("cron takes --dry-run=client only".to_owned()));
    }
    for s in &a.schedule {
        Schedule::parse(s).map_err(|e| Error::Usage(format!("--schedule: {e}")))?;
    }
    let policy = match a.concurrency_policy.as_deref() {
        None | Some("Allow") => ConcurrencyPolicy::Allow,
        Some("Forbid") => ConcurrencyPolicy::Forbid,
        Some("Replace") => ConcurrencyPolicy::Replace,
        Some("BufferOne") => ConcurrencyPolicy::BufferOne,
        Some(other) => {
            return Err(Error::Usage(format!(
                "--concurrency-policy {other}: must be Allow, Forbid, Replace or BufferOne"
            )));
        }
    };
    if !a.run.after.is_empty() {
        return Err(Error::Usage(
            "--after: a CronTask's runs cannot wait for other Tasks (docs/dependencies.md)"
                .to_owned(),
        ));
    }
    let task = run::build(&a.run)?;
    let (first, more) = a
        .schedule
        .split_first()
        .ok_or_else(|| Error::Usage("give --schedule, e.g. --schedule '0 2 * * *'".to_owned()))?;
    let spec = CronTaskSpec {
        schedule: Some(first.clone()),
        schedules: more.to_vec(),
        time_zone: a.time_zone.clone(),
        concurrency_policy: policy,
        catch_up_seconds: a
            .catch_up
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        suspend: false,
        stop_after_failures: a.stop_after_failures,
        successful_tasks_history_limit: None,
        failed_tasks_history_limit: None,
        max_active_runs: None,
        task_template: TaskTemplate {
            metadata: None,
            spec: task.spec,
        },
    };
    Ok(CronTask::new(&a.run.name, spec))
}

/// `kubectl longtask trigger NAME`: a run now, named `<name>-m<unix
/// seconds>` and annotated as manual, made with the caller's own rights.
pub async fn trigger(k: &Kube, a: NameArg) -> Result<(), Error> {
    let cron = get_cron(k, &a.name).await?;
    let now =
        Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_else(|_| Timestamp::now());
    let task = crds::cron::build_run(&cron, now, true);
    run::create(k, &task).await.map(|_| ())
}

/// `kubectl longtask suspend|resume NAME...`: a merge patch of spec.suspend.
pub async fn set_suspend(k: &Kube, a: NamesArg, suspend: bool) -> Result<(), Error> {
    let mut all_ok = true;
    for name in &a.names {
        let patch = serde_json::json!({"spec": {"suspend": suspend}});
        let done = crons(k)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| Error::api("patch", "crontasks", &k.namespace, Some(name), e));
        match done {
            Ok(_) => crate::print::out(format!(
                "crontask/{name} {}\n",
                if suspend { "suspended" } else { "resumed" }
            ))?,
            Err(e) if a.names.len() == 1 => return Err(e),
            Err(e) => {
                crate::print::note!("error: {e}");
                all_ok = false;
            }
        }
    }
    if all_ok { Ok(()) } else { Err(Error::Exit(1)) }
}

/// `kubectl longtask crons [NAME...] [-A]`: a table with the next run.
pub async fn list(k: &Kube, a: GetArgs) -> Result<(), Error> {
    let mut items = list_all(k, a.all_namespaces).await?;
    if !a.names.is_empty() {
        items.retain(|c| a.names.contains(&c.name_any()));
    }
    crate::print::out(table(&items, a.all_namespaces, Timestamp::now()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(flags: &[&str]) -> CronArgs {
        let argv = ["kubectl-longtask", "cron"].iter().chain(flags);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Cron(c) => *c,
            c => panic!("not cron: {c:?}"),
        }
    }

    #[test]
    fn flags_become_the_crontask() {
        let c = build(&args(&[
            "nightly",
            "--schedule",
            "30 2 * * *",
            "--schedule",
            "@hourly",
            "--time-zone",
            "Europe/Berlin",
            "--concurrency-policy",
            "Forbid",
            "--catch-up",
            "10m",
            "--stop-after-failures",
            "3",
            "--retries",
            "2",
            "--",
            "make",
            "report",
        ]))
        .expect("builds");
        assert_eq!(c.metadata.name.as_deref(), Some("nightly"));
        assert_eq!(c.spec.schedule.as_deref(), Some("30 2 * * *"));
        assert_eq!(c.spec.schedules, ["@hourly"]);
        assert_eq!(c.spec.time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(c.spec.concurrency_policy, ConcurrencyPolicy::Forbid);
        assert_eq!(c.spec.catch_up_seconds, Some(600));
        assert_eq!(c.spec.stop_after_failures, Some(3));
        assert_eq!(c.spec.task_template.spec.command, ["make", "report"]);
        assert_eq!(c.spec.task_template.spec.retries, 2);
    }

    #[test]
    fn bad_flags_are_refused_before_sending() {
        for (flags, says) in [
            (
                &["x", "--schedule", "61 * * * *", "--", "true"][..],
                "outside 0-59",
            ),
            (
                &["x", "--schedule", "TZ=UTC 0 * * * *", "--", "true"][..],
                "spec.timeZone",
            ),
            (
                &["x", "--schedule", "@daily", "--wait", "--", "true"][..],
                "--wait",
            ),
            (
                &[
                    "x",
                    "--schedule",
                    "@daily",
                    "--concurrency-policy",
                    "Never",
                    "--",
                    "true",
                ][..],
                "Allow, Forbid",
            ),
        ] {
            let e = build(&args(flags)).expect_err("refused").to_string();
            assert!(e.contains(says), "{flags:?}: {e}");
        }
    }

    #[test]
    fn the_table_shows_the_next_run() {
        let mut c = build(&args(&["n", "--schedule", "@daily", "--", "true"])).expect("builds");
        c.metadata.namespace = Some("ns".to_owned());
        c.status = Some(crds::CronTaskStatus {
            next_schedule_times: vec!["2026-01-02T00:00:00Z".to_owned()],
            active_count: 1,
            ..Default::default()
        });
        let now: Timestamp = "2026-01-01T23:00:00Z".parse().expect("t");
        let t = table(&[c], true, now);
        assert!(t.starts_with("NAMESPACE"), "{t}");
        assert!(
            t.contains("@daily") && t.contains("(in 60m)") && t.contains("UTC"),
            "{t}"
        );
    }
}
