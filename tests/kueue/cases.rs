//! The cases: each makes its own ClusterQueue `cq-NS` of 2 CPUs (open to
//! its namespace only) and LocalQueue `lq`, so they run side by side.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use longtask_e2e::tracks::Track;
use longtask_e2e::{Cluster, TestNs, tasks, wait};
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);

/// ResourceFlavor `default-flavor`, ClusterQueue `cq-NS` with 2 CPUs of
/// quota (preempting lower priorities within itself when `preempt`), and
/// LocalQueue `lq`; with `preempt`, the WorkloadPriorityClasses `lt-low`
/// (10) and `lt-high` (1000).
fn queues(ns: &TestNs, preempt: bool) -> Result<()> {
    let name = &ns.name;
    let preemption = if preempt {
        "  preemption: {withinClusterQueue: LowerPriority}\n"
    } else {
        ""
    };
    let mut yaml = format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: default-flavor}}\n---\n\
         apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: cq-{name}}}\nspec:\n\
         \x20 namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {name}}}}}\n{preemption}\
         \x20 resourceGroups:\n\
         \x20 - coveredResources: [cpu]\n\
         \x20   flavors:\n\
         \x20   - name: default-flavor\n\
         \x20     resources: [{{name: cpu, nominalQuota: \"2\"}}]\n---\n\
         apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: lq}}\nspec: {{clusterQueue: cq-{name}}}\n"
    );
    if preempt {
        for (class, value) in [("lt-low", 10), ("lt-high", 1000)] {
            yaml.push_str(&format!(
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {{name: {class}}}\nvalue: {value}\n"
            ));
        }
    }
    // The flavor and the priority classes are cluster-scoped and shared by
    // the cases running beside this one: kubectl's apply reads, finds none
    // and creates, and the other case's create can land between the two
    // (AlreadyExists). Applied again, it finds the one there.
    for attempt in 1.. {
        match ns.apply(&yaml) {
            Err(e) if attempt < 3 && format!("{e:#}").contains("AlreadyExists") => {
                eprintln!("queues: {e:#}; applying again");
            }
            other => return other.map(drop),
        }
    }
    unreachable!("the loop returns")
}

/// A Task in LocalQueue `lq` requesting `cpu`, running `sh -c SCRIPT`,
/// with Kueue's priority class `priority` if any.
fn task(name: &str, script: &str, cpu: u32, priority: Option<&str>) -> String {
    let script = serde_json::to_string(script).unwrap();
    let prio = priority.map_or(String::new(), |p| {
        format!("    kueue.x-k8s.io/priority-class: {p}\n")
    });
    format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: {name}\n  labels:\n\
         \x20   kueue.x-k8s.io/queue-name: lq\n{prio}spec:\n  command: [sh, -c, {script}]\n\
         \x20 resources: {{requests: {{cpu: \"{cpu}\"}}}}\n"
    )
}

/// A file of the cluster's directory the programs (host processes) append
/// a line to each time they start.
fn marker(c: &Cluster, ns: &TestNs, name: &str) -> PathBuf {
    c.dir.join(format!("{}-{name}.starts", ns.name))
}

fn starts(path: &PathBuf) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

/// The Kueue Workloads of namespace `ns`.
fn workloads(ns: &TestNs) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "workloads");
    Api::namespaced_with(ns.client.clone(), &ns.name, &ar)
}

/// Five Tasks of 1 CPU on a ClusterQueue of 2 CPUs (the nodes have 8):
/// never more than two pods Running, the others Queued with Kueue's
/// reason and message, and all complete.
pub async fn five_tasks_two_cpus(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 5;
    queues(&ns, false)?;
    let pods = Track::running_pods(&ns.client, &ns.name, None);
    let docs: Vec<String> = (0..N)
        .map(|i| task(&format!("q-{i}"), "sleep 3", 1, None))
        .collect();
    let started = Instant::now();
    ns.apply(&docs.join("---\n"))?;
    let api = tasks(&ns.client, &ns.name);
    let seen = Mutex::new(String::new());
    wait::until(
        MINUTE,
        "a Task Queued (QuotaPending) with Kueue's message",
        || {
            let api = api.clone();
            let seen = &seen;
            async move {
                let list = api.list(&ListParams::default()).await?;
                let pending = list.items.iter().find(|t| {
                    let s = &t.data["status"];
                    s["phase"] == "Queued"
                        && s["reason"] == "QuotaPending"
                        && s["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("insufficient unused quota"))
                        && wait::has_condition(&t.data, "Waiting")
                });
                if let Some(t) = pending {
                    *seen.lock().unwrap() = t.data["status"]["message"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                }
                Ok(pending.is_some())
            }
        },
    )
    .await?;
    let seen = seen.into_inner().unwrap();
    ensure!(seen.contains("LocalQueue lq"), "message: {seen}");
    ns.all_complete(N, 3 * MINUTE).await?;
    let peak = pods.peak();
    println!(
        "five_tasks_two_cpus: {N} Tasks of 1 CPU on a 2-CPU ClusterQueue done in {:.0}s, at most \
         {peak} pods Running at once; waiting said: {seen}",
        started.elapsed().as_secs_f64()
    );
    ensure!(
        peak <= 2,
        "{peak} pods Running at once on a 2-CPU ClusterQueue"
    );
    ensure!(
        peak == 2,
        "at most {peak} pod Running at once: Kueue admitted one at a time"
    );
    Ok(())
}

/// Two low-priority Tasks fill the ClusterQueue; a high-priority one
/// preempts one of them, which goes back to Queued (Preempted, Kueue's
/// message), runs again once the high one is done, and completes with
/// `attempts: 1`: the preemption is not an attempt.
pub async fn high_priority_preempts(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    queues(&ns, true)?;
    let gate = c.dir.join(format!("{}-go", ns.name));
    let lows = ["low-a", "low-b"];
    let docs: Vec<String> = lows
        .iter()
        .map(|n| {
            let script = format!(
                "echo start >> '{}'; while [ ! -e '{}' ]; do sleep 0.2; done; echo done > \"$LONGTASK_RESULT\"",
                marker(&c, &ns, n).display(),
                gate.display()
            );
            task(n, &script, 1, Some("lt-low"))
        })
        .collect();
    ns.apply(&docs.join("---\n"))?;
    wait::until(2 * MINUTE, "both low-priority programs started", || async {
        Ok(lows.iter().all(|n| starts(&marker(&c, &ns, n)) == 1))
    })
    .await?;
    let started = Instant::now();
    ns.apply(&task(
        "high",
        r#"sleep 2; echo high > "$LONGTASK_RESULT""#,
        1,
        Some("lt-high"),
    ))?;
    let victim = Mutex::new((String::new(), Value::Null));
    wait::until(MINUTE, "a low-priority Task Queued (Preempted)", || {
        let victim = &victim;
        let ns = &ns;
        async move {
            for n in lows {
                let s = ns.status(n).await?;
                if s["phase"] == "Queued" && s["reason"] == "Preempted" {
                    *victim.lock().unwrap() = (n.to_owned(), s);
                    return Ok(true);
                }
            }
            Ok(false)
        }
    })
    .await?;
    let (victim, queued) = victim.into_inner().unwrap();
    let message = queued["message"].as_str().unwrap_or_default().to_owned();
    ensure!(
        message.contains("Preempted to accommodate"),
        "{victim}: Kueue's message missing: {queued}"
    );
    let api = tasks(&ns.client, &ns.name);
    let high = wait::condition(&api, "high", "Complete", 2 * MINUTE).await?;
    ensure!(
        high["status"]["result"] == "high\n",
        "high: {}",
        high["status"]
    );
    let high_done = started.elapsed();
    std::fs::write(&gate, b"").context("open the gate")?;
    let res = ns.all_complete(3, 3 * MINUTE).await;
    let _ = std::fs::remove_file(&gate);
    res?;
    let end = ns.status(&victim).await?;
    let runs = starts(&marker(&c, &ns, &victim));
    println!(
        "high_priority_preempts: {victim} preempted, high done {:.0}s after it was applied; \
         {victim} ran {runs} times, attempts {}; Queued said: {message}",
        high_done.as_secs_f64(),
        end["attempts"]
    );
    ensure!(end["result"] == "done\n", "{victim}: {end}");
    ensure!(
        end["attempts"] == 1,
        "{victim}: the preemption was charged: {end}"
    );
    ensure!(
        runs == 2,
        "{victim} started {runs} times, want 2 (preempted once)"
    );
    Ok(())
}

/// A Task cancelled while Kueue has it admitted and running ends Cancelled
/// with its partial result, its Workload deactivated; Kueue never resumes
/// it (its program starts once) and gives its quota to the next Task.
pub async fn cancel_stops_for_good(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    queues(&ns, false)?;
    let mark = marker(&c, &ns, "stoppable");
    let script = format!(
        "echo start >> '{}'; trap 'echo partial > \"$LONGTASK_RESULT\"; exit 143' TERM; while true; do sleep 0.2; done",
        mark.display()
    );
    ns.apply(&task("stoppable", &script, 2, None))?;
    wait::until(2 * MINUTE, "the program to start", || async {
        Ok(starts(&mark) == 1)
    })
    .await?;
    // The next Task waits for the quota the cancelled one holds.
    ns.apply(&task("next", r#"echo next > "$LONGTASK_RESULT""#, 2, None))?;
    wait::until(MINUTE, "next Queued (QuotaPending)", || async {
        let s = ns.status("next").await?;
        Ok(s["phase"] == "Queued" && s["reason"] == "QuotaPending")
    })
    .await?;
    let started = Instant::now();
    ns.cancel("stoppable")?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, "stoppable", "Failed", MINUTE).await?;
    let cancelled_in = started.elapsed();
    let st = &t["status"];
    ensure!(st["reason"] == "Cancelled", "status: {st}");
    ensure!(st["result"] == "partial\n", "partial result: {st}");
    let next = wait::condition(&api, "next", "Complete", 2 * MINUTE).await?;
    ensure!(
        next["status"]["result"] == "next\n",
        "next: {}",
        next["status"]
    );
    // Kueue holds it deactivated and suspended; its program never starts
    // again (checked over a few seconds more, longer than a resume takes).
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    let pods: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let wls = workloads(&ns);
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let job = jobs.get("stoppable").await?;
        ensure!(
            job.spec.as_ref().and_then(|s| s.suspend) == Some(true),
            "the cancelled Task's Job is not suspended"
        );
        let job_uid = job.metadata.uid.unwrap_or_default();
        let lp = ListParams::default().labels(&format!("kueue.x-k8s.io/job-uid={job_uid}"));
        let wl = wls.list(&lp).await?;
        ensure!(
            wl.items.len() == 1 && wl.items[0].data["spec"]["active"] == false,
            "the cancelled Task's Workload is not deactivated: {:?}",
            wl.items.iter().map(|w| &w.data["spec"]).collect::<Vec<_>>()
        );
        let running = pods
            .list(&ListParams::default().labels("batch.kubernetes.io/job-name=stoppable"))
            .await?
            .items
            .len();
        ensure!(running == 0, "{running} pods of the cancelled Task's Job");
        ensure!(
            starts(&mark) == 1,
            "the cancelled program started {} times",
            starts(&mark)
        );
        if Instant::now() > until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "cancel_stops_for_good: Cancelled {:.1}s after the patch with result {}, Workload \
         deactivated, program started once, next Task completed",
        cancelled_in.as_secs_f64(),
        st["result"]
    );
    Ok(())
}
