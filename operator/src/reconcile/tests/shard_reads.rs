//! Bounded shard reads: only the Task's own shard names, and results past
//! the byte budget kept as too large, with their exit code and stamp.

use crate::fixtures::ResultFixture;
use crate::reconcile::shard_reads::{content_bytes, shard_index, without_result};
use crate::status::observe::{accept_result, stamp};

#[test]
fn only_the_tasks_own_shard_names_count() {
    assert_eq!(shard_index("t", "t-result-0", 2), Some(0));
    assert_eq!(shard_index("t", "t-result-1", 2), Some(1));
    for other in [
        "t-result-2",
        "t-result-01",
        "t-result-+1",
        "t-result",
        "u-result-0",
        "t-x-result-0",
        "bomb-17",
        "t-result-99999999999",
    ] {
        assert_eq!(shard_index("t", other, 2), None, "{other}");
    }
    assert_eq!(shard_index("t", "t-result-0", 0), None);
}

#[test]
fn a_result_past_the_budget_is_kept_as_too_large() {
    let cm = ResultFixture::new("x".repeat(1000))
        .exit(3)
        .shard(1)
        .build();
    assert!(content_bytes(&cm) >= 1000);
    let slim = without_result(cm.clone());
    assert!(content_bytes(&slim) < 64, "{:?}", slim.data);
    assert_eq!(stamp(&slim), stamp(&cm));
    assert_eq!(slim.metadata.labels, cm.metadata.labels);
    let r = accept_result(Some(&slim), "tu", "j1").unwrap();
    assert!(r.too_large());
    assert_eq!(r.exit_code, 3);
}
