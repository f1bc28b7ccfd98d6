//! Queueing under the caps: the pure planner (who starts, who waits and at
//! which position) and the state admission reads it from. Admission itself,
//! which creates Jobs, is a step of the reconcile (`reconcile::admit`).

mod planner;
mod state;

pub use planner::*;
pub use state::Queue;

#[cfg(test)]
mod tests;
