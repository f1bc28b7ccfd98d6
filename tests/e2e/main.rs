//! longtask end to end: one devcluster, the operator installed from
//! `manifests/`, and one case per promise the README makes. Cases that only
//! add Tasks run concurrently; cases that disturb the cluster (operator
//! restarts, timing) run one at a time afterwards. Filter by substring:
//! `cargo test -p longtask-e2e --test e2e -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use longtask_e2e::{Cluster, TestNs};

type CaseFn = fn(Arc<Cluster>, TestNs) -> Pin<Box<dyn Future<Output = Result<()>> + Send>>;

/// One end-to-end case: `exclusive` ones run alone.
pub struct Case {
    pub name: &'static str,
    pub exclusive: bool,
    pub run: CaseFn,
}

#[tokio::main]
async fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<&Case> = cases::ALL
        .iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    println!("running {} end-to-end cases", selected.len());
    let started = Instant::now();
    let mut cluster = match setup().await {
        Ok(c) => c,
        Err(e) => {
            println!("e2e setup failed: {e:#}");
            println!("e2e: 0 passed, {} failed", selected.len());
            std::process::exit(1);
        }
    };
    let shared = Arc::new(cluster);
    let (parallel, exclusive): (Vec<&Case>, Vec<&Case>) =
        selected.iter().partition(|c| !c.exclusive);
    let mut results =
        futures::future::join_all(parallel.iter().map(|c| run_case(shared.clone(), c))).await;
    for c in exclusive {
        results.push(run_case(shared.clone(), c).await);
    }
    let failed: Vec<&str> = results.iter().filter(|r| !r.1).map(|r| r.0).collect();
    if !failed.is_empty() {
        let logs = shared
            .kubectl
            .run(&[
                "-n",
                longtask_e2e::SYSTEM_NS,
                "logs",
                "deployment/longtask-operator",
                "--tail=80",
            ])
            .unwrap_or_else(|e| format!("{e:#}"));
        println!("--- operator log (last 80 lines)\n{logs}");
    }
    cluster = Arc::try_unwrap(shared).unwrap_or_else(|_| panic!("cluster still shared"));
    if let Err(e) = cluster.down() {
        println!("devcluster down: {e:#}");
    }
    println!("\nfailures: {failed:?}");
    println!("finished in {:.0}s", started.elapsed().as_secs_f64());
    println!(
        "e2e: {} passed, {} failed",
        results.len() - failed.len(),
        failed.len()
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}

async fn setup() -> Result<Cluster> {
    let cluster = Cluster::up(2, 8).await?;
    cluster.install().await?;
    Ok(cluster)
}

async fn run_case(cluster: Arc<Cluster>, case: &Case) -> (&'static str, bool) {
    let started = Instant::now();
    let ns = match cluster.namespace(&case.name.replace('_', "-")).await {
        Ok(ns) => ns,
        Err(e) => {
            println!("test {} ... FAILED (namespace: {e:#})", case.name);
            return (case.name, false);
        }
    };
    let ns_name = ns.name.clone();
    let dump_ns = TestNs {
        name: ns.name.clone(),
        client: ns.client.clone(),
        kubectl: ns.kubectl.clone(),
    };
    let outcome = tokio::spawn((case.run)(cluster.clone(), ns)).await;
    let secs = started.elapsed().as_secs_f64();
    let ok = match outcome {
        Ok(Ok(())) => {
            println!("test {} ... ok ({secs:.1}s)", case.name);
            true
        }
        Ok(Err(e)) => {
            println!(
                "test {} ... FAILED ({secs:.1}s): {e:#}\n{}",
                case.name,
                dump_ns.dump()
            );
            false
        }
        Err(panic) => {
            println!(
                "test {} ... FAILED ({secs:.1}s): panicked: {panic}\n{}",
                case.name,
                dump_ns.dump()
            );
            false
        }
    };
    let _ = ns_name;
    dump_ns.delete().await;
    (case.name, ok)
}
