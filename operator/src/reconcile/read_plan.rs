//! Pure: the plan of the read step (`read`), what one reconcile reads,
//! decided from the Task and (once read) its Job, so that the read step
//! makes exactly the calls the status needs and nothing else.

use crds::Task;
use k8s_openapi::api::batch::v1::Job;

use crate::status::{self, kueue, observe};

/// How the reconcile finds the Task's Job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Find {
    /// The Task had a Job, or never may start (cancelled): read it.
    Get,
    /// The Task may start but the last look found its name taken by
    /// another Task's Job: read it, and start only once it is gone.
    GetThenStart,
    /// The Task never had a Job and may start now: create it at once
    /// (AlreadyExists returns the one there) unless a cap applies, which
    /// means looking first.
    Start,
}

/// How to find the Job of `task`.
pub fn find(task: &Task) -> Find {
    let recorded = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    if recorded.is_some() || task.spec.cancel {
        Find::Get
    } else if status::is_blocked(task) {
        Find::GetThenStart
    } else {
        Find::Start
    }
}

/// What else to read once the Job is known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reads<'a> {
    /// The pods of the Task's own Job.
    pub pods: bool,
    /// Every pod of it from the API server, not the live ones the pod
    /// cache holds: a final read (the exit codes the last status keeps),
    /// or a Job that counts more attempts than the status does (the pod
    /// that failed, whose exit code the retry's status and Event name, has
    /// left the cache).
    pub all_pods: bool,
    /// `<task>-result` (progress while running, the result at the end).
    pub result: bool,
    /// The shards' result ConfigMaps (a sharded Task's Job ended or vanished).
    pub shard_results: bool,
    /// The Job whose pods must have written the final result, when one is
    /// read as final: results are vetted against it.
    pub fence: Option<&'a str>,
    /// The Kueue Workload of the Task's own Job: Kueue manages it, it has
    /// not finished, and it is suspended (where does it stand in Kueue?) or
    /// may have to be stopped (only its Workload's deactivation stops it).
    pub workload: bool,
}

/// What to read for `task`, whose Job (by name) is `job`.
pub fn reads<'a>(task: &'a Task, job: Option<&'a Job>) -> Reads<'a> {
    let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
    let recorded = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    let ours = job.filter(|j| observe::ownership(j, task_uid) == observe::Ownership::Ours);
    // A Job the Job controller has not looked at yet (just created) has no
    // pods, and no worker has written progress for it.
    let untouched = ours.is_some_and(observe::untouched);
    let final_read = status::wants_final_result(task, job);
    // The Job whose pods may have written the final result.
    let fence = match ours {
        Some(j) => j.metadata.uid.as_deref(),
        None => recorded,
    };
    let ended = ours.is_none_or(|j| observe::finish(j).is_some());
    let sharded = task.spec.is_sharded();
    let suspended = |j: &Job| j.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    let may_stop = task.spec.cancel || task.spec.start_timeout_seconds.is_some();
    let workload = ours.is_some_and(|j| {
        kueue::manages(j) && observe::finish(j).is_none() && (suspended(j) || may_stop)
    });
    Reads {
        workload,
        pods: ours.is_some() && !untouched,
        all_pods: final_read || ours.is_some_and(|j| uncounted_failure(task, j)),
        result: !sharded && status::wants_result(task, job) && (final_read || !untouched),
        shard_results: sharded && fence.is_some() && ended && final_read,
        fence: fence.filter(|_| final_read),
    }
}

/// True when `job` counts a failed pod and more attempts than `task`'s
/// status shows: an attempt failed since the status was written.
fn uncounted_failure(task: &Task, job: &Job) -> bool {
    let Some(st) = job.status.as_ref() else {
        return false;
    };
    let failed = st.failed.unwrap_or(0);
    let counted = failed + st.succeeded.unwrap_or(0) + st.active.unwrap_or(0);
    let shown = task.status.as_ref().and_then(|s| s.attempts).unwrap_or(0);
    failed > 0 && counted > shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{JobFixture, TaskFixture, running};

    #[test]
    fn find_follows_the_record() {
        let fresh = Task::test();
        assert_eq!(find(&fresh), Find::Start);
        assert_eq!(find(&fresh.cancelled()), Find::Get);
        assert_eq!(find(&Task::test().running()), Find::Get);
        let blocked = Task::test().status(crds::TaskStatus {
            reason: Some(crds::conditions::reasons::JOB_OWNED_BY_OTHER.to_owned()),
            ..Default::default()
        });
        assert_eq!(find(&blocked), Find::GetThenStart);
    }

    #[test]
    fn a_fresh_job_needs_no_pods_and_no_result() {
        let t = Task::test().running();
        // Created, not yet looked at by the Job controller.
        let j = JobFixture::ours().untouched().build();
        let r = reads(&t, Some(&j));
        assert!(!r.pods);
        assert!(!r.result);
        assert!(!r.shard_results);
        assert_eq!(r.fence, None, "nothing is final while the Job runs");
    }

    #[test]
    fn a_new_failure_reads_every_pod_once() {
        // Attempt 1 failed, attempt 2 runs: the status shows 1 attempt.
        let t = Task::test().running();
        assert_eq!(running().attempts, Some(1));
        let retrying = JobFixture::ours().failed_pods(1).active(1).build();
        let r = reads(&t, Some(&retrying));
        assert!(r.pods && r.all_pods, "the failed pod's exit code");
        // Once the status counts 2 attempts, the live pods suffice.
        let counted = Task::test().status(crds::TaskStatus {
            attempts: Some(2),
            ..running()
        });
        assert!(!reads(&counted, Some(&retrying)).all_pods);
        // A first attempt that runs: the cache.
        let first = JobFixture::ours().active(1).build();
        let r = reads(&t, Some(&first));
        assert!(r.pods && !r.all_pods);
        // The end: every pod.
        let done = JobFixture::ours().complete().build();
        assert!(reads(&t, Some(&done)).all_pods);
    }

    #[test]
    fn a_vanished_job_is_read_as_final_from_the_record() {
        let t = Task::test().running();
        let r = reads(&t, None);
        assert!(!r.pods);
        assert!(r.result);
        assert_eq!(r.fence, running().job_uid.as_deref());
    }
}
