//! The middle level: the operator's reconcile, called as a library against
//! a real API server (a devcluster with the CRD and no operator running),
//! for what only an API server can show: a Job create that meets
//! AlreadyExists, a status write that meets a newer Task, queued Tasks
//! started when a slot frees; and, in a cluster briefly without the CRD,
//! the kubectl plugin's message for it. Each case works in its own namespace.
//! Filter by substring: `cargo test -p longtask-e2e --test reconcile -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;
mod outputs;

use longtask_e2e::case;
use longtask_e2e::runner::{self, Case, Install, Runtime, Shape};

static ALL: &[Case] = &[
    case!(
        job_create_meets_already_exists,
        false,
        cases::job_create_meets_already_exists
    ),
    case!(
        status_write_meets_a_newer_task,
        false,
        cases::status_write_meets_a_newer_task
    ),
    case!(
        queued_task_starts_when_a_slot_frees,
        false,
        cases::queued_task_starts_when_a_slot_frees
    ),
    case!(
        outputs_grant_before_the_job,
        false,
        outputs::outputs_grant_before_the_job
    ),
    case!(
        unavailable_stores_fail_before_the_run,
        false,
        outputs::unavailable_stores_fail_before_the_run
    ),
    case!(
        outputs_listed_and_downloadable,
        false,
        outputs::outputs_listed_and_downloadable
    ),
    // Removes the CRD for a moment: alone, after the others.
    case!(
        plugin_says_longtask_is_not_installed,
        true,
        cases::plugin_says_longtask_is_not_installed
    ),
];

// Cases call kubectl synchronously (std::process) from async code; on a
// 2-core machine the default two worker threads could be held by those calls
// long enough that a case polling every 100 ms missed a 10 s state.
#[tokio::main(worker_threads = 16)]
async fn main() {
    let shape = Shape {
        dir: "e2e-reconcile",
        nodes: 1,
        cpu: 4,
        install: Install::CrdOnly,
        runtime: Runtime::Process,
    };
    runner::main(ALL, shape).await;
}
