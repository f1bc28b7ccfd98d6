//! A sharded Task runs as an Indexed Job, `parallelism` shards at a time,
//! and collects every shard's result in order.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use longtask_e2e::tracks::Track;
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};

pub async fn twelve_shards_four_at_a_time(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let pods = Track::running_pods(&ns.client, &ns.name, Some("longtask.dev/task-name=split"));
    ns.apply(&sh_task(
        "split",
        r#"echo "shard $LONGTASK_SHARD of $LONGTASK_SHARDS" > "$LONGTASK_RESULT"; sleep 1"#,
        "  shards: 12\n  parallelism: 4\n",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "split", "Complete", Duration::from_secs(180)).await?;
    let st = &t["status"];
    let results = st["shardResults"].as_array().cloned().unwrap_or_default();
    ensure!(results.len() == 12, "{} shard results: {st}", results.len());
    for (i, r) in results.iter().enumerate() {
        ensure!(
            r["index"] == i && r["result"] == format!("shard {i} of 12\n") && r["exitCode"] == 0,
            "shard result {i}: {r}"
        );
    }
    ensure!(st["shards"]["succeeded"] == 12, "shards: {}", st["shards"]);
    let peak = pods.peak();
    println!(
        "twelve_shards_four_at_a_time: 12 ordered results, at most {peak} shard pods Running at once"
    );
    ensure!(
        peak <= 4,
        "{peak} shard pods Running at once with parallelism 4"
    );
    Ok(())
}
