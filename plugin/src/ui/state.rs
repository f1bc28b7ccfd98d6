//! The state every handler of the page shares, apart from the server
//! (`mod.rs`) that builds it and routes to the handlers.

use super::guard::Guard;
use super::tickets::Tickets;
use crate::client::Kube;

/// What every handler shares.
pub struct Ui {
    pub kube: Kube,
    /// `None`: every namespace (`-A`).
    pub namespace: Option<String>,
    pub context: String,
    pub guard: Guard,
    /// The client for the output store (downloads of output files).
    pub http: reqwest::Client,
    pub downloads: Tickets,
}
