//! `kubectl longtask run NAME [flags] -- COMMAND [ARGS...]`: builds a Task
//! from the flags (pure, tested), then prints it (`--dry-run`) or creates
//! it, and with `--wait` / `--follow` reports how it ended. Building,
//! creating and following are `task::run`, which `rerun`, `cron` and the
//! web page share.

use crds::Task;
use kube::api::PostParams;

use crate::cli::RunArgs;
use crate::client::{Error, Kube};
use crate::task::run::{build, create, create_with, follow_or_wait};

pub async fn run(k: &Kube, a: RunArgs) -> Result<(), Error> {
    let task = build(&a)?;
    let dry_run = dry_run(a.dry_run.as_deref())?;
    if dry_run != DryRun::None && (a.wait || a.follow) {
        return Err(Error::Usage(
            "--dry-run prints the Task without running it: drop --wait/--follow".to_owned(),
        ));
    }
    match dry_run {
        DryRun::Client => {
            crate::print::out(render(&task, &a.output)?)?;
            return Ok(());
        }
        DryRun::Server => {
            let pp = PostParams {
                dry_run: true,
                ..PostParams::default()
            };
            let t = create_with(k, &task, &pp).await?;
            crate::print::out(render(&t, &a.output)?)?;
            return Ok(());
        }
        DryRun::None => {}
    }
    let name = create(k, &task).await?;
    follow_or_wait(k, &name, a.wait, a.follow).await
}

#[derive(Debug, PartialEq, Eq)]
enum DryRun {
    None,
    Client,
    Server,
}

fn dry_run(flag: Option<&str>) -> Result<DryRun, Error> {
    match flag {
        None | Some("none") => Ok(DryRun::None),
        Some("client") => Ok(DryRun::Client),
        Some("server") => Ok(DryRun::Server),
        Some(other) => Err(Error::Usage(format!(
            "--dry-run={other}: must be client, server or none"
        ))),
    }
}

