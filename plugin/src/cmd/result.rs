//! `kubectl longtask result NAME [-o FILE] [--shard I]`: the exact bytes
//! the program returned, read from the result ConfigMap (plain or gzip),
//! which must carry a worker's stamp, checked against the digest of what
//! the operator accepted (status.resultDigest, or the shard's
//! status.shardResults[I].resultDigest), and refused when they differ.
//! When the ConfigMap is gone, the status's copy serves if it is whole.
//! A Task's output files (`-o DIR`, `--file NAME`) and a result too large
//! to keep inline come from the output store: `download`. Reading and
//! checking the inline result is `task::result`, shared with the web page.

mod download;

use std::path::Path;

use crds::Task;

use crate::cli::ResultArgs;
use crate::client::{Error, Kube};
use crate::outputs::{self, select, select::Plan};
use crate::task::result::{bytes, name_of};

pub async fn run(k: &Kube, a: ResultArgs) -> Result<(), Error> {
    let task = k.task(&a.name).await?;
    let files = outputs::files(&task);
    let about_outputs = !a.files.is_empty() || !files.is_empty();
    if about_outputs && !task.is_terminal() {
        return Err(unfinished(&task).into());
    }
    let to = a.output.as_deref();
    match select::plan(&a.name, files, to, &a.files)? {
        Plan::Inline { to } => inline(k, &task, a.shard, to).await,
        _ if a.shard.is_some() => Err(Error::Usage(format!(
            "--shard picks a shard's inline result; task {} keeps its result as output files: use -o DIR or --file NAME",
            a.name
        ))),
        Plan::One { file, to } => download::one(k, &task, file, to).await,
        Plan::Dir { root, files } => download::into_dir(k, &task, root, &files).await,
    }
}

/// A Task not finished yet, for the verbs of its outputs.
fn unfinished(task: &Task) -> outputs::Error {
    let phase = task.status.as_ref().and_then(|s| s.phase);
    outputs::Error::Unfinished {
        task: name_of(task),
        phase: phase.map_or("not started", |p| p.as_str()).to_owned(),
    }
}

/// The inline result to `to`, or to stdout; a word on the Task's output
/// files, which only `-o DIR` or `--file` download.
async fn inline(k: &Kube, task: &Task, shard: Option<u32>, to: Option<&Path>) -> Result<(), Error> {
    let bytes = bytes(k, task, shard).await?;
    if let Some(o) = outputs::status(task).filter(|o| !o.files.is_empty()) {
        crate::print::note!(
            "note: task {name} also has output files ({}): kubectl longtask result {name} -o DIR downloads them",
            outputs::summary(Some(o)),
            name = name_of(task)
        );
    }
    match to {
        Some(path) => std::fs::write(path, &bytes)?,
        None => {
            let shown = crate::safe::for_stdout(&bytes);
            if *shown != bytes[..] {
                crate::print::note!(
                    "note: control characters in the result are shown escaped; redirect it or use -o FILE for the exact bytes"
                );
            }
            crate::print::out_data(&bytes)?;
        }
    }
    Ok(())
}
