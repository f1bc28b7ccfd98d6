//! Tasks that wait for other Tasks (`spec.after`, issue 39), on a devcluster
//! with longtask installed from the manifests: a chain that hands each
//! result down, an upstream that fails (no Job, no pod for its
//! downstream), a cycle, an upstream created late or never, what the API
//! server refuses at apply, a fan-in of 50, and operator restarts while
//! Tasks wait and while a graph runs. Filter by substring:
//! `cargo test -p longtask-e2e --test after -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;

use longtask_e2e::case;
use longtask_e2e::runner::{self, Case, Install, Runtime, Shape};

static ALL: &[Case] = &[
    case!(
        chain_hands_results_down,
        false,
        cases::chain_hands_results_down
    ),
    case!(
        upstream_failure_fails_without_a_pod,
        false,
        cases::upstream_failure_fails_without_a_pod
    ),
    case!(cycle_fails_every_task, false, cases::cycle_fails_every_task),
    case!(
        missing_upstream_created_later,
        false,
        cases::missing_upstream_created_later
    ),
    case!(refused_at_apply, false, cases::refused_at_apply),
    case!(fan_in_sums_fifty, false, cases::fan_in_sums_fifty),
    // Alone: they delete the operator's pods.
    case!(
        restart_keeps_what_was_seen,
        true,
        cases::restart_keeps_what_was_seen
    ),
    case!(
        leader_killed_mid_graph,
        true,
        cases::leader_killed_mid_graph
    ),
];

// Cases call kubectl synchronously (std::process) from async code: more
// worker threads than cores, as the other targets do.
#[tokio::main(worker_threads = 16)]
async fn main() {
    let shape = Shape {
        dir: "e2e-after",
        nodes: 1,
        cpu: 8,
        install: Install::Operator,
        runtime: Runtime::Process,
    };
    runner::main(ALL, shape).await;
}
