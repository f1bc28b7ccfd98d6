//! The runner of the end-to-end targets: one cluster for all cases,
//! parallel cases first, then the ones that disturb the cluster one at a
//! time, a dump of the namespace on failure, and a guaranteed teardown.
//! Filter by substring: `cargo test -p longtask-e2e --test TARGET -- NAME`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use futures::StreamExt;

use crate::{Cluster, SYSTEM_NS, TestNs};

pub type CaseFn = fn(Arc<Cluster>, TestNs) -> Pin<Box<dyn Future<Output = Result<()>> + Send>>;

/// One end-to-end case: `exclusive` ones run alone.
pub struct Case {
    pub name: &'static str,
    pub exclusive: bool,
    pub run: CaseFn,
}

/// The cluster a target runs on: `target/DIR`, nodes, CPU per node.
pub struct Shape {
    pub dir: &'static str,
    pub nodes: u32,
    pub cpu: u32,
    /// What of longtask is installed before the cases run.
    pub install: Install,
    /// How the nodes run pods.
    pub runtime: Runtime,
}

/// How a target's nodes run pods.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// Host processes running `target/debug` binaries (fast; the default).
    Process,
    /// Real containers from `target/images` on kubelets with containerd
    /// (`cpu` is then the machine's: container nodes report real capacity).
    Containerd,
}

/// What a target installs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Install {
    /// longtask as a user installs it (`kubectl apply -k manifests/`).
    Operator,
    /// Kueue first (`devcluster kueue`), then longtask as with `Operator`.
    KueueAndOperator,
    /// Only the CRD and the worker's ClusterRole: the cases run the
    /// reconciler themselves, as a library.
    CrdOnly,
    /// longtask from the Helm chart (`helm install`, charts/longtask with
    /// its default values) instead of `kubectl apply -k`.
    HelmChart,
}

/// Tells whoever waits (tests/run, through the file named by
/// `LONGTASK_E2E_PARALLEL_DONE`) that the parallel cases are over: from
/// here on only the exclusive ones run, one at a time, mostly waiting on
/// the cluster, so another suite may start beside them.
fn parallel_done() {
    if let Some(path) = std::env::var_os("LONGTASK_E2E_PARALLEL_DONE")
        && let Err(e) = std::fs::write(&path, b"")
    {
        let path = std::path::Path::new(&path).display();
        println!("cannot write {path}: {e}");
    }
}

/// How many parallel cases run at once: `LONGTASK_E2E_PARALLEL`, default
/// 16. All 77 of tests/e2e at once on container nodes, beside the
/// containers suite's node faults, kept 2 cores at a load of 15: pods took
/// 37 s to run `echo`, a Job appeared 27 s after its Task said Running, and 9
/// cases failed in one CI run (8 of them waits for such pods). The cases do the same work either way;
/// fewer at once spend less of it on contention (kubectl processes, the
/// API server's queues) and keep each case's waits meaningful.
fn parallel_limit() -> usize {
    std::env::var("LONGTASK_E2E_PARALLEL")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(16)
}

/// Runs the selected `cases` on a fresh cluster of `shape`; exits 1 on any failure.
pub async fn main(cases: &[Case], shape: Shape) {
    if !run(cases, shape).await {
        std::process::exit(1);
    }
}

/// [`main`] that returns whether every case passed instead of exiting, for
/// a suite that must stop what it started beside the cluster.
pub async fn run(cases: &[Case], shape: Shape) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<&Case> = cases
        .iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    println!("running {} end-to-end cases", selected.len());
    if selected.is_empty() {
        println!("e2e: 0 passed, 0 failed");
        return true;
    }
    let started = Instant::now();
    let mut cluster = match setup(&shape).await {
        Ok(c) => c,
        Err(e) => {
            println!("e2e setup failed: {e:#}");
            println!("e2e: 0 passed, {} failed", selected.len());
            return false;
        }
    };
    let shared = Arc::new(cluster);
    let (parallel, exclusive): (Vec<&Case>, Vec<&Case>) =
        selected.iter().partition(|c| !c.exclusive);
    let limit = parallel_limit();
    println!(
        "{} parallel cases, at most {limit} at once; {} exclusive after",
        parallel.len(),
        exclusive.len()
    );
    let mut results: Vec<(&'static str, bool)> = futures::stream::iter(parallel)
        .map(|c| run_case(shared.clone(), c))
        .buffer_unordered(limit)
        .collect()
        .await;
    parallel_done();
    for c in exclusive {
        results.push(run_case(shared.clone(), c).await);
    }
    let failed: Vec<&str> = results.iter().filter(|r| !r.1).map(|r| r.0).collect();
    if !failed.is_empty() && shape.install != Install::CrdOnly {
        let logs = shared
            .kubectl
            .run(&[
                "-n",
                SYSTEM_NS,
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
    failed.is_empty()
}

async fn setup(shape: &Shape) -> Result<Cluster> {
    let cluster = match shape.runtime {
        Runtime::Process => Cluster::up_in(shape.dir, shape.nodes, shape.cpu).await?,
        Runtime::Containerd => Cluster::up_containers(shape.dir, shape.nodes).await?,
    };
    match shape.install {
        Install::Operator => cluster.install().await?,
        Install::KueueAndOperator => {
            cluster.kueue()?;
            cluster.install().await?;
        }
        Install::CrdOnly => cluster.install_crd()?,
        Install::HelmChart => cluster.install_chart()?,
    }
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
    dump_ns.delete().await;
    (case.name, ok)
}

/// `case!(name, exclusive, path::to::fn)`: a [`Case`] named after its function.
#[macro_export]
macro_rules! case {
    ($name:ident, $exclusive:expr, $f:path) => {
        $crate::runner::Case {
            name: stringify!($name),
            exclusive: $exclusive,
            run: |c, ns| Box::pin($f(c, ns)),
        }
    };
}
