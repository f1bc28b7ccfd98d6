//! One line per error: `chain` joins an error and its sources, each text once.

use std::io;

use longtask_worker::chain;

/// Names what failed; its source says why.
#[derive(Debug, thiserror::Error)]
#[error("cannot write ConfigMap t-result")]
struct Outer(#[source] Repeats);

/// Repeats its source's text, as kube's errors do.
#[derive(Debug, thiserror::Error)]
#[error("HyperError: {0}")]
struct Repeats(#[source] Inner);

/// Says why, and has a source of its own.
#[derive(Debug, thiserror::Error)]
#[error("connection closed")]
struct Inner(#[source] io::Error);

#[test]
fn each_text_once() {
    let e = Outer(Repeats(Inner(io::Error::other("reset by peer"))));
    assert_eq!(
        chain(&e),
        "cannot write ConfigMap t-result: HyperError: connection closed: reset by peer"
    );
    assert_eq!(chain(&io::Error::other("alone")), "alone");
}