/// `task` as `-o yaml` or `-o json` print it.
pub fn render(task: &Task, output: &str) -> Result<String, Error> {
    match output {
        "yaml" => serde_saphyr::to_string(task)
            .map_err(|e| Error::Usage(format!("cannot write the Task as YAML: {e}"))),
        "json" => serde_json::to_string_pretty(task)
            .map(|s| s + "\n")
            .map_err(|e| Error::Usage(format!("cannot write the Task as JSON: {e}"))),
        other => Err(Error::Usage(format!("-o {other}: must be yaml or json"))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cli::{Cli, Command};
    use crate::task::run::parse_env;
    use clap::Parser;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn args(flags: &[&str]) -> RunArgs {
        let argv = ["kubectl-longtask", "run"].iter().chain(flags);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Run(r) => *r,
            c => panic!("not run: {c:?}"),
        }
    }

    #[test]
    fn flags_become_the_spec() {
        let a = args(&[
            "train",
            "--cpu",
            "500m",
            "--memory",
            "1Gi",
            "-e",
            "A=1",
            "--env",
            "B=x=y",
            "--retries",
            "2",
            "--timeout",
            "1h",
            "--shards",
            "4",
            "--parallelism",
            "2",
            "--",
            "sh",
            "-c",
            "echo hi",
        ]);
        let t = build(&a).expect("builds");
        assert_eq!(t.metadata.name.as_deref(), Some("train"));
        assert_eq!(t.metadata.namespace, None);
        let s = &t.spec;
        assert_eq!(s.command, ["sh", "-c", "echo hi"]);
        assert_eq!(s.retries, 2);
        assert_eq!(s.timeout_seconds, Some(3600));
        assert_eq!((s.shards, s.parallelism), (4, Some(2)));
        let req = s
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .expect("requests");
        assert_eq!(req["cpu"], Quantity("500m".into()));
        assert_eq!(req["memory"], Quantity("1Gi".into()));
        let env: Vec<_> = s
            .env
            .iter()
            .map(|e| (e.name.as_str(), e.value.as_deref()))
            .collect();
        assert_eq!(env, [("A", Some("1")), ("B", Some("x=y"))]);
        assert!(!s.cancel);
    }

    #[test]
    fn image_and_account_shape_the_pod() {
        let t = build(&args(&[
            "py",
            "--image",
            "python:3.12-slim",
            "--service-account",
            "analytics",
            "--",
            "python3",
            "-c",
            "print(1)",
        ]))
        .expect("builds");
        assert_eq!(t.spec.image.as_deref(), Some("python:3.12-slim"));
        let account = t
            .spec
            .pod_template
            .as_ref()
            .and_then(|p| p.service_account_name.as_deref());
        assert_eq!(account, Some("analytics"));
        for flags in [
            &["t", "--image", "", "--", "true"][..],
            &["t", "--service-account", "Bad_Name", "--", "true"],
            &["t", "--service-account", "a..b", "--", "true"],
            &["t", "--service-account=-a", "--", "true"],
        ] {
            assert!(build(&args(flags)).is_err(), "{flags:?}");
        }
    }

    #[test]
    fn after_flags_name_the_upstreams() {
        use crds::UpstreamCondition::{Finished, Succeeded};
        let t = build(&args(&[
            "c",
            "--after",
            "a",
            "--after",
            "b:Finished",
            "--",
            "true",
        ]))
        .expect("builds");
        let ups: Vec<_> = t
            .spec
            .after
            .iter()
            .map(|u| (u.name.as_str(), u.condition))
            .collect();
        assert_eq!(ups, [("a", Succeeded), ("b", Finished)]);
        for flags in [
            &["c", "--after", "c", "--", "true"][..],
            &["c", "--after", "a", "--after", "a:Finished", "--", "true"],
            &["c", "--after", "a:Sometimes", "--", "true"],
            &["c", "--after", "", "--", "true"],
        ] {
            assert!(build(&args(flags)).is_err(), "{flags:?}");
        }
    }

    #[test]
    fn defaults_leave_the_spec_minimal() {
        let t = build(&args(&["hello", "--", "echo", "hi"])).expect("builds");
        assert_eq!(t.spec.resources, None);
        assert_eq!(t.spec.timeout_seconds, None);
        assert_eq!(
            (t.spec.retries, t.spec.shards, t.spec.parallelism),
            (0, 1, None)
        );
        assert!(t.spec.env.is_empty());
    }

    #[test]
    fn out_of_range_flags_are_refused() {
        for flags in [
            &["t", "--retries", "11", "--", "true"][..],
            &["t", "--shards", "0", "--", "true"],
            &["t", "--shards", "2", "--parallelism", "3", "--", "true"],
            &["t", "--parallelism", "2", "--", "true"],
            &["t", "--", ""],
        ] {
            assert!(build(&args(flags)).is_err(), "{flags:?}");
        }
        let mut a = args(&["t", "--", "true"]);
        a.timeout = Some(Duration::ZERO);
        assert!(build(&a).is_err());
    }

    #[test]
    fn env_entries_are_checked() {
        let ok = parse_env(&["EMPTY=".into(), "URL=a=b".into()]).expect("parses");
        assert_eq!(ok[0].value.as_deref(), Some(""));
        assert_eq!(ok[1].value.as_deref(), Some("a=b"));
        for (bad, says) in [
            ("NOVALUE", "expected K=V"),
            ("=x", "empty"),
            ("A B=x", "printable ASCII"),
            ("LONGTASK_SHARD=1", "reserved"),
        ] {
            let e = parse_env(&[bad.into()]).expect_err(bad).to_string();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
        let twice = parse_env(&["A=1".into(), "A=2".into()]).expect_err("twice");
        assert!(twice.to_string().contains("twice"), "{twice}");
    }

    #[test]
    fn dry_run_prints_a_task_kubectl_can_apply() {
        let t = build(&args(&["hello", "--env", "A=1", "--", "echo", "hi"])).expect("builds");
        let yaml = render(&t, "yaml").expect("yaml");
        assert!(
            yaml.starts_with("apiVersion: longtask.dev/v1alpha1\nkind: Task\n"),
            "{yaml}"
        );
        assert!(!yaml.contains("status"), "{yaml}");
        let back: Task = serde_saphyr::from_str(&yaml).expect("reads back");
        assert_eq!(back.spec, t.spec);
        let json = render(&t, "json").expect("json");
        let back: Task = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back.spec, t.spec);
        assert!(render(&t, "table").is_err());
    }

    #[test]
    fn dry_run_modes() {
        assert_eq!(dry_run(None).ok(), Some(DryRun::None));
        assert_eq!(dry_run(Some("client")).ok(), Some(DryRun::Client));
        assert_eq!(dry_run(Some("server")).ok(), Some(DryRun::Server));
        assert!(dry_run(Some("yes")).is_err());
    }
}
