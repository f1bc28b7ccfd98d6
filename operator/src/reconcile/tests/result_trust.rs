//! The writer check: which stamped pods may have written a Task's result.

use crate::fixtures::{PodFixture, ResultFixture};
use crate::status::observe::{WriterPod, check_writer, pod_prefix, rival_job, stamp};

/// The pod the result's stamp names (`t-abcde`, UID `pod-uid`), exited,
/// controlled by the Job with UID `job_uid`.
fn writer(job_uid: &str) -> PodFixture {
    PodFixture::new("t-abcde")
        .exited(0)
        .uid("pod-uid")
        .of_job(job_uid)
}

#[test]
fn the_jobs_own_pod_is_trusted() {
    let c = ResultFixture::new("x").build();
    let p = writer("j1").build();
    assert_eq!(
        check_writer(&c, WriterPod::Found(&p), "t", "j1", None),
        Ok(())
    );
}

#[test]
fn a_pod_of_another_job_is_not() {
    let c = ResultFixture::new("x").build();
    let p = writer("other-job").build();
    let why = check_writer(&c, WriterPod::Found(&p), "t", "j1", None).unwrap_err();
    assert!(
        why.contains("other-job") && why.contains("t-abcde"),
        "{why}"
    );
}

#[test]
fn a_pod_of_that_name_with_another_uid_is_not() {
    let c = ResultFixture::new("x").build();
    let p = writer("j1").uid("another-uid").build();
    let why = check_writer(&c, WriterPod::Found(&p), "t", "j1", None).unwrap_err();
    assert!(why.contains("another-uid"), "{why}");
}

#[test]
fn a_shard_result_needs_a_pod_of_that_shard() {
    let c = ResultFixture::new("x").writer("t-3-abcde").build();
    let p = writer("j1").shard(3).build();
    assert_eq!(
        check_writer(&c, WriterPod::Found(&p), "t", "j1", Some(3)),
        Ok(())
    );
    let why = check_writer(&c, WriterPod::Found(&p), "t", "j1", Some(4)).unwrap_err();
    assert!(why.contains("shard 3"), "{why}");
}

#[test]
fn a_gone_pod_is_trusted_only_when_no_other_job_shares_its_name() {
    let c = ResultFixture::new("x").build();
    let gone = |rival| WriterPod::Gone { rival };
    assert_eq!(check_writer(&c, gone(false), "t", "j1", None), Ok(()));
    assert!(check_writer(&c, gone(true), "t", "j1", None).is_err());
    // Named like another Task's pods.
    assert!(check_writer(&c, gone(false), "u", "j1", None).is_err());
}

#[test]
fn an_unstamped_result_is_refused() {
    let c = ResultFixture::new("x").unstamped().build();
    assert_eq!(stamp(&c), None);
    let why = check_writer(&c, WriterPod::Gone { rival: false }, "t", "j1", None).unwrap_err();
    assert!(why.contains("stamp"), "{why}");
    let why = crate::status::observe::accept_result(Some(&c), "tu", "j1").unwrap_err();
    assert!(why.contains("stamp"), "{why}");
}

#[test]
fn prefixes_follow_the_job_controller() {
    assert_eq!(pod_prefix("a", None), ("a-".to_owned(), false));
    assert_eq!(pod_prefix("a", Some(3)), ("a-3-".to_owned(), false));
    let long = "x".repeat(60);
    let (p, cut) = pod_prefix(&long, None);
    assert!(cut && p.len() == 58 && p.ends_with('-'), "{p}");
    let (p, cut) = pod_prefix(&long, Some(12));
    assert!(cut && p.len() == 58 && p.ends_with("-12-"), "{p}");
}

#[test]
fn rivals_are_the_names_that_collide() {
    assert_eq!(rival_job("a-3", None), Some("a".to_owned()));
    assert_eq!(rival_job("a", Some(3)), Some("a-3".to_owned()));
    assert_eq!(rival_job("a", None), None);
    assert_eq!(rival_job("a-b", None), None);
    assert_eq!(rival_job("-3", None), None);
}
