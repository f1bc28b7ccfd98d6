//! Pure: the Task's conditions for a phase, keeping each transition time
//! unless that condition's status really changed.

use crds::Phase;
use crds::conditions::{reasons, types};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Conditions Running, Waiting (once it has been relevant), Complete or
/// Failed (once terminal) and Finished, in that order.
pub fn compute(
    prev: &[Condition],
    phase: &Option<Phase>,
    reason: Option<&str>,
    message: Option<&str>,
    waiting: Option<&(String, String)>,
    now: &Time,
    generation: Option<i64>,
) -> Vec<Condition> {
    let set = |type_: &str, ok: bool, reason: &str, message: &str| {
        let status = if ok { "True" } else { "False" };
        let old = prev.iter().find(|c| c.type_ == type_);
        let last_transition_time = match old {
            Some(c) if c.status == status => c.last_transition_time.clone(),
            _ => now.clone(),
        };
        Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            observed_generation: generation,
            last_transition_time,
        }
    };
    let had = |t: &str| prev.iter().any(|c| c.type_ == t);
    let msg = message.unwrap_or_default();
    let mut out = Vec::with_capacity(4);
    match phase {
        Some(Phase::Running) => {
            out.push(set(
                types::RUNNING,
                true,
                reasons::RUNNING,
                "the Task's Job runs the program",
            ));
            match waiting {
                Some((r, m)) => out.push(set(types::WAITING, true, r, m)),
                None if had(types::WAITING) => {
                    out.push(set(types::WAITING, false, reasons::NOT_WAITING, ""));
                }
                None => {}
            }
            out.push(set(types::FINISHED, false, reasons::NOT_FINISHED, ""));
        }
        Some(Phase::Queued) => {
            let r = reason.unwrap_or(reasons::QUEUE_FULL);
            out.push(set(types::RUNNING, false, r, msg));
            out.push(set(types::WAITING, true, r, msg));
            out.push(set(types::FINISHED, false, reasons::NOT_FINISHED, ""));
        }
        Some(p @ (Phase::Completed | Phase::Failed)) => {
            let r = reason.unwrap_or(reasons::JOB_FAILED);
            out.push(set(types::RUNNING, false, r, msg));
            if had(types::WAITING) {
                out.push(set(types::WAITING, false, reasons::NOT_WAITING, ""));
            }
            let kind = if *p == Phase::Completed {
                types::COMPLETE
            } else {
                types::FAILED
            };
            out.push(set(kind, true, r, msg));
            out.push(set(types::FINISHED, true, r, msg));
        }
        None => {
            let r = reason.unwrap_or(reasons::NOT_FINISHED);
            out.push(set(types::RUNNING, false, r, msg));
            out.push(set(types::FINISHED, false, reasons::NOT_FINISHED, ""));
        }
    }
    out
}
