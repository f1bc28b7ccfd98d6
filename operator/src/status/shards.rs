//! Pure: what an Indexed Job and its shards' result ConfigMaps say about a
//! sharded Task — shard counts, the per-shard results in order (bounded as
//! a single result is), and the outcome once every shard has finished.

use crds::conditions::Reason;
use crds::result::{MAX_STATUS_RESULT_BYTES, digest, shard_config_map_name, truncate_utf8};
use crds::{Phase, ShardCounts, ShardResult, Task, TaskStatus};
use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::status::facts::{self, Facts};
use crate::status::observe::Observed;
use crate::status::observe::{self, Finish};

/// Counts the indexes of the Job controller's interval list ("1,3-5,7").
pub fn count_indexes(list: Option<&str>) -> i32 {
    let Some(list) = list.filter(|l| !l.trim().is_empty()) else {
        return 0;
    };
    list.split(',')
        .map(|part| match part.trim().split_once('-') {
            Some((a, b)) => match (a.parse::<i32>(), b.parse::<i32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => i32::from(part.trim().parse::<i32>().is_ok()),
        })
        .sum()
}

/// Succeeded, failed and running shards of the Job.
pub fn counts(job: &Job) -> ShardCounts {
    let st = job.status.clone().unwrap_or_default();
    let finished = observe::finish(job).is_some();
    ShardCounts {
        succeeded: count_indexes(st.completed_indexes.as_deref()),
        failed: count_indexes(st.failed_indexes.as_deref()),
        active: if finished { 0 } else { st.active.unwrap_or(0) },
    }
}

/// The shards' results as read from their ConfigMaps.
#[derive(Debug, Default, PartialEq)]
pub struct Collected {
    /// One entry per shard, in order; results cut to 32 KiB in total.
    pub results: Vec<ShardResult>,
    pub truncated: bool,
    /// Shards without a valid result from this Job.
    pub missing: Vec<i32>,
    /// Shards whose result was too large to store.
    pub too_large: Vec<i32>,
    /// Shards whose program exited non-zero.
    pub failed: Vec<i32>,
}

/// Reads every shard's result, fenced by Task and Job UID like a single result.
pub fn collect(
    cms: &[ConfigMap],
    task: &str,
    task_uid: &str,
    job_uid: &str,
    shards: i32,
) -> Collected {
    let mut out = Collected::default();
    let mut budget = MAX_STATUS_RESULT_BYTES;
    for index in 0..shards.max(0) {
        let name = shard_config_map_name(task, u32::try_from(index).unwrap_or_default());
        let cm = cms
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name.as_str()));
        let mut entry = ShardResult {
            index,
            ..ShardResult::default()
        };
        match observe::accept_result(cm, task_uid, job_uid) {
            Ok(r) => {
                entry.exit_code = Some(r.exit_code);
                let text = r.text();
                if !r.too_large() {
                    entry.result_digest = Some(digest(&r.result));
                }
                if r.too_large() {
                    out.too_large.push(index);
                } else if text.len() <= budget {
                    budget -= text.len();
                    entry.result = text;
                } else {
                    entry.result = truncate_utf8(&text, budget).to_owned();
                    budget -= entry.result.len();
                    out.truncated = true;
                }
                if r.exit_code != 0 {
                    out.failed.push(index);
                }
            }
            Err(_) => out.missing.push(index),
        }
        out.results.push(entry);
    }
    out
}

fn list(indexes: &[i32]) -> String {
    const SHOWN: usize = 10;
    let mut s: Vec<String> = indexes.iter().take(SHOWN).map(i32::to_string).collect();
    if indexes.len() > SHOWN {
        s.push(format!("and {} more", indexes.len() - SHOWN));
    }
    s.join(", ")
}

/// The facts of a sharded Task's own Indexed Job.
pub fn from_job(task: &Task, prev: &TaskStatus, job: &Job, obs: &Observed<'_>) -> Facts {
    let single = Observed {
        pod_refused: None,
        result: None,
        refused: None,
        now: obs.now.clone(),
        ..*obs
    };
    let base = facts::from_job(task, prev, job, &single);
    let shards = task.spec.shards;
    let facts = Facts {
        shards: Some(counts(job)),
        ..base
    };
    let Some(finish) = observe::finish(job) else {
        return facts;
    };
    let name = task.metadata.name.as_deref().unwrap_or_default();
    let task_uid = task.metadata.uid.as_deref().unwrap_or_default();
    let job_uid = job.metadata.uid.as_deref().unwrap_or_default();
    let c = collect(obs.shard_results, name, task_uid, job_uid, shards);
    let facts = match finish {
        Finish::Complete(_) => succeeded(shards, &c, facts),
        Finish::Failed(cond) => job_failed(task, job, cond, &c, facts),
    };
    Facts {
        result: None,
        shard_results: c.results,
        shard_results_truncated: c.truncated,
        ..facts
    }
}

/// `facts` with the phase, reason and message a finished Task ends with.
fn ended(phase: Phase, reason: Reason, message: String, facts: Facts) -> Facts {
    Facts {
        phase: Some(phase),
        reason: Some(reason),
        message: Some(message),
        ..facts
    }
}

/// The Indexed Job succeeded: Completed, unless a shard's result (in `c`)
/// is too large or missing.
fn succeeded(shards: i32, c: &Collected, facts: Facts) -> Facts {
    if !c.too_large.is_empty() {
        let message = format!(
            "the results of shards {} are too large to store",
            list(&c.too_large)
        );
        return ended(Phase::Failed, Reason::ResultTooLarge, message, facts);
    }
    if !c.missing.is_empty() {
        let message = format!(
            "the Job succeeded but shards {} left no result from this Job",
            list(&c.missing)
        );
        return ended(Phase::Failed, Reason::ResultMissing, message, facts);
    }
    let message = format!("all {shards} shards succeeded");
    let facts = Facts {
        exit_code: Some(0),
        ..facts
    };
    ended(Phase::Completed, Reason::Succeeded, message, facts)
}

