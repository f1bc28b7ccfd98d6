//! `kubectl longtask run NAME [flags] -- COMMAND [ARGS...]`: builds a Task
//! from the flags (pure, tested), then prints it (`--dry-run`) or creates
//! it, and with `--wait` / `--follow` reports how it ended.

use std::collections::BTreeMap;

use crds::bounds::{MAX_RETRIES, MAX_SHARDS};
use crds::{PodTemplate, Task, TaskSpec};
use k8s_openapi::api::core::v1::{EnvVar, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::PostParams;

use crate::cli::RunArgs;
use crate::client::{Error, Kube};
use crate::task::{logs, outcome};

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

/// After creating `name`: nothing, `--wait` or `--follow`, then the outcome.
pub async fn follow_or_wait(k: &Kube, name: &str, wait: bool, follow: bool) -> Result<(), Error> {
    if follow {
        logs::follow_task(k, name).await?;
    }
    if wait || follow {
        outcome::wait_and_report(k, name, None).await?;
    }
    Ok(())
}

/// Creates `task` in the current namespace, prints `task/NAME created` and
/// returns the name it got (a `generateName` Task learns it only now).
pub async fn create(k: &Kube, task: &Task) -> Result<String, Error> {
    let t = create_with(k, task, &PostParams::default()).await?;
    let name = t.metadata.name.unwrap_or_default();
    crate::print::out(format!("task/{name} created\n"))?;
    Ok(name)
}

pub async fn create_with(k: &Kube, task: &Task, pp: &PostParams) -> Result<Task, Error> {
    let name = task.metadata.name.as_deref();
    k.tasks().create(pp, task).await.map_err(|e| match e {
        kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists" => {
            Error::AlreadyExists {
                namespace: k.namespace.clone(),
                name: name.unwrap_or_default().to_owned(),
            }
        }
        e => Error::api("create", "tasks", &k.namespace, None, e),
    })
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

/// The Task the flags describe (no namespace: the one it is created in, or
/// the one `kubectl apply -f` uses for the printed YAML).
pub fn build(a: &RunArgs) -> Result<Task, Error> {
    let usage = |m: String| Error::Usage(m);
    if a.command.first().is_none_or(String::is_empty) {
        return Err(usage(
            "name the program after --, e.g. -- sh -c 'echo hi'".to_owned(),
        ));
    }
    let retries = a.retries.unwrap_or(0);
    if !(0..=MAX_RETRIES).contains(&retries) {
        return Err(usage(format!(
            "--retries {retries}: must be 0 to {MAX_RETRIES}"
        )));
    }
    let shards = a.shards.unwrap_or(1);
    if !(1..=MAX_SHARDS).contains(&shards) {
        return Err(usage(format!(
            "--shards {shards}: must be 1 to {MAX_SHARDS}"
        )));
    }
    if let Some(p) = a.parallelism
        && !(1..=shards).contains(&p)
    {
        return Err(usage(format!(
            "--parallelism {p}: must be 1 to the number of shards ({shards})"
        )));
    }
    let timeout_seconds = match a.timeout {
        Some(d) if d.as_secs() == 0 => {
            return Err(usage("--timeout: must be at least 1s".to_owned()));
        }
        Some(d) => Some(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        None => None,
    };
    let requests: BTreeMap<String, Quantity> = [("cpu", &a.cpu), ("memory", &a.memory)]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_owned(), Quantity(v.clone()))))
        .collect();
    let resources = (!requests.is_empty()).then(|| ResourceRequirements {
        requests: Some(requests),
        ..ResourceRequirements::default()
    });
    if a.image.as_deref() == Some("") {
        return Err(usage(
            "--image: name an image, e.g. python:3.12-slim".to_owned(),
        ));
    }
    let pod_template = match a.service_account.as_deref() {
        None => None,
        Some(name) if is_dns_subdomain(name) => Some(PodTemplate {
            service_account_name: Some(name.to_owned()),
            ..PodTemplate::default()
        }),
        Some(name) => {
            return Err(usage(format!(
                "--service-account {name:?}: must be a ServiceAccount name (lowercase letters, digits, '-' and '.')"
            )));
        }
    };
    let spec = TaskSpec {
        command: a.command.clone(),
        image: a.image.clone(),
        pod_template: pod_template.map(Box::new),
        args: Vec::new(),
        env: parse_env(&a.env)?,
        resources: resources.map(Box::new),
        timeout_seconds,
        start_timeout_seconds: None,
        retries,
        ttl_seconds_after_finished: None,
        cancel: false,
        priority: 0,
        shards,
        parallelism: a.parallelism,
        ..TaskSpec::default()
    };
    Ok(Task::new(&a.name, spec))
}

/// A DNS subdomain (RFC 1123), as object names such as a ServiceAccount's are.
fn is_dns_subdomain(name: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    name.len() <= 253 && name.split('.').all(label)
}

/// `--env K=V` entries as EnvVars, in order. The value may be empty or hold
/// `=`; the name must be what the API server takes and not reserved.
pub fn parse_env(entries: &[String]) -> Result<Vec<EnvVar>, Error> {
    let mut out: Vec<EnvVar> = Vec::with_capacity(entries.len());
    for e in entries {
        let Some((name, value)) = e.split_once('=') else {
            return Err(Error::Usage(format!(
                "--env {e:?}: expected K=V, e.g. --env MODE=fast"
            )));
        };
        let bad = |why: &str| Error::Usage(format!("--env {e:?}: {why}"));
        if name.is_empty() {
            return Err(bad("the name before '=' is empty"));
        }
        if name.len() > 1024 || !name.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad(
                "a name is 1 to 1024 printable ASCII characters without spaces",
            ));
        }
        if name.starts_with(crds::names::env::RESERVED_PREFIX) {
            return Err(bad(
                "names starting with LONGTASK_ are reserved for longtask",
            ));
        }
        if out.iter().any(|v| v.name == name) {
            return Err(bad("this name is given twice"));
        }
        out.push(EnvVar {
            name: name.to_owned(),
            value: Some(value.to_owned()),
            value_from: None,
        });
    }
    Ok(out)
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
    use clap::Parser;

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
