//! Results by reference end to end: a devcluster (process nodes), longtask
//! as a user installs it, and a real SeaweedFS on loopback that this suite
//! starts (tools/seaweedfs/install puts `weed` under target/) and stops.
//! Tasks upload a 2 GiB file and 1,000 small ones, `kubectl longtask
//! result` downloads them byte-exact, a program cannot reach another
//! Task's or namespace's objects, bad stores and bad files fail with their
//! reasons, and deleting a Task removes its objects, also when the store
//! was down at the time. Filter by substring:
//! `cargo test -p longtask-e2e --test outputs -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;
mod store;
mod tenancy;

use longtask_e2e::case;
use longtask_e2e::runner::{self, Case, Install, Runtime, Shape};

static ALL: &[Case] = &[
    case!(
        tenancy_is_the_task_prefix,
        false,
        tenancy::tenancy_is_the_task_prefix
    ),
    case!(
        bad_stores_and_files_are_named,
        false,
        cases::bad_stores_and_files_are_named
    ),
    case!(
        large_results_go_by_reference,
        false,
        cases::large_results_go_by_reference
    ),
    // Alone: 2 GiB through the store, and the worker's memory measured.
    case!(
        big_file_and_many_small_files,
        true,
        cases::big_file_and_many_small_files
    ),
    // Alone, last: it stops the store every other case uses.
    case!(
        delete_with_the_store_down,
        true,
        cases::delete_with_the_store_down
    ),
];

#[tokio::main(worker_threads = 16)]
async fn main() {
    if !longtask_e2e::seaweed::Seaweed::installed() {
        println!("outputs: weed is not installed (tools/seaweedfs/install); 0 passed, 1 failed");
        std::process::exit(1);
    }
    if let Err(e) = store::start().await {
        println!("outputs: cannot start SeaweedFS: {e:#}");
        std::process::exit(1);
    }
    let shape = Shape {
        dir: "e2e-outputs",
        nodes: 2,
        cpu: 4,
        install: Install::Operator,
        runtime: Runtime::Process,
    };
    let ok = runner::run(ALL, shape).await;
    store::stop();
    if !ok {
        std::process::exit(1);
    }
}