/// The Indexed Job failed (condition `cond`): Failed, saying which shards
/// ran out of retries, or else what the single-Job facts say and how many
/// shards had succeeded.
fn job_failed(task: &Task, job: &Job, cond: &JobCondition, c: &Collected, facts: Facts) -> Facts {
    let shards = task.spec.shards;
    let st = job.status.clone().unwrap_or_default();
    let failed = count_indexes(st.failed_indexes.as_deref());
    let done = count_indexes(st.completed_indexes.as_deref());
    // Shards failed at once by spec.failOnExitCodes (podFailurePolicy FailIndex).
    let listed: Vec<i32> = c
        .results
        .iter()
        .filter(|r| {
            c.failed.contains(&r.index)
                && r.exit_code
                    .is_some_and(|e| task.spec.fail_on_exit_codes.contains(&e))
        })
        .map(|r| r.index)
        .collect();
    let (reason, message) = match cond.reason.as_deref() {
        Some("FailedIndexes") if !listed.is_empty() => (
            Reason::FailOnExitCode,
            format!(
                "shards {} exited with a code that spec.failOnExitCodes lists ({}) and failed at \
                 once without retrying; {failed} of {shards} shards failed (failed shards: {}); \
                 {done} succeeded",
                list(&listed),
                failed_codes(c),
                st.failed_indexes.as_deref().unwrap_or("-")
            ),
        ),
        Some("FailedIndexes") | Some("BackoffLimitExceeded") => (
            Reason::BackoffLimitExceeded,
            format!(
                "{failed} of {shards} shards failed on all attempts (spec.retries: {} per shard; failed shards: {}); {done} succeeded",
                task.spec.retries,
                st.failed_indexes.as_deref().unwrap_or("-")
            ),
        ),
        _ => (
            observe::failure_reason(
                cond.reason.as_deref(),
                !task.spec.fail_on_exit_codes.is_empty(),
            ),
            format!(
                "{}; {done} of {shards} shards had succeeded",
                facts.message.clone().unwrap_or_default()
            ),
        ),
    };
    ended(Phase::Failed, reason, message, facts)
}

/// A sharded Task whose Indexed Job vanished (e.g. removed by
/// `ttlSecondsAfterFinished` before it was read) or was replaced: finish
/// from the shard results its pods left, as for a single result.
pub fn lost(
    task: &Task,
    obs: &Observed<'_>,
    task_uid: &str,
    job_uid: &str,
    how: &str,
    base: Facts,
) -> Facts {
    let name = task.metadata.name.as_deref().unwrap_or_default();
    let shards = task.spec.shards;
    let c = collect(obs.shard_results, name, task_uid, job_uid, shards);
    let done = shards - i32::try_from(c.missing.len()).unwrap_or(shards);
    let (phase, reason, message, exit_code) =
        match lost_failure(&c, name, job_uid, how, shards, done) {
            Some((reason, message)) => (Phase::Failed, reason, message, None),
            None => (
                Phase::Completed,
                Reason::Succeeded,
                format!("all {shards} shards succeeded; their Job {name} {how} afterwards"),
                Some(0),
            ),
        };
    Facts {
        phase: Some(phase),
        reason: Some(reason),
        message: Some(message),
        exit_code,
        result: None,
        shards: Some(ShardCounts {
            succeeded: done - i32::try_from(c.failed.len()).unwrap_or(0),
            failed: i32::try_from(c.failed.len()).unwrap_or(0),
            active: 0,
        }),
        shard_results: c.results,
        shard_results_truncated: c.truncated,
        ..base
    }
}

/// Why a sharded Task whose Job `name` vanished failed, from the results
/// `c` its shards left (`done` of `shards` did); `None` when all succeeded.
fn lost_failure(
    c: &Collected,
    name: &str,
    job_uid: &str,
    how: &str,
    shards: i32,
    done: i32,
) -> Option<(Reason, String)> {
    if !c.too_large.is_empty() {
        return Some((
            Reason::ResultTooLarge,
            format!(
                "the results of shards {} are too large to store; its Job {name} {how}",
                list(&c.too_large)
            ),
        ));
    }
    if !c.failed.is_empty() {
        // Each shard's last attempt failed: the Job can only have ended
        // by running out of retries (or its deadline, which the shard
        // results cannot tell apart).
        return Some((
            Reason::BackoffLimitExceeded,
            format!(
                "shards {} failed (last exit codes {}); its Job {name} {how} before its \
                 final state was read",
                list(&c.failed),
                failed_codes(c)
            ),
        ));
    }
    if !c.missing.is_empty() {
        return Some((
            Reason::JobLost,
            format!(
                "the Task's Job {name} (UID {job_uid}) {how}; shards {} left no result from it \
                 ({done} of {shards} did)",
                list(&c.missing)
            ),
        ));
    }
    None
}

/// "index: exit code" of the first 10 failed shards, comma-separated.
fn failed_codes(c: &Collected) -> String {
    let codes: Vec<String> = c
        .results
        .iter()
        .filter(|r| c.failed.contains(&r.index))
        .take(10)
        .map(|r| format!("{}: {}", r.index, observe::describe_exit(r.exit_code)))
        .collect();
    codes.join(", ")
}
