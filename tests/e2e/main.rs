//! longtask end to end: one devcluster, the operator installed from
//! `manifests/`, and one case per promise the README and docs/ make. Cases that only
//! add Tasks run concurrently; cases that disturb the cluster (operator
//! restarts, timing) run one at a time afterwards. Filter by substring:
//! `cargo test -p longtask-e2e --test e2e -- NAME`.
//!
//! `LONGTASK_E2E_NODES=containers` runs the same cases on three container
//! nodes (real kubelets and containerd; the images `tests/images` built),
//! with the operator and worker from their images.

#![allow(clippy::unwrap_used)]

mod cases;

pub use longtask_e2e::runner::Case;
use longtask_e2e::runner::{self, Install, Runtime, Shape};

// Cases call kubectl synchronously (std::process) from async code; on a
// 2-core machine the default two worker threads could be held by those calls
// long enough that a case polling every 100 ms missed a 10 s state.
#[tokio::main(worker_threads = 16)]
async fn main() {
    let shape = match std::env::var("LONGTASK_E2E_NODES").as_deref() {
        Ok("containers") => Shape {
            dir: "e2e-cluster-containers",
            nodes: 3,
            cpu: 0,
            install: Install::Operator,
            runtime: Runtime::Containerd,
        },
        Ok("processes") | Err(_) => Shape {
            dir: "e2e-cluster",
            nodes: 2,
            cpu: 8,
            install: Install::Operator,
            runtime: Runtime::Process,
        },
        Ok(other) => {
            eprintln!("LONGTASK_E2E_NODES={other}: want processes (the default) or containers");
            std::process::exit(2);
        }
    };
    runner::main(cases::ALL, shape).await;
}
