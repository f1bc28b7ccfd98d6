//! The API server restarted mid-run (SIGTERM, then SIGKILL), and etcd
//! killed in the middle of a burst: watches resume, the operator does not
//! crash-loop (a replica may restart once), every Task ends exactly once
//! with its result, and each had exactly one Job.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, sh_task, tasks, wait};

fn restart_apiserver(c: &Cluster, kill: bool) -> Result<()> {
    c.restart("apiserver", kill).map(|_| ())
}

/// Sum of the operator containers' restart counts.
fn operator_restarts(c: &Cluster) -> Result<u64> {
    let out = c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/name=longtask-operator",
        "-o",
        "jsonpath={range .items[*]}{.status.containerStatuses[0].restartCount}{\"\\n\"}{end}",
    ])?;
    Ok(out
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .sum())
}

pub async fn apiserver_restarted(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 6;
    let restarts_before = operator_restarts(&c)?;
    let log = JobLog::start(&ns.client, &ns.name);
    // Tasks that outlast both restarts, and one that ends between them.
    let docs: Vec<String> = (0..N)
        .map(|i| {
            let secs = if i == 0 { 1 } else { 20 + i };
            sh_task(
                &format!("steady-{i}"),
                &format!("sleep {secs}; echo steady-{i} > \"$LONGTASK_RESULT\""),
                "",
            )
        })
        .collect();
    ns.apply(&docs.join("---\n"))?;
    let api = tasks(&ns.client, &ns.name);
    wait::until(Duration::from_secs(30), "all Tasks Running", || {
        let api = api.clone();
        async move {
            let l = api.list(&Default::default()).await?;
            Ok(l.items.len() == N && l.items.iter().all(|t| !t.data["status"]["phase"].is_null()))
        }
    })
    .await?;
    restart_apiserver(&c, false)?;
    restart_apiserver(&c, true)?;
    for i in 0..N {
        let t = wait::condition(
            &api,
            &format!("steady-{i}"),
            "Complete",
            Duration::from_secs(120),
        )
        .await?;
        ensure!(
            t["status"]["result"].as_str().map(str::trim) == Some(&format!("steady-{i}")),
            "steady-{i}: {}",
            t["status"]
        );
    }
    let names: Vec<String> = (0..N).map(|i| format!("steady-{i}")).collect();
    log.one_each(names.iter().map(String::as_str))?;
    // A leader that cannot renew its Lease while the API server is away
    // steps down by exiting (as client-go's leader election does), so each
    // replica may restart once; more than that is a crash loop.
    let restarts = operator_restarts(&c)? - restarts_before;
    println!("apiserver_restarted: operator containers restarted {restarts} times");
    ensure!(
        restarts <= 2,
        "operator containers restarted {restarts} times: a crash loop"
    );
    c.wait_operator("60s")?;
    Ok(())
}

/// etcd SIGKILLed and started again while a burst of 100 Tasks is being
/// created: the creates the API server refused meanwhile are sent again
/// (as any client does), and then 0 lost (every Task Completed), 0
/// duplicated (one Job each, one attempt) and 0 wrong (each its own
/// result).
pub async fn etcd_restarted_under_a_burst(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 100;
    let restarts_before = operator_restarts(&c)?;
    let log = JobLog::start(&ns.client, &ns.name);
    let names: Vec<String> = (0..N).map(|i| format!("burst-{i}")).collect();
    let doc = |i: usize| {
        sh_task(
            &names[i],
            &format!("sleep {}; echo burst-{i} > \"$LONGTASK_RESULT\"", 1 + i % 4),
            "",
        )
    };
    let first: Vec<String> = (0..N / 2).map(doc).collect();
    ns.apply(&first.join("---\n"))?;
    let begun = std::time::Instant::now();
    let killer = {
        let c = c.clone();
        std::thread::spawn(move || {
            let out = c.restart("etcd", true);
            (begun.elapsed(), out)
        })
    };
    // The rest one by one while etcd goes and comes back; a refused
    // create is sent again (apply is idempotent).
    let mut refused = 0;
    for i in N / 2..N {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while let Err(e) = ns.apply(&doc(i)) {
            refused += 1;
            ensure!(
                std::time::Instant::now() < deadline,
                "creates refused for 2 minutes: {e:#}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let created = begun.elapsed();
    let (restarted_in, out) = killer
        .join()
        .map_err(|_| anyhow::anyhow!("the restart thread panicked"))?;
    let out = out?;
    println!(
        "etcd_restarted_under_a_burst: {} (done {restarted_in:.1?} after the second half began, \
         which took {created:.1?}; {refused} creates refused meanwhile)",
        out.trim()
    );
    ensure!(
        created > restarted_in,
        "the creates ended before etcd came back: the fault missed the burst"
    );
    let api = tasks(&ns.client, &ns.name);
    let mut wrong = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let t = wait::condition(&api, n, "Complete", Duration::from_secs(180)).await?;
        let st = &t["status"];
        if st["result"].as_str().map(str::trim) != Some(&format!("burst-{i}"))
            || st["attempts"] != 1
        {
            wrong.push(format!("{n}: {st}"));
        }
    }
    ensure!(wrong.is_empty(), "wrong results or attempts: {wrong:#?}");
    log.one_each(names.iter().map(String::as_str))?;
    let restarts = operator_restarts(&c)? - restarts_before;
    println!(
        "etcd_restarted_under_a_burst: {N} Tasks, operator containers restarted {restarts} times"
    );
    ensure!(
        restarts <= 2,
        "operator containers restarted {restarts} times: a crash loop"
    );
    c.wait_operator("60s")?;
    Ok(())
}
