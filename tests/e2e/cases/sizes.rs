//! Result sizes: a large result is kept whole in the ConfigMap and cut to
//! 32 KiB in status (resultTruncated); one above the limit fails the Task
//! with ResultTooLarge, giving the size and the limit.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use longtask_e2e::{Cluster, TestNs, sh_task, tasks, wait};

pub async fn result_sizes(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    // 200,000 bytes: under the 1,000,000-byte limit, over the 32 KiB status cap.
    ns.apply(&sh_task(
        "big",
        "head -c 200000 /dev/zero | tr '\\0' x > \"$LONGTASK_RESULT\"",
        "",
    ))?;
    ns.apply(&sh_task(
        "huge",
        "head -c 2000000 /dev/zero | tr '\\0' x > \"$LONGTASK_RESULT\"",
        "",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "big", "Complete", Duration::from_secs(60)).await?;
    let st = &t["status"];
    ensure!(
        st["resultTruncated"] == true,
        "big: {}",
        st["resultTruncated"]
    );
    ensure!(
        st["result"].as_str().map(str::len) == Some(32 * 1024),
        "big: status.result length"
    );
    let whole = ns.k(&[
        "get",
        "configmap",
        "big-result",
        "-o",
        "jsonpath={.data.result}",
    ])?;
    ensure!(
        whole.len() == 200_000,
        "big: ConfigMap holds {} bytes",
        whole.len()
    );
    let t = wait::condition(&api, "huge", "Failed", Duration::from_secs(60)).await?;
    let st = &t["status"];
    ensure!(st["reason"] == "ResultTooLarge", "huge: {st}");
    let msg = st["message"].as_str().unwrap_or_default();
    ensure!(
        msg.contains("2000000") && msg.contains("1000000"),
        "huge: {msg}"
    );
    Ok(())
}
