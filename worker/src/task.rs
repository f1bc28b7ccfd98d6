//! One run of a Task's program, step by step: who it runs for, its files,
//! progress, the program itself, and the result written for the operator.
//!
//! No step stops the run: outside a longtask Job, without a writable
//! directory or without an API client, the program still runs and the
//! worker says what it could not do.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crds::names::env;
use crds::progress::Report;
use crds::result::{
    LOG_TAIL_LINES, MAX_LOG_TAIL_BYTES, MAX_MESSAGE_BYTES, MAX_PLAIN_RESULT_BYTES,
    STDOUT_TAIL_BYTES, TaskResult, truncate_utf8,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crds::outputs::{OutputError, OutputReport, RESULT_OUTPUT};

use crate::identity::{Identity, IdentityError};
use crate::outputs::{self, Plan};
use crate::paths::Files;
use crate::report::ReportError;
use crate::run::Outcome;
use crate::{chain, identity, paths, progress, report, run, say};

/// Runs `program` (name and arguments) for the Task named in the
/// environment, writes its result, and returns the exit code to exit with.
pub async fn run_task(program: &[String]) -> ExitCode {
    let vars: HashMap<String, String> = std::env::vars().collect();
    let id = read_identity(&vars);
    let files = prepare_files(&vars, id.as_ref());
    let run_dir = files.as_ref().map(|f| f.dir.as_path());
    let plan = outputs::plan(&vars, run_dir, id.as_ref().and_then(|i| i.shard));
    let api = connect(id.as_ref()).await;
    let progress = start_progress(id.as_ref(), files.as_ref(), api.clone());
    let inputs = crate::inputs::prepare(&vars, run_dir);
    let outcome = run_program(program, files.as_ref(), plan.as_ref(), inputs).await;
    let latest = stop_progress(progress).await;
    let (result, report) = finish(files.as_ref(), &outcome, plan.as_ref()).await;
    if let Some(id) = &id {
        write_result(api, id, &result, latest.as_ref(), report.as_ref()).await;
    }
    remove_files(files);
    exit_code(result.exit_code)
}

/// The Task, Job and pod this run is for; `None` outside a longtask Job,
/// where the program runs without a result being reported.
fn read_identity(vars: &HashMap<String, String>) -> Option<Identity> {
    let unset = match identity::from_env(vars) {
        Ok(id) => return Some(id),
        Err(IdentityError::Unset { vars }) => vars.join(", "),
        Err(e) => {
            say(&format!("cannot tell which shard this is: {}", chain(&e)));
            env::SHARD.to_owned()
        }
    };
    say(&format!(
        "not running in a longtask Job ({unset} unset): running the program without reporting a result"
    ));
    None
}

/// A private directory for the result and progress files, in
/// `$LONGTASK_WORK_DIR` or the temp dir; `None` when neither is writable.
fn prepare_files(vars: &HashMap<String, String>, id: Option<&Identity>) -> Option<Files> {
    let run_name = id.map_or("local", |i| i.pod_name.as_str());
    let base = vars.get(env::WORK_DIR).map(PathBuf::from);
    match paths::prepare(base.as_deref(), run_name) {
        Ok(files) => Some(files),
        Err(e) => {
            say(&format!(
                "no writable directory for $LONGTASK_RESULT: {}",
                chain(&e)
            ));
            None
        }
    }
}

/// A client for the result ConfigMap, made before the program starts so
/// that progress can be reported; only inside a Job.
async fn connect(id: Option<&Identity>) -> Option<Api<ConfigMap>> {
    match report::connect(id?).await {
        Ok(api) => Some(api),
        Err(e) => {
            say(&format!("progress will not be reported: {}", chain(&e)));
            None
        }
    }
}

/// The progress tailer, running while the program does.
struct Progress {
    stop: oneshot::Sender<()>,
    tailer: JoinHandle<Option<Report>>,
}

/// Starts tailing `$LONGTASK_PROGRESS`, only inside a Job and with files.
/// It writes progress through `api` when there is one.
fn start_progress(
    id: Option<&Identity>,
    files: Option<&Files>,
    api: Option<Api<ConfigMap>>,
) -> Option<Progress> {
    let (id, files) = (id?, files?);
    let (stop, stopped) = oneshot::channel();
    let path = files.progress.clone();
    let tailer = tokio::spawn(progress::tail(path, id.clone(), api, stopped));
    Some(Progress { stop, tailer })
}

/// Runs the program with `$LONGTASK_RESULT` and `$LONGTASK_PROGRESS` set
/// when there are files for them, `$LONGTASK_OUTPUTS` with a grant, and
/// `$LONGTASK_INPUTS` with upstreams.
async fn run_program(
    program: &[String],
    files: Option<&Files>,
    plan: Option<&Plan>,
    inputs: Option<PathBuf>,
) -> Outcome {
    let mut child_env: Vec<(String, String)> = files
        .map(|f| {
            vec![
                (
                    env::RESULT.to_owned(),
                    f.result.to_string_lossy().into_owned(),
                ),
                (
                    env::PROGRESS.to_owned(),
                    f.progress.to_string_lossy().into_owned(),
                ),
            ]
        })
        .unwrap_or_default();
    child_env.extend(plan.and_then(Plan::env));
    child_env.extend(inputs.map(|d| {
        let dir = d.to_string_lossy().into_owned();
        (crds::after::inputs::DIR.to_owned(), dir)
    }));
    let (tail_bytes, log_lines, log_bytes) =
        (STDOUT_TAIL_BYTES, LOG_TAIL_LINES, MAX_LOG_TAIL_BYTES);
    run::run(program, &child_env, tail_bytes, log_lines, log_bytes).await
}

/// Stops the tailer once the program has ended; its latest point goes
/// into the final write.
async fn stop_progress(progress: Option<Progress>) -> Option<Report> {
    let Progress { stop, tailer } = progress?;
    // An error means the tailer has already ended.
    let _ = stop.send(());
    tailer.await.ok().flatten()
}

/// The result to write, and with a grant the outputs uploaded: a result
/// too large to keep inline (or beside the outputs' list) is uploaded as
/// the output `.longtask/result`, and a short note naming it is kept
/// inline instead.
async fn finish(
    files: Option<&Files>,
    outcome: &Outcome,
    plan: Option<&Plan>,
) -> (TaskResult, Option<OutputReport>) {
    let Some(plan) = plan else {
        return (read_result(files, outcome), None);
    };
    let file = files.map_or(Path::new(""), |f| f.result.as_path());
    let read = report::read_result(file, &outcome.stdout_tail);
    let size = match &read {
        Ok(bytes) => bytes.len(),
        Err(ReportError::ResultTooLarge { size }) => *size,
        Err(_) => 0,
    };
    let (mut report, read) = match plan.walk() {
        Err(e) => {
            let report = OutputReport {
                files: Vec::new(),
                error: Some(e),
            };
            (report, read)
        }
        Ok(found) => {
            let moved = file.is_file() && plan.takes_result(size, &found);
            let report = plan.upload(found, moved.then_some(file)).await;
            let read = if moved && report.error.is_none() {
                Ok(moved_note(size).into_bytes())
            } else {
                read
            };
            (report, read)
        }
    };
    let result = assemble(outcome, read, report.error.as_ref());
    // A failed upload's files are not the Task's outputs; their list is
    // dropped when it would crowd the inline result out of the ConfigMap.
    if report.error.is_some()
        && outputs::to_json(&report).len() + result.result.len() > MAX_PLAIN_RESULT_BYTES
    {
        report.files.clear();
    }
    (result, Some(report))
}

/// The inline result of a result uploaded as an output.
fn moved_note(size: usize) -> String {
    format!("the result ({size} bytes) was uploaded as the output {RESULT_OUTPUT}")
}

/// The result to write: how the program ended, and what it left as its
/// result (the result file, else the tail of its stdout). What went
/// wrong is said, and kept as the result's message.
fn read_result(files: Option<&Files>, outcome: &Outcome) -> TaskResult {
    let file = files.map_or(Path::new(""), |f| f.result.as_path());
    assemble(
        outcome,
        report::read_result(file, &outcome.stdout_tail),
        None,
    )
}

/// The result of `outcome` with the result bytes `read`, and the outputs'
/// failure in its message.
fn assemble(
    outcome: &Outcome,
    read: Result<Vec<u8>, ReportError>,
    outputs: Option<&OutputError>,
) -> TaskResult {
    let (result_size, result, note) = match read {
        Ok(bytes) => (bytes.len(), bytes, None),
        Err(e) => {
            let size = match e {
                ReportError::ResultTooLarge { size } => size,
                _ => 0,
            };
            (size, Vec::new(), Some(chain(&e)))
        }
    };
    let outputs = outputs.map(|e| format!("outputs not uploaded ({}): {}", e.reason, e.message));
    let message = [Some(outcome.message()), note, outputs]
        .into_iter()
        .flatten()
        .filter(|m| !m.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if !message.is_empty() {
        say(&message);
    }
    TaskResult {
        result,
        exit_code: outcome.exit_code(),
        finished_at: Timestamp::now().to_string(),
        message: truncate_utf8(&message, MAX_MESSAGE_BYTES).to_owned(),
        result_size,
        log_tail: outcome.log_tail.clone(),
        omitted: false,
    }
}

/// Writes the result ConfigMap, with the latest progress and the outputs'
/// report, and says whether it was written.
async fn write_result(
    api: Option<Api<ConfigMap>>,
    id: &Identity,
    result: &TaskResult,
    latest: Option<&Report>,
    outputs: Option<&OutputReport>,
) {
    match report::write(api, id, result, latest, outputs).await {
        Ok(()) => say(&format!("result written (exit code {})", result.exit_code)),
        Err(e) => say(&format!("RESULT NOT WRITTEN: {}", chain(&e))),
    }
}

/// Removes the run directory: its files were read.
fn remove_files(files: Option<Files>) {
    if let Some(f) = files {
        let _ = std::fs::remove_dir_all(&f.dir);
    }
}

/// The worker exits with the program's exit code, so the Job sees how the
/// program ended; codes are taken modulo 256, as a shell does.
fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use crds::result::MAX_RESULT_BYTES;

    use super::*;
    use crate::run::RunError;

    fn outcome(ended: Result<(), RunError>, stdout: &[u8]) -> Outcome {
        Outcome {
            ended,
            stdout_tail: stdout.to_vec(),
            log_tail: String::from_utf8_lossy(stdout).into_owned(),
        }
    }

    #[test]
    fn stdout_is_the_result_without_files() {
        let r = read_result(None, &outcome(Ok(()), b"42\n"));
        assert_eq!(
            (r.result.as_slice(), r.result_size),
            (b"42\n".as_slice(), 3)
        );
        assert_eq!(
            (r.exit_code, r.message.as_str(), r.log_tail.as_str()),
            (0, "", "42\n")
        );
    }

    #[test]
    fn a_too_large_file_keeps_its_size_and_both_messages() {
        let dir = std::env::temp_dir().join(format!("lt-task-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = Files {
            result: dir.join("result"),
            progress: dir.join("progress"),
            dir,
        };
        std::fs::write(&files.result, vec![b'x'; MAX_RESULT_BYTES + 1]).unwrap();
        let r = read_result(
            Some(&files),
            &outcome(Err(RunError::Exited { code: 3 }), b"x"),
        );
        assert!(r.result.is_empty() && r.result_size == MAX_RESULT_BYTES + 1 && r.too_large());
        let (size, limit) = (MAX_RESULT_BYTES + 1, MAX_RESULT_BYTES);
        let want = format!(
            "the program exited with code 3; the result is {size} bytes, more than the limit of {limit} bytes"
        );
        assert_eq!((r.exit_code, r.message), (3, want));
        remove_files(Some(files.clone()));
        assert!(!files.dir.exists());
    }

    #[test]
    fn exit_codes_are_taken_modulo_256() {
        assert_eq!(exit_code(0), ExitCode::SUCCESS);
        assert_eq!(exit_code(137), ExitCode::from(137));
        assert_eq!(exit_code(256 + 3), ExitCode::from(3));
    }
}
