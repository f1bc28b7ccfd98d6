//! The writer check: which stamped pods may have written a Task's result.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::fixtures::{cm, pod};
use crate::status::observe::{WriterPod, check_writer, pod_prefix, rival_job, stamp};

fn job_pod(
    uid: &str,
    controller: (&str, &str),
    index: Option<&str>,
) -> k8s_openapi::api::core::v1::Pod {
    let mut p = pod("t-abcde", 1, Some(0), None);
    p.metadata.uid = Some(uid.into());
    p.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "batch/v1".into(),
        kind: controller.0.into(),
        name: "t".into(),
        uid: controller.1.into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    p.metadata.annotations = index.map(|i| {
        [(
            crds::names::annotations::JOB_COMPLETION_INDEX.to_owned(),
            i.to_owned(),
        )]
        .into()
    });
    p
}

#[test]
fn the_jobs_own_pod_is_trusted() {
    let c = cm("tu", "j1", 0, "x");
    let p = job_pod("pod-uid", ("Job", "j1"), None);
    assert_eq!(
        check_writer(&c, WriterPod::Found(&p), "t", "j1", None),
        Ok(())
    );
}

#[test]
fn a_pod_of_another_job_is_not() {
    let c = cm("tu", "j1", 0, "x");
    let p = job_pod("pod-uid", ("Job", "other-job"), None);
    let why = check_writer(&c, WriterPod::Found(&p), "t", "j1", None).unwrap_err();
    assert!(
        why.contains("other-job") && why.contains("t-abcde"),
        "{why}"
    );
}

#[test]
fn a_pod_of_that_name_with_another_uid_is_not() {
    let c = cm("tu", "j1", 0, "x");
    let p = job_pod("another-uid", ("Job", "j1"), None);
    let why = check_writer(&c, WriterPod::Found(&p), "t", "j1", None).unwrap_err();
    assert!(why.contains("another-uid"), "{why}");
}

#[test]
fn a_shard_result_needs_a_pod_of_that_shard() {
    let mut c = cm("tu", "j1", 0, "x");
    c.metadata.annotations.as_mut().unwrap().insert(
        crds::names::annotations::WRITER_POD.to_owned(),
        "t-3-abcde".to_owned(),
    );
    let p = job_pod("pod-uid", ("Job", "j1"), Some("3"));
    assert_eq!(
        check_writer(&c, WriterPod::Found(&p), "t", "j1", Some(3)),
        Ok(())
    );
    let why = check_writer(&c, WriterPod::Found(&p), "t", "j1", Some(4)).unwrap_err();
    assert!(why.contains("shard 3"), "{why}");
}

#[test]
fn a_gone_pod_is_trusted_only_when_no_other_job_shares_its_name() {
    let c = cm("tu", "j1", 0, "x");
    let gone = |rival| WriterPod::Gone { rival };
    assert_eq!(check_writer(&c, gone(false), "t", "j1", None), Ok(()));
    assert!(check_writer(&c, gone(true), "t", "j1", None).is_err());
    // Named like another Task's pods.
    assert!(check_writer(&c, gone(false), "u", "j1", None).is_err());
}

#[test]
fn an_unstamped_result_is_refused() {
    let mut c = cm("tu", "j1", 0, "x");
    c.metadata.annotations = None;
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
