//! The reconciler never waits: a burst of Tasks is Running at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use kube::api::ListParams;
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};

pub async fn never_blocks(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 20;
    let docs: Vec<String> = (0..N)
        .map(|i| sh_task(&format!("burst-{i}"), "sleep 30", ""))
        .collect();
    ns.apply(&docs.join("---\n"))?;
    let applied = Instant::now();
    let api = tasks(&ns.client, &ns.name);
    wait::until(
        Duration::from_secs(5),
        &format!("all {N} Tasks Running within 5 s of the apply"),
        || {
            let api = api.clone();
            async move {
                let list = api.list(&ListParams::default()).await?;
                let running = list
                    .items
                    .iter()
                    .filter(|t| t.data["status"]["phase"] == "Running")
                    .count();
                Ok(running == N)
            }
        },
    )
    .await?;
    let took = applied.elapsed();
    println!(
        "never_blocks: {N} Tasks Running {:.0} ms after the apply returned",
        took.as_secs_f64() * 1000.0
    );
    ensure!(took <= Duration::from_secs(5));
    Ok(())
}
