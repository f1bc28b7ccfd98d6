//! Restart safety: the operator pod is deleted while Tasks run; every Task
//! still completes, and each had exactly one Job (one Job UID) in its life.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, TestNs, operator, sh_task, tasks, wait};

pub async fn restart_safe(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 6;
    // Every Job the cluster ever shows in this namespace, by name.
    let log = JobLog::start(&ns.client, &ns.name);
    let docs: Vec<String> = (0..N)
        .map(|i| {
            sh_task(
                &format!("survivor-{i}"),
                &format!("sleep {}; echo done-{i} > \"$LONGTASK_RESULT\"", 4 + i),
                "",
            )
        })
        .collect();
    ns.apply(&docs.join("---\n"))?;
    let api = tasks(&ns.client, &ns.name);
    // Kill the operator twice while the Tasks run: once right after the
    // apply, once when some are Running.
    for round in 0..2 {
        operator::delete_pods(&c.kubectl)?;
        if round == 0 {
            wait::until(
                Duration::from_secs(60),
                "a Task Running after the first kill",
                || {
                    let api = api.clone();
                    async move {
                        let l = api.list(&Default::default()).await?;
                        Ok(l.items
                            .iter()
                            .any(|t| t.data["status"]["phase"] == "Running"))
                    }
                },
            )
            .await?;
        }
    }
    for i in 0..N {
        let t = wait::condition(
            &api,
            &format!("survivor-{i}"),
            "Complete",
            Duration::from_secs(120),
        )
        .await?;
        ensure!(
            t["status"]["result"].as_str().map(str::trim) == Some(&format!("done-{i}")),
            "survivor-{i}: {}",
            t["status"]
        );
    }
    let names: Vec<String> = (0..N).map(|i| format!("survivor-{i}")).collect();
    log.one_each(names.iter().map(String::as_str))?;
    Ok(())
}
