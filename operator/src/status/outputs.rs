//! Pure: a finished Task's outputs, from the worker's report of its
//! uploads in the result (each shard's, for a sharded Task) that was
//! accepted as final; and what they change in the status.

use crds::conditions::Reason;
use crds::names::labels;
use crds::outputs::RESULT_OUTPUT;
use crds::result::keys;
use crds::{Phase, Task};

use crate::outputs::report::{self, Outcome, Raw};
use crate::status::facts::Facts;
use crate::status::observe::{self, Observed};

/// What the reports in the results of the Task's Job `job_uid` say; `None`
/// when no accepted result holds one.
pub fn outcome(task: &Task, obs: &Observed<'_>, job_uid: &str) -> Option<Outcome> {
    let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
    let mut raws = Vec::new();
    if task.spec.is_sharded() {
        for cm in obs.shard_results {
            let shard = cm
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::SHARD))
                .and_then(|s| s.parse().ok());
            if let (Some(shard), Ok(data)) = (shard, observe::fenced(Some(cm), task_uid, job_uid))
                && let Some(json) = data.get(keys::OUTPUTS)
            {
                raws.push(Raw {
                    shard: Some(shard),
                    json,
                });
            }
        }
    } else if obs.refused.is_none()
        && let Ok(data) = observe::fenced(obs.result, task_uid, job_uid)
        && let Some(json) = data.get(keys::OUTPUTS)
    {
        raws.push(Raw { shard: None, json });
    }
    report::read(&raws, obs.outputs)
}

/// The terminal facts `f` with the outputs `outcome` says. A listing is
/// shown; a result too large to keep inline that the worker uploaded no
/// longer fails the Task. An upload that failed fails a Task that had
/// completed, keeping its inline result and exit code; a Task that failed
/// on its own keeps its reason.
pub fn apply(mut f: Facts, outcome: Option<Outcome>) -> Facts {
    match outcome {
        None => f,
        Some(Outcome::Listed(l)) => {
            let uploaded_result = l.names.iter().any(|n| n == RESULT_OUTPUT);
            if f.reason == Some(Reason::ResultTooLarge) && f.exit_code == Some(0) && uploaded_result
            {
                f.phase = Some(Phase::Completed);
                f.reason = Some(Reason::Succeeded);
                f.message = Some(format!(
                    "the program succeeded; its result is too large to keep inline and was \
                     uploaded as the output {RESULT_OUTPUT}"
                ));
            }
            f.outputs = Some(l.status);
            f
        }
        Some(Outcome::Failed(reason, message)) => {
            let failed_alone =
                f.phase == Some(Phase::Failed) && f.reason != Some(Reason::ResultTooLarge);
            if !failed_alone {
                f.phase = Some(Phase::Failed);
                f.reason = Some(reason);
                f.message = Some(message);
            }
            f.outputs = None;
            f
        }
    }
}
