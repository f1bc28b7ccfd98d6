//! `kubectl longtask ui` in a real browser (Debian's Chromium, headless,
//! over WebDriver) against a devcluster running longtask: the page as a
//! user sees it, the guard as an attacker meets it. Screenshots go to
//! `target/ui-screenshots/`. Filter by substring:
//! `cargo test -p longtask-e2e --test ui -- NAME`.

#![allow(clippy::unwrap_used)]

mod cases;
mod hardening;
mod outputs;

pub use longtask_e2e::runner::Case;
use longtask_e2e::runner::{self, Install, Runtime, Shape};

#[tokio::main(worker_threads = 8)]
async fn main() {
    let shape = Shape {
        dir: "ui-cluster",
        nodes: 1,
        cpu: 8,
        install: Install::Operator,
        runtime: Runtime::Process,
    };
    runner::main(cases::ALL, shape).await;
}
