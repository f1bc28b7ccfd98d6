//! What a Task waits for, as `get`'s WAITING column and the web page's
//! rows show it: its queue position while Queued for a slot, else the
//! Waiting condition's reason.

use crds::conditions::{reasons, types};
use crds::{Phase, Task};

/// What a Task waits for: "position 3" while Queued for a slot,
/// "Suspended", or the reason its pod cannot start (Unschedulable…);
/// empty when it waits for nothing.
pub fn waiting(t: &Task) -> String {
    if let Some(n) = queue_position(t) {
        return format!("position {n}");
    }
    t.status
        .iter()
        .flat_map(|s| &s.conditions)
        .find(|c| c.type_ == types::WAITING && c.status == "True")
        .map(|c| c.reason.clone())
        .unwrap_or_default()
}

/// A Task's place in the queue while Queued for a slot
/// (`status.queuePosition`, 1 is next); None otherwise.
pub fn queue_position(t: &Task) -> Option<i32> {
    let s = t.status.as_ref()?;
    let for_a_slot =
        s.phase == Some(Phase::Queued) && s.reason.as_deref() == Some(reasons::QUEUE_FULL);
    for_a_slot.then_some(s.queue_position).flatten()
}
