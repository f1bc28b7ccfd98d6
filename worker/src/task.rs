//! One run of a Task's program: who it runs for, its files, progress,
//! the program itself, and the result written for the operator.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crds::names::env;
use crds::result::{
    LOG_TAIL_LINES, MAX_LOG_TAIL_BYTES, MAX_MESSAGE_BYTES, STDOUT_TAIL_BYTES, TaskResult,
    truncate_utf8,
};
use k8s_openapi::jiff::Timestamp;

use crate::identity::IdentityError;
use crate::report::ReportError;
use crate::{chain, identity, paths, progress, report, run, say};

/// Runs `program` (name and arguments) for the Task named in the
/// environment, writes its result, and returns its exit code.
pub async fn run_task(program: &[String]) -> i32 {
    let vars: HashMap<String, String> = std::env::vars().collect();
    let id = identity::from_env(&vars).map_err(|e| match e {
        IdentityError::Unset { vars } => vars,
        e => {
            say(&format!("cannot tell which shard this is: {}", chain(&e)));
            vec![env::SHARD]
        }
    });
    if let Err(missing) = &id {
        say(&format!(
            "not running in a longtask Job ({} unset): running the program without reporting a result",
            missing.join(", ")
        ));
    }
    let run_name = id.as_ref().map_or("local", |i| i.pod_name.as_str());
    let base = vars.get(env::WORK_DIR).map(PathBuf::from);
    let files = match paths::prepare(base.as_deref(), run_name) {
        Ok(f) => Some(f),
        Err(e) => {
            say(&format!(
                "no writable directory for $LONGTASK_RESULT: {}",
                chain(&e)
            ));
            None
        }
    };
    let mut child_env = Vec::new();
    if let Some(f) = &files {
        child_env.push((
            env::RESULT.to_owned(),
            f.result.to_string_lossy().into_owned(),
        ));
        child_env.push((
            env::PROGRESS.to_owned(),
            f.progress.to_string_lossy().into_owned(),
        ));
    }

    // Progress is reported only inside a Job; the tailer stops when the
    // program ends and hands its latest point to the final write.
    let api = match &id {
        Ok(i) => match report::connect(i).await {
            Ok(a) => Some(a),
            Err(e) => {
                say(&format!("progress will not be reported: {}", chain(&e)));
                None
            }
        },
        Err(_) => None,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let tailer = match (&id, &files) {
        (Ok(i), Some(f)) => Some(tokio::spawn(progress::tail(
            f.progress.clone(),
            i.clone(),
            api.clone(),
            stopped,
        ))),
        _ => None,
    };
    let outcome = run::run(
        program,
        &child_env,
        STDOUT_TAIL_BYTES,
        LOG_TAIL_LINES,
        MAX_LOG_TAIL_BYTES,
    )
    .await;
    let _ = stop.send(());
    let latest = match tailer {
        Some(t) => t.await.ok().flatten(),
        None => None,
    };
    let file = files.as_ref().map_or(Path::new(""), |f| f.result.as_path());
    let (result_size, result, note) = match report::read_result(file, &outcome.stdout_tail) {
        Ok(bytes) => (bytes.len(), bytes, None),
        Err(e) => {
            let size = match e {
                ReportError::ResultTooLarge { size } => size,
                _ => 0,
            };
            (size, Vec::new(), Some(chain(&e)))
        }
    };
    let outcome_message = outcome.message();
    let message = [
        outcome_message.as_str(),
        note.as_deref().unwrap_or_default(),
    ]
    .iter()
    .filter(|m| !m.is_empty())
    .copied()
    .collect::<Vec<_>>()
    .join("; ");
    if !message.is_empty() {
        say(&message);
    }
    let r = TaskResult {
        result,
        exit_code: outcome.exit_code(),
        finished_at: Timestamp::now().to_string(),
        message: truncate_utf8(&message, MAX_MESSAGE_BYTES).to_owned(),
        result_size,
        log_tail: outcome.log_tail.clone(),
        omitted: false,
    };
    if let Ok(id) = &id {
        match report::write(api, id, &r, latest.as_ref()).await {
            Ok(()) => say(&format!("result written (exit code {})", r.exit_code)),
            Err(e) => say(&format!("RESULT NOT WRITTEN: {}", chain(&e))),
        }
    }
    if let Some(f) = &files {
        let _ = std::fs::remove_dir_all(&f.dir);
    }
    outcome.exit_code()
}
