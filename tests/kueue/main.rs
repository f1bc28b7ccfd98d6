//! longtask under real Kueue (v0.17.0, `devcluster kueue`) on a devcluster
//! of 2 nodes x 4 CPU: a ClusterQueue's quota, not the nodes, bounds the
//! Tasks; the Task shows Kueue's reason and message while it waits; a
//! high-priority Task preempts a low one, which waits again and completes
//! without an attempt charged; a Task cancelled while admitted stops for
//! good. Filter by substring: `cargo test -p longtask-e2e --test kueue -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;

use longtask_e2e::case;
use longtask_e2e::runner::{self, Case, Install, Runtime, Shape};

static ALL: &[Case] = &[
    case!(five_tasks_two_cpus, false, cases::five_tasks_two_cpus),
    case!(high_priority_preempts, false, cases::high_priority_preempts),
    case!(cancel_stops_for_good, false, cases::cancel_stops_for_good),
];

// Cases call kubectl synchronously (std::process) from async code: enough
// worker threads that those calls never starve the watches.
#[tokio::main(worker_threads = 16)]
async fn main() {
    let shape = Shape {
        dir: "e2e-kueue",
        nodes: 2,
        cpu: 4,
        install: Install::KueueAndOperator,
        runtime: Runtime::Process,
    };
    runner::main(ALL, shape).await;
}
