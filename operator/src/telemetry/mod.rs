//! What the operator tells its operators: Prometheus metrics, Events, what
//! a status transition measures (pure), and the `/metrics`, `/healthz`,
//! `/readyz` server.

pub mod backlog;
pub mod events;
pub mod metrics;
pub mod process;
pub mod server;
pub mod transitions;

#[cfg(test)]
mod tests;
