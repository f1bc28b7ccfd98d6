//! Thin: the gate of a Task with `spec.after`, before it may get a Job.
//! The decision is the pure `after::decide`, over the upstream Tasks the
//! Task cache shows (no API call); what is decided here is only whether
//! the gate still applies.

use crds::Task;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::reflector::ObjectRef;

use crate::after::{self, Gate};
use crate::context::Context;
use crate::job::build::Identity;
use crate::reconcile::error::Error;
use crate::status::{self, Desired};

/// The status of a Task that waits for its upstreams, or that they keep
/// from ever starting; `None` when it may go on to its Job: it has no
/// `after`, all its upstreams met their condition, or it is past the gate
/// (it has a Job, recorded or in the Job cache: `after` is never looked
/// at again then; or it is cancelled, which ends it without one).
pub fn gate(
    ctx: &Context,
    task: &Task,
    id: &Identity<'_>,
    now: &Time,
) -> Result<Option<Desired>, Error> {
    if task.spec.after.is_empty() || task.spec.cancel || has_job(ctx, task, id) {
        return Ok(None);
    }
    let tasks = ctx.queue.tasks().ok_or(Error::QueueNotReady)?;
    let lookup = |name: &str| tasks.get(&ObjectRef::new(name).within(id.namespace));
    Ok(match after::decide(task, &lookup, now.0) {
        Gate::Go => None,
        Gate::Wait(w) => Some(status::pending(task, &w, now.clone())),
        Gate::Fail(f) => Some(status::upstream_failed(task, &f, now.clone())),
    })
}

/// True when the Task has started: its status records its Job, or the Job
/// cache holds a Job of its own (made, its status not written yet).
fn has_job(ctx: &Context, task: &Task, id: &Identity<'_>) -> bool {
    if task.status.as_ref().is_some_and(|s| s.job_uid.is_some()) {
        return true;
    }
    let Some(jobs) = ctx.queue.jobs() else {
        return false;
    };
    jobs.get(&ObjectRef::new(id.name).within(id.namespace))
        .is_some_and(|j| {
            j.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(crds::names::labels::TASK_UID))
                .is_some_and(|u| u == id.uid)
        })
}
