//! Restart safety: the operator pod is deleted while Tasks run; every Task
//! still completes, and each had exactly one Job (one Job UID) in its life.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Result, ensure};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::Api;
use kube::runtime::watcher;
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, sh_task, tasks, wait};

pub async fn restart_safe(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 6;
    // Every Job the cluster ever shows in this namespace, by name.
    let seen: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>> = Arc::default();
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &ns.name);
    let recorder = {
        let seen = seen.clone();
        tokio::spawn(async move {
            let mut stream = watcher(jobs, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                let objs = match ev {
                    Ok(watcher::Event::Apply(j)) | Ok(watcher::Event::InitApply(j)) => vec![j],
                    _ => vec![],
                };
                for j in objs {
                    if let (Some(n), Some(u)) = (j.metadata.name, j.metadata.uid) {
                        seen.lock().unwrap().entry(n).or_default().insert(u);
                    }
                }
            }
        })
    };
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
        c.kubectl.run(&[
            "-n",
            SYSTEM_NS,
            "delete",
            "pod",
            "-l",
            "app.kubernetes.io/name=longtask-operator",
            "--wait=false",
        ])?;
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
    recorder.abort();
    let seen = seen.lock().unwrap().clone();
    for i in 0..N {
        let name = format!("survivor-{i}");
        let uids = seen.get(&name).cloned().unwrap_or_default();
        ensure!(
            uids.len() == 1,
            "{name} had {} Jobs in its life: {uids:?}",
            uids.len()
        );
    }
    Ok(())
}
