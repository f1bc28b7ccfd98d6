//! longtask-worker: runs a Task's program inside its Job's pod and reports
//! the result to the operator through the ConfigMap `<task>-result`.
//!
//! A library with a thin binary (`main.rs` parses the command line), so
//! the tests in `tests/` can call the modules.

pub mod identity;
pub mod inputs;
pub mod install;
pub mod outputs;
pub mod paths;
pub mod progress;
pub mod report;
pub mod run;
pub mod task;
pub mod walk;

/// Prints one of the worker's own messages on stderr, never on stdout.
pub fn say(msg: &str) {
    eprintln!("longtask-worker: {msg}");
}

/// `err` and its sources, joined by ": ", for one line of [`say`] or a
/// result's message. A source whose text is already in the line is left
/// out: some errors (kube's among them) repeat their source's text.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut line = err.to_string();
    let mut next = err.source();
    while let Some(e) = next {
        let text = e.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        next = e.source();
    }
    line
}
