//! Pure: the Task's conditions for a phase, keeping each transition time
//! unless that condition's status really changed.

use crds::Phase;
use crds::conditions::{ConditionType, Reason};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Conditions Running, Waiting (once it has been relevant), Complete or
/// Failed (once terminal) and Finished, in that order. `reason` is the
/// status's reason as it stands (a terminal status keeps whatever it
/// recorded); `waiting` says why the Task waits, and how.
pub fn compute(
    prev: &[Condition],
    phase: &Option<Phase>,
    reason: Option<&str>,
    message: Option<&str>,
    waiting: Option<(Reason, &str)>,
    now: &Time,
    generation: Option<i64>,
) -> Vec<Condition> {
    let set = |type_: ConditionType, ok: bool, reason: &str, message: &str| {
        let status = if ok { "True" } else { "False" };
        let old = prev.iter().find(|c| c.type_ == type_.as_str());
        let last_transition_time = match old {
            Some(c) if c.status == status => c.last_transition_time.clone(),
            _ => now.clone(),
        };
        Condition {
            type_: type_.as_str().to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            observed_generation: generation,
            last_transition_time,
        }
    };
    let had = |t: ConditionType| prev.iter().any(|c| c.type_ == t.as_str());
    let msg = message.unwrap_or_default();
    let not_finished = Reason::NotFinished.as_str();
    let not_waiting = Reason::NotWaiting.as_str();
    let mut out = Vec::with_capacity(4);
    match phase {
        Some(Phase::Running) => {
            out.push(set(
                ConditionType::Running,
                true,
                Reason::Running.as_str(),
                "the Task's Job runs the program",
            ));
            match waiting {
                Some((r, m)) => out.push(set(ConditionType::Waiting, true, r.as_str(), m)),
                None if had(ConditionType::Waiting) => {
                    out.push(set(ConditionType::Waiting, false, not_waiting, ""));
                }
                None => {}
            }
            out.push(set(ConditionType::Finished, false, not_finished, ""));
        }
        Some(Phase::Queued) => {
            let r = reason.unwrap_or(Reason::QueueFull.as_str());
            out.push(set(ConditionType::Running, false, r, msg));
            out.push(set(ConditionType::Waiting, true, r, msg));
            out.push(set(ConditionType::Finished, false, not_finished, ""));
        }
        Some(p @ (Phase::Completed | Phase::Failed)) => {
            let r = reason.unwrap_or(Reason::JobFailed.as_str());
            out.push(set(ConditionType::Running, false, r, msg));
            if had(ConditionType::Waiting) {
                out.push(set(ConditionType::Waiting, false, not_waiting, ""));
            }
            let kind = if *p == Phase::Completed {
                ConditionType::Complete
            } else {
                ConditionType::Failed
            };
            out.push(set(kind, true, r, msg));
            out.push(set(ConditionType::Finished, true, r, msg));
        }
        None => {
            let r = reason.unwrap_or(not_finished);
            out.push(set(ConditionType::Running, false, r, msg));
            out.push(set(ConditionType::Finished, false, not_finished, ""));
        }
    }
    out
}
