//! Reading one pod's log into a sink (stdout, or a page of `ui`), line by
//! line, as it comes.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crds::names::WORKER_CONTAINER;
use futures::AsyncBufReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;

use super::pods;
use super::sink::Sink;
use crate::client::Error;

/// How often, and how many times, to look whether a pod whose log stream
/// ended has really ended (the status lags the stream by a moment); a pod
/// still running after that lost its connection, and is read again.
const SETTLE: Duration = Duration::from_millis(500);
const SETTLE_TRIES: u32 = 10;

/// Writes `prefix` + each line of the program's log to stdout, one write
/// per line so the lines of concurrent shards never mix; on a terminal the
/// line's control characters are made visible (`safe::for_stdout`).
pub fn print_line(prefix: &str, line: &[u8]) -> Result<(), Error> {
    let line = crate::safe::for_stdout(line);
    let mut buf = Vec::with_capacity(prefix.len() + line.len() + 1);
    buf.extend_from_slice(crate::safe::visible(prefix).as_bytes());
    buf.extend_from_slice(&line);
    if !buf.ends_with(b"\n") {
        buf.push(b'\n');
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&buf)?;
    out.flush()?;
    Ok(())
}

/// Gives `sink` the log of pod `name` (the worker container), each line
/// after `prefix`; with `follow`, until the container ends, reading again
/// after a dropped connection without repeating the lines already given.
/// Returns the number of lines given; a pod that is gone has none left.
pub async fn pod_log(
    api: Api<Pod>,
    name: String,
    prefix: String,
    follow: bool,
    sink: Arc<dyn Sink>,
) -> Result<u64, Error> {
    let mut printed = 0u64;
    loop {
        let lp = LogParams {
            container: Some(WORKER_CONTAINER.to_owned()),
            follow,
            ..LogParams::default()
        };
        let stream = match api.log_stream(&name, &lp).await {
            Ok(s) => s,
            // Deleted meanwhile, or (400) its container has no log any more.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 400 => return Ok(printed),
            Err(e) => return Err(log_error(&api, &name, e)),
        };
        let mut stream = Box::pin(stream);
        let mut seen = 0u64;
        let mut line = Vec::new();
        loop {
            line.clear();
            // A broken connection ends this read like the end of the log;
            // whether the pod ended tells which one it was.
            match stream.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            seen += 1;
            if seen > printed {
                sink.line(&prefix, &line)?;
                printed = seen;
            }
        }
        if !follow || has_ended(&api, &name).await? {
            return Ok(printed);
        }
    }
}

/// Whether pod `name` is over (or gone), looking a few times since its
/// status lags the end of its log.
async fn has_ended(api: &Api<Pod>, name: &str) -> Result<bool, Error> {
    for _ in 0..SETTLE_TRIES {
        match api.get_opt(name).await {
            Ok(None) => return Ok(true),
            Ok(Some(p)) if pods::ended(&p) => return Ok(true),
            Ok(Some(_)) => {}
            Err(e) => return Err(log_error(api, name, e)),
        }
        tokio::time::sleep(SETTLE).await;
    }
    Ok(false)
}

/// An API error reading pod `name`. Its 404s are handled where they occur:
/// `Error::api` would take them for a missing Task or CRD.
fn log_error(api: &Api<Pod>, name: &str, e: kube::Error) -> Error {
    let ns = api.namespace().unwrap_or_default();
    match Error::api("get", "pods/log", ns, None, e) {
        Error::Api { source, .. } => {
            Error::Usage(format!("cannot read the log of pod {name}: {source}"))
        }
        other => other,
    }
}
