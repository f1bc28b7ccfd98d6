use crds::conditions::reasons;
use crds::result::{MAX_STATUS_RESULT_BYTES, digest};
use crds::{Phase, ShardCounts, Task};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::fixtures::{JobFixture, ResultFixture, TaskFixture, obs};
use crate::status::desired;
use crate::status::shards::*;

fn sharded(n: i32) -> Task {
    Task::test().sharded(n).parallelism(2)
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
    let j = JobFixture::ours()
        .completed_indexes("0-2")
        .active(2)
        .build();
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
    let j = JobFixture::ours()
        .complete()
        .completed_indexes("0-2")
        .build();
    let cms = [
        ResultFixture::new("c").shard(2),
        ResultFixture::new("a").shard(0),
        ResultFixture::new("b").shard(1),
    ]
    .map(ResultFixture::build);
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
    let j = JobFixture::ours()
        .complete()
        .completed_indexes("0-1")
        .build();
    let cms = [
        ResultFixture::new("a").shard(0),
        ResultFixture::new("stale").shard(1).of_job("old-job"),
    ]
    .map(ResultFixture::build);
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
        ResultFixture::new(&big).shard(0),
        ResultFixture::new("0123456789abcdef").shard(1),
        ResultFixture::new("z").shard(2),
    ]
    .map(ResultFixture::build);
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

/// Each accepted shard carries the digest of its whole result, also where
/// the status holds only a cut copy; a shard without one has no digest.
#[test]
fn every_accepted_shard_has_the_digest_of_its_whole_result() {
    let big = "x".repeat(MAX_STATUS_RESULT_BYTES + 5);
    let cms = [
        ResultFixture::new(&big).shard(0),
        ResultFixture::new("b").shard(1),
        ResultFixture::new("stale").shard(2).of_job("old-job"),
    ]
    .map(ResultFixture::build);
    let c = collect(&cms, "t", "tu", "j1", 3);
    assert!(c.truncated);
    let digests: Vec<Option<String>> = c.results.iter().map(|r| r.result_digest.clone()).collect();
    assert_eq!(
        digests,
        [Some(digest(big.as_bytes())), Some(digest(b"b")), None]
    );
}

/// A failed Indexed Job of 3 shards whose shard 1 exited 3, and the
/// shards' results.
fn shard_1_failed() -> (Job, [ConfigMap; 3]) {
    let j = JobFixture::ours()
        .failed("FailedIndexes")
        .completed_indexes("0,2")
        .failed_indexes("1")
        .build();
    let cms = [
        ResultFixture::new("a").shard(0),
        ResultFixture::new("boom").shard(1).exit(3),
        ResultFixture::new("c").shard(2),
    ]
    .map(ResultFixture::build);
    (j, cms)
}

#[test]
fn failed_indexes_name_the_failed_shards() {
    let (j, cms) = shard_1_failed();
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

/// Shard 1 exited with a code spec.failOnExitCodes lists (the Job's
/// FailIndex rule): FailOnExitCode, naming the shard and its code.
#[test]
fn a_shard_failed_by_a_listed_code_is_named() {
    let (j, cms) = shard_1_failed();
    let mut o = obs(Some(&j), None, &[]);
    o.shard_results = &cms;
    let s = desired(&sharded(3).fail_on(&[3]), &o).status;
    let msg = s.message.clone().unwrap_or_default();
    assert_eq!(
        s.reason.as_deref(),
        Some(reasons::FAIL_ON_EXIT_CODE),
        "{msg}"
    );
    assert!(
        msg.contains("shards 1 exited") && msg.contains("1: 3"),
        "{msg}"
    );
    assert!(msg.contains("2 succeeded"), "{msg}");
}
