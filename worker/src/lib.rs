//! longtask-worker: runs a Task's program inside its Job's pod and reports
//! the result to the operator through the ConfigMap `<task>-result`.
//!
//! A library with a thin binary (`main.rs` parses the command line), so
//! the tests in `tests/` can call the modules.

pub mod identity;
pub mod paths;
pub mod progress;
pub mod report;
pub mod run;
pub mod task;

/// Prints one of the worker's own messages on stderr, never on stdout.
pub fn say(msg: &str) {
    eprintln!("longtask-worker: {msg}");
}
