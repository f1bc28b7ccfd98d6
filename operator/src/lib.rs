//! longtask's operator as a library: the binary (`main.rs`) parses flags
//! and wires these together, so tests can drive a reconcile directly.
//!
//! One folder per concern, and no import cycles between them. From the top
//! down, each importing only folders listed after it
//! (`operator/tests/module_graph.rs` checks that, against its `LAYERS`,
//! and that there is no cycle):
//! - [`controller`]: the watches that wake reconciles.
//! - [`collector`]: deletes the objects of output stores whose Task is gone.
//! - [`reconcile`]: the pipeline for one Task, from the Task cache to its
//!   status write.
//! - [`cron`]: CronTasks, runs of a Task template on a schedule (the
//!   decisions pure, in `cron::decide`).
//! - [`ha`]: leader election (pure decisions, and the elector that calls
//!   the API).
//! - [`api`]: every API call the reconcilers make, bounded and counted, and
//!   their errors (`ApiError`, `CallError`).
//! - [`context`]: what every reconcile is handed (client, metrics, config,
//!   caches).
//! - [`cache`]: what the watches saw of pods and result ConfigMaps, read
//!   by reconciles instead of the API server while a Task runs.
//! - [`status`]: pure; what the cluster shows → the status a Task should
//!   have (observed facts, shards, progress, conditions, Events).
//! - [`queue`]: pure; the order Tasks start in under the caps, and the
//!   caches it is computed from.
//! - On the ground floor, importing nothing else of the crate:
//!   [`retention`] (pure; which finished Tasks are deleted, and when),
//!   [`outputs`] (pure; results by reference: which store, grants, the
//!   worker's report, what a sweep deletes), [`telemetry`] (metrics, what
//!   a transition measures, the HTTP server), [`store`] (when a watch's
//!   store has synced) and [`job`] (pure; the Job that runs a Task, its
//!   pod, and the objects it needs; `module_graph.rs` checks it stays
//!   there), [`after`] (pure; whether a Task with `spec.after` may start,
//!   from the upstream Tasks the cache shows).

pub mod after;
pub mod api;
pub mod cache;
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
