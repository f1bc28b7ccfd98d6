//! Making a Task, shared by `run`, `rerun`, `cron` (its template and
//! `trigger`) and the web page's rerun: the Task the flags describe
//! (pure, tested in `cmd/run.rs`), its create, and after `--wait` /
//! `--follow` how it ended.

use std::collections::BTreeMap;

use crds::bounds::{MAX_RETRIES, MAX_SHARDS};
use crds::{PodTemplate, Task, TaskSpec, Upstream, UpstreamCondition};
use k8s_openapi::api::core::v1::{EnvVar, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::PostParams;

use crate::cli::RunArgs;
use crate::client::{Error, Kube};
use crate::task::{logs, outcome};

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

/// The Task the flags describe (no namespace: the one it is created in, or
/// the one `kubectl apply -f` uses for the printed YAML).
pub fn build(a: &RunArgs) -> Result<Task, Error> {
    let usage = |m: String| Error::Usage(m);
    if a.command.first().is_none_or(String::is_empty) {
        return Err(usage(
            "name the program after --, e.g. -- sh -c 'echo hi'".to_owned(),
        ));
    }
    let (retries, shards) = counts(a)?;
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
    let pod_template = pod_template(a)?;
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
        after: parse_after(&a.name, &a.after)?,
        ..TaskSpec::default()
    };
    Ok(Task::new(&a.name, spec))
}

/// `--after NAME` (must succeed) and `--after NAME:Finished` (ended either
/// way), as `spec.after`: each name once, never the Task's own.
pub fn parse_after(me: &str, flags: &[String]) -> Result<Vec<Upstream>, Error> {
    let mut out: Vec<Upstream> = Vec::new();
    for f in flags {
        let (name, condition) = match f.split_once(':') {
            None => (f.as_str(), UpstreamCondition::Succeeded),
            Some((n, "Finished")) => (n, UpstreamCondition::Finished),
            Some((n, "Succeeded")) => (n, UpstreamCondition::Succeeded),
            Some((_, c)) => {
                return Err(Error::Usage(format!(
                    "--after {f}: the condition {c:?} is neither Succeeded nor Finished"
                )));
            }
        };
        if name.is_empty() || name == me || out.iter().any(|u| u.name == name) {
            return Err(Error::Usage(format!(
                "--after {f}: name another Task, each at most once"
            )));
        }
        out.push(Upstream {
            name: name.to_owned(),
            condition,
        });
    }
    Ok(out)
}

/// `--retries` and `--shards` (and `--parallelism` against the shards),
/// each checked against its bounds.
fn counts(a: &RunArgs) -> Result<(i32, i32), Error> {
    let usage = |m: String| Error::Usage(m);
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
    Ok((retries, shards))
}

/// The pod template `--service-account` asks for, if any.
fn pod_template(a: &RunArgs) -> Result<Option<PodTemplate>, Error> {
    match a.service_account.as_deref() {
        None => Ok(None),
        Some(name) if is_dns_subdomain(name) => Ok(Some(PodTemplate {
            service_account_name: Some(name.to_owned()),
            ..PodTemplate::default()
        })),
        Some(name) => Err(Error::Usage(format!(
            "--service-account {name:?}: must be a ServiceAccount name (lowercase letters, digits, '-' and '.')"
        ))),
    }
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
