//! longtask end to end: one devcluster, the operator installed from
//! `manifests/`, and one case per promise the README and docs/ make. Cases that only
//! add Tasks run concurrently; cases that disturb the cluster (operator
//! restarts, timing) run one at a time afterwards. Filter by substring:
//! `cargo test -p longtask-e2e --test e2e -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;

pub use longtask_e2e::runner::Case;
use longtask_e2e::runner::{self, Install, Runtime, Shape};

// Cases call kubectl synchronously (std::process) from async code; on a
// 2-core machine the default two worker threads could be held by those calls
// long enough that a case polling every 100 ms missed a 10 s state.
#[tokio::main(worker_threads = 16)]
async fn main() {
    let shape = Shape {
        dir: "e2e-cluster",
        nodes: 2,
        cpu: 8,
        install: Install::Operator,
        runtime: Runtime::Process,
    };
    runner::main(cases::ALL, shape).await;
}
