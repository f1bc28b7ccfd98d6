use crds::conditions::reasons;
use crds::result::{MAX_STATUS_RESULT_BYTES, shard_config_map_name};
use crds::{Phase, ShardCounts, Task};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use std::collections::BTreeMap;

use crds::names::labels;
use k8s_openapi::api::batch::v1::JobStatus;

use crate::fixtures::{cm, job, obs, task};
use crate::status::desired;
use crate::status::shards::*;

fn sharded(n: i32) -> Task {
    let mut t = task(None);
    t.spec.shards = n;
    t.spec.parallelism = Some(2);
    t
}

fn shard_cm(i: u32, job_uid: &str, exit: i32, result: &str) -> ConfigMap {
    let mut c = cm("tu", job_uid, exit, result);
    c.metadata.name = Some(shard_config_map_name("t", i));
    c.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(labels::SHARD.to_owned(), i.to_string());
    c
}

fn indexed(cond: Option<(&str, &str)>, completed: &str, failed: Option<&str>, active: i32) -> Job {
    let mut j = job("j1", Some("tu"), cond, 0, 0, active);
    let st = j.status.get_or_insert_with(JobStatus::default);
    st.completed_indexes = Some(completed.to_owned());
    st.failed_indexes = failed.map(str::to_owned);
    j
}

#[test]
fn index_lists_count() {
    for (s, n) in [
        (None, 0),
        (Some(""), 0),
        (Some("0"), 1),
        (Some("0-3,5,7-8"), 7),
        (Some("x,2"), 1),
    ] {
        assert_eq!(count_indexes(s), n, "{s:?}");
    }
}

#[test]
fn running_shows_counts() {
    let j = indexed(None, "0-2", None, 2);
    let s = desired(&sharded(12), &obs(Some(&j), None, &[])).status;
    assert_eq!(s.phase, Some(Phase::Running));
    assert_eq!(
        s.shards,
        Some(ShardCounts {
            succeeded: 3,
            failed: 0,
            active: 2
        })
    );
    assert!(s.shard_results.is_empty());
}

#[test]
fn complete_collects_results_in_order() {
    let j = indexed(Some(("Complete", "CompletionsReached")), "0-2", None, 0);
    let cms = [
        shard_cm(2, "j1", 0, "c"),
        shard_cm(0, "j1", 0, "a"),
        shard_cm(1, "j1", 0, "b"),
    ];
    let mut o = obs(Some(&j), None, &[]);
    o.shard_results = &cms;
    let s = desired(&sharded(3), &o).status;
    assert_eq!(s.phase, Some(Phase::Completed));
    assert_eq!(s.message.as_deref(), Some("all 3 shards succeeded"));
    let got: Vec<(i32, &str)> = s
        .shard_results
        .iter()
        .map(|r| (r.index, r.result.as_str()))
        .collect();
    assert_eq!(got, vec![(0, "a"), (1, "b"), (2, "c")]);
    assert_eq!(s.shard_results_truncated, None);
    assert_eq!(s.result, None);
}

#[test]
fn foreign_or_missing_shard_result_fails_the_task() {
    let j = indexed(Some(("Complete", "CompletionsReached")), "0-1", None, 0);
    let cms = [
        shard_cm(0, "j1", 0, "a"),
        shard_cm(1, "old-job", 0, "stale"),
    ];
    let mut o = obs(Some(&j), None, &[]);
    o.shard_results = &cms;
    let s = desired(&sharded(2), &o).status;
    assert_eq!(s.phase, Some(Phase::Failed));
    assert_eq!(s.reason.as_deref(), Some(reasons::RESULT_MISSING));
    assert!(
        s.message
            .as_deref()
            .unwrap()
            .contains("shards 1 left no result")
    );
}

#[test]
fn results_are_bounded_together() {
    let big = "x".repeat(MAX_STATUS_RESULT_BYTES - 10);
    let cms = [
        shard_cm(0, "j1", 0, &big),
        shard_cm(1, "j1", 0, "0123456789abcdef"),
        shard_cm(2, "j1", 0, "z"),
    ];
    let c = collect(&cms, "t", "tu", "j1", 3);
    let total: usize = c.results.iter().map(|r| r.result.len()).sum();
    assert_eq!(total, MAX_STATUS_RESULT_BYTES);
    assert!(c.truncated);
    assert_eq!(c.results[1].result, "0123456789");
    assert_eq!(
        (c.results[2].result.as_str(), c.results[2].exit_code),
        ("", Some(0))
    );
}

#[test]
fn failed_indexes_name_the_failed_shards() {
    let j = indexed(Some(("Failed", "FailedIndexes")), "0,2", Some("1"), 0);
    let cms = [
        shard_cm(0, "j1", 0, "a"),
        shard_cm(1, "j1", 3, "boom"),
        shard_cm(2, "j1", 0, "c"),
    ];
    let mut o = obs(Some(&j), None, &[]);
    o.shard_results = &cms;
    let s = desired(&sharded(3), &o).status;
    assert_eq!(s.phase, Some(Phase::Failed));
    assert_eq!(s.reason.as_deref(), Some(reasons::BACKOFF_LIMIT_EXCEEDED));
    let m = s.message.unwrap();
    assert!(
        m.contains("1 of 3 shards failed") && m.contains("failed shards: 1"),
        "{m}"
    );
    assert_eq!(s.shard_results[1].exit_code, Some(3));
    assert_eq!(
        s.shards,
        Some(ShardCounts {
            succeeded: 2,
            failed: 1,
            active: 0
        })
    );
}
