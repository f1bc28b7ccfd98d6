//! Pure: results by reference (issue 35). Which `OutputStore` a Task
//! uses (`resolve`), when its grants expire (`grant`), what the worker's
//! report of its uploads becomes in the Task's status (`report`), and
//! which objects the store holds for Tasks that are gone (`sweep`). No
//! client here: the reconcile (`reconcile::outputs`) and the collector
//! (`collector`) make the calls.

pub mod grant;
pub mod report;
pub mod resolve;
pub mod sweep;

#[cfg(test)]
mod tests;
