//! longtask's operator as a library: the binary (`main.rs`) parses flags
//! and wires these together, so tests can drive a reconcile directly.
//!
//! One folder per concern, and no import cycles between them:
//! - [`reconcile`]: the pipeline for one Task, from the Task cache to its
//!   status write; the API calls and their errors.
//! - [`job`]: pure, on the ground floor (nothing else of the crate); the
//!   Job that runs a Task, its pod, and the objects it needs.
//! - [`status`]: pure; what the cluster shows → the status a Task should
//!   have (observed facts, shards, progress, conditions, Events).
//! - [`retention`]: pure; which finished Tasks are deleted, and when.
//! - [`queue`]: pure; the order Tasks start in under the caps, and the
//!   caches it is computed from.
//! - [`ha`]: leader election (pure decisions, and the elector that calls
//!   the API).
//! - [`telemetry`]: metrics, what a transition measures, the HTTP server.
//! - [`controller`]: the watches that wake reconciles.
//! - [`cron`]: CronTasks, runs of a Task template on a schedule (the
//!   decisions pure, in `cron::plan`).
//! - [`cache`]: what those watches saw of pods and result ConfigMaps, read
//!   by reconciles instead of the API server while a Task runs.
//! - [`store`]: a leaf; when a watch's store has synced.

pub mod cache;
pub mod call;
pub mod collector;
pub mod context;
pub mod controller;
pub mod cron;
pub mod ha;
pub mod job;
pub mod outputs;
pub mod queue;
pub mod reconcile;
pub mod retention;
pub mod status;
pub mod store;
pub mod telemetry;

#[cfg(test)]
mod fixtures;
