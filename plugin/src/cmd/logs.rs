//! `kubectl longtask logs`.

use crate::cli::LogsArgs;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: LogsArgs) -> Result<(), Error> {
    Err(Error::Usage("logs: not built yet".to_owned()))
}

/// Streams the logs of Task `name` (every shard, across retries) to
/// stdout until the Task is finished. Used by `run --follow` and
/// `rerun --follow`, which then report the outcome.
pub async fn follow_task(_k: &Kube, _name: &str) -> Result<(), Error> {
    Err(Error::Usage("logs: not built yet".to_owned()))
}
