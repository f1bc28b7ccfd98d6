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
    let b = Builder {
        prev,
        now,
        generation,
    };
    let msg = message.unwrap_or_default();
    let not_finished = Reason::NotFinished.as_str();
    match phase {
        Some(Phase::Running) => b.running(waiting),
        Some(p @ (Phase::Queued | Phase::Pending)) => {
            let r = reason.unwrap_or(match p {
                Phase::Pending => Reason::WaitingForUpstream.as_str(),
                _ => Reason::QueueFull.as_str(),
            });
            vec![
                b.set(ConditionType::Running, false, r, msg),
                b.set(ConditionType::Waiting, true, r, msg),
                b.set(ConditionType::Finished, false, not_finished, ""),
            ]
        }
        Some(p @ (Phase::Completed | Phase::Failed)) => {
            let r = reason.unwrap_or(Reason::JobFailed.as_str());
            b.terminal(*p, r, msg)
        }
        None => {
            let r = reason.unwrap_or(not_finished);
            vec![
                b.set(ConditionType::Running, false, r, msg),
                b.set(ConditionType::Finished, false, not_finished, ""),
            ]
        }
    }
}

/// What new conditions are built against: the previous ones (for their
/// transition times), the time now and the generation observed.
struct Builder<'a> {
    prev: &'a [Condition],
    now: &'a Time,
    generation: Option<i64>,
}

impl Builder<'_> {
    /// One condition, keeping the previous transition time unless its
    /// status changed.
    fn set(&self, type_: ConditionType, ok: bool, reason: &str, message: &str) -> Condition {
        let status = if ok { "True" } else { "False" };
        let old = self.prev.iter().find(|c| c.type_ == type_.as_str());
        let last_transition_time = match old {
            Some(c) if c.status == status => c.last_transition_time.clone(),
            _ => self.now.clone(),
        };
        Condition {
            type_: type_.as_str().to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            observed_generation: self.generation,
            last_transition_time,
        }
    }

    /// True when the previous conditions have one of type `t`.
    fn had(&self, t: ConditionType) -> bool {
        self.prev.iter().any(|c| c.type_ == t.as_str())
    }

    /// The Task runs: Running, Waiting while its pod waits (False once the
    /// condition exists), not Finished.
    fn running(&self, waiting: Option<(Reason, &str)>) -> Vec<Condition> {
        let mut out = Vec::with_capacity(3);
        out.push(self.set(
            ConditionType::Running,
            true,
            Reason::Running.as_str(),
            "the Task's Job runs the program",
        ));
        match waiting {
            Some((r, m)) => out.push(self.set(ConditionType::Waiting, true, r.as_str(), m)),
            None if self.had(ConditionType::Waiting) => {
                let not_waiting = Reason::NotWaiting.as_str();
                out.push(self.set(ConditionType::Waiting, false, not_waiting, ""));
            }
            None => {}
        }
        let not_finished = Reason::NotFinished.as_str();
        out.push(self.set(ConditionType::Finished, false, not_finished, ""));
        out
    }

    /// The Task ended in phase `p`: not Running, not Waiting (once the
    /// condition exists), Complete or Failed, and Finished, with reason `r`
    /// and message `msg`.
    fn terminal(&self, p: Phase, r: &str, msg: &str) -> Vec<Condition> {
        let mut out = Vec::with_capacity(4);
        out.push(self.set(ConditionType::Running, false, r, msg));
        if self.had(ConditionType::Waiting) {
            let not_waiting = Reason::NotWaiting.as_str();
            out.push(self.set(ConditionType::Waiting, false, not_waiting, ""));
        }
        let kind = if p == Phase::Completed {
            ConditionType::Complete
        } else {
            ConditionType::Failed
        };
        out.push(self.set(kind, true, r, msg));
        out.push(self.set(ConditionType::Finished, true, r, msg));
        out
    }
}
