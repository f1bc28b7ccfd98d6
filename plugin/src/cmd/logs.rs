//! `kubectl longtask logs`: a Task's log, wherever it is. Waits for the pod
//! (saying why on stderr), follows it and then each retry's pod, every shard
//! at once with a `[shard I] ` prefix, and once the pods are gone prints the
//! lines the Task kept in `status.logTail`. The follower is `task::logs`,
//! which `run --follow` and the web page use too.

use std::sync::Arc;

use crate::cli::LogsArgs;
use crate::client::{Error, Kube};
use crate::task::logs::sink::Sink;
use crate::task::logs::{self, Opts, Terminal};

pub async fn run(k: &Kube, a: LogsArgs) -> Result<(), Error> {
    let task = k.task(&a.name).await?;
    let shards = u32::try_from(task.spec.shards.max(1)).unwrap_or(1);
    if let Some(s) = a.shard.filter(|s| *s >= shards) {
        return Err(Error::Usage(format!(
            "--shard {s}: task {} has {shards} shard(s), numbered from 0",
            a.name
        )));
    }
    let o = Opts {
        follow: a.follow,
        all_attempts: a.all_attempts,
        headers: a.all_attempts,
        shard: a.shard,
    };
    let sink: Arc<dyn Sink> = Arc::new(Terminal);
    if o.follow {
        logs::follow(k, task, o, &sink).await
    } else {
        logs::current(k, task, o, &sink).await
    }
}
