//! What a Task waits for, as `get`'s WAITING column and the web page's
//! rows show it: its queue position while Queued for a slot, else the
//! Waiting condition's reason.

use crds::conditions::{reasons, types};
use crds::{Phase, Task};

/// What a Task waits for: "position 3" while Queued for a slot,
/// "Suspended", or the reason its pod cannot start (Unschedulable…);
/// empty when it waits for nothing.
pub fn waiting(t: &Task) -> String {
    let Some(s) = t.status.as_ref() else {
        return String::new();
    };
    let cond = s
        .conditions
        .iter()
        .find(|c| c.type_ == types::WAITING && c.status == "True");
    if s.phase == Some(Phase::Queued) && s.reason.as_deref() == Some(reasons::QUEUE_FULL) {
        // The operator words it "position N in the queue: <cap>".
        let message = s
            .message
            .as_deref()
            .or(cond.map(|c| c.message.as_str()))
            .unwrap_or_default();
        if let Some(pos) = queue_position(message) {
            return pos.to_owned();
        }
    }
    cond.map(|c| c.reason.clone()).unwrap_or_default()
}

/// "position N" from the operator's queue message.
pub fn queue_position(message: &str) -> Option<&str> {
    let end = message.find(" in the queue")?;
    message[..end]
        .starts_with("position ")
        .then(|| &message[..end])
}
