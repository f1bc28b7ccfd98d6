//! longtask end to end: one devcluster, the operator installed from
//! `manifests/`, and one case per promise the README and docs/ make. Cases that only
//! add Tasks run concurrently; cases that disturb the cluster (operator
//! restarts, timing) run one at a time afterwards. Filter by substring:
//! `cargo test -p longtask-e2e --test e2e -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;

pub use longtask_e2e::runner::Case;
use longtask_e2e::runner::{self, Install, Shape};

#[tokio::main]
async fn main() {
    let shape = Shape {
        dir: "e2e-cluster",
        nodes: 2,
        cpu: 8,
        install: Install::Operator,
    };
    runner::main(cases::ALL, shape).await;
}
