//! What a Task waits for, as `get`'s WAITING column and the web page's
//! rows show it: its queue position while Queued for a slot, else the
//! Waiting condition's reason.

use crds::conditions::{reasons, types};
use crds::{Phase, Task};

/// What a Task waits for: "position 3" while Queued for a slot, "after
/// NAME" while Pending for its upstream NAME, "Suspended", or the reason
/// its pod cannot start (Unschedulable…); empty when it waits for nothing.
pub fn waiting(t: &Task) -> String {
    if let Some(n) = queue_position(t) {
        return format!("position {n}");
    }
    let cond = t
        .status
        .iter()
        .flat_map(|s| &s.conditions)
        .find(|c| c.type_ == types::WAITING && c.status == "True");
    let Some(c) = cond else {
        return String::new();
    };
    match upstream(t, &c.message) {
        Some(name) if c.reason == reasons::WAITING_FOR_UPSTREAM => format!("after {name}"),
        _ => c.reason.clone(),
    }
}

/// The upstream of `t` (`spec.after`) that the Waiting message names:
/// the operator names the first one not met yet, "upstream NAME ...".
fn upstream<'a>(t: &'a Task, message: &str) -> Option<&'a str> {
    t.spec
        .after
        .iter()
        .map(|u| u.name.as_str())
        .find(|n| message.contains(&format!("upstream {n} ")))
}

/// A Task's place in the queue while Queued for a slot
/// (`status.queuePosition`, 1 is next); None otherwise.
pub fn queue_position(t: &Task) -> Option<i32> {
    let s = t.status.as_ref()?;
    let for_a_slot =
        s.phase == Some(Phase::Queued) && s.reason.as_deref() == Some(reasons::QUEUE_FULL);
    for_a_slot.then_some(s.queue_position).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::task;

    #[test]
    fn a_pending_task_shows_the_upstream_it_waits_for() {
        let t = task("c")
            .after(&["a", "b"])
            .phase(Phase::Pending)
            .condition(
                types::WAITING,
                "True",
                reasons::WAITING_FOR_UPSTREAM,
                "waiting for upstream b to succeed (one of 2 in spec.after)",
            )
            .build();
        assert_eq!(waiting(&t), "after b");
        let pod = task("p")
            .phase(Phase::Running)
            .condition(types::WAITING, "True", "Unschedulable", "0/1 nodes")
            .build();
        assert_eq!(waiting(&pod), "Unschedulable");
        assert_eq!(waiting(&task("n").build()), "");
    }
}
