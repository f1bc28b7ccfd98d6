//! longtask installed from its Helm chart (charts/longtask, Helm built from
//! its Go module by tools/helm/build) on a devcluster of 2 nodes x 4 CPU:
//! the chart's install runs a Task to Completed; `helm upgrade` to 3
//! replicas and another concurrency, while a Task runs, keeps that Task
//! (its one Job completes) and ends with exactly one leader; `helm
//! uninstall` leaves the CRDs and the Tasks (crds.keep), and installing
//! again takes them back. The cases run in
//! this order, one at a time. Filter by substring:
//! `cargo test -p longtask-e2e --test helm -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;

use longtask_e2e::case;
use longtask_e2e::runner::{self, Case, Install, Runtime, Shape};

static ALL: &[Case] = &[
    case!(
        chart_install_runs_a_task,
        true,
        cases::chart_install_runs_a_task
    ),
    case!(
        upgrade_keeps_running_task,
        true,
        cases::upgrade_keeps_running_task
    ),
    case!(
        uninstall_keeps_crds_and_tasks,
        true,
        cases::uninstall_keeps_crds_and_tasks
    ),
];

// Cases call kubectl and helm synchronously (std::process) from async code.
#[tokio::main(worker_threads = 8)]
async fn main() {
    let shape = Shape {
        dir: "e2e-helm",
        nodes: 2,
        cpu: 4,
        install: Install::HelmChart,
        runtime: Runtime::Process,
    };
    runner::main(ALL, shape).await;
}
