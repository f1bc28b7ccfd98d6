//! longtask at capacity, on a small devcluster (3 nodes of 2 CPU): the
//! scheduler bounds Tasks by their requests, `--max-active-tasks` and the
//! namespace annotation bound them by count in priority-then-age order, a
//! Job suspended by someone else keeps its Task Queued, and a sharded Task
//! runs as an Indexed Job. Filter by substring:
//! `cargo test -p longtask-e2e --test capacity -- NAME`.

#![allow(clippy::unwrap_used)]

mod queue;
mod shards;

use longtask_e2e::case;
use longtask_e2e::runner::{self, Case, Install, Runtime, Shape};

static ALL: &[Case] = &[
    case!(
        thirty_tasks_fit_six_cpus,
        false,
        queue::thirty_tasks_fit_six_cpus
    ),
    case!(namespace_cap, false, queue::namespace_cap),
    case!(suspended_by_hand, false, queue::suspended_by_hand),
    case!(
        twelve_shards_four_at_a_time,
        false,
        shards::twelve_shards_four_at_a_time
    ),
    case!(
        max_active_tasks_in_order,
        true,
        queue::max_active_tasks_in_order
    ),
    // Alone: it counts every API request the operator makes.
    case!(
        queued_tasks_cost_nothing,
        true,
        queue::queued_tasks_cost_nothing
    ),
];

// Cases call kubectl synchronously (std::process) from async code; on a
// 2-core machine the default two worker threads could be held by those calls
// long enough that a case polling every 100 ms missed a 10 s state.
#[tokio::main(worker_threads = 16)]
async fn main() {
    let shape = Shape {
        dir: "e2e-capacity",
        nodes: 3,
        cpu: 2,
        install: Install::Operator,
        runtime: Runtime::Process,
    };
    runner::main(ALL, shape).await;
}
