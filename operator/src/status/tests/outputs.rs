use crds::conditions::{Reason, reasons};
use crds::{Phase, Task, TaskStatus};

use crate::fixtures::{JobFixture, ResultFixture, TaskFixture, obs};
use crate::outputs::report::Target;
use crate::status::{desired, events};

const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn target() -> Target {
    Target {
        store: "s3".into(),
        bucket: "outs".into(),
        prefix: "lt/ns/t/tu/".into(),
    }
}

/// A report listing `names` (each 10 bytes) below `prefix`.
fn report(prefix: &str, names: &[&str]) -> String {
    let files: Vec<serde_json::Value> = names
        .iter()
        .map(|n| serde_json::json!({"name": n, "key": format!("{prefix}{n}"), "size": 10, "sha256": SHA}))
        .collect();
    serde_json::json!({ "files": files }).to_string()
}

fn failed_report(reason: &str) -> String {
    serde_json::json!({
        "files": [],
        "error": {"reason": reason, "message": "a.bin: the store refused the policy"},
    })
    .to_string()
}

/// The status of `Task::test()` whose Job `job` ended with `result`,
/// its outputs going to `target`.
fn ended(job: JobFixture, result: ResultFixture, target: Option<&Target>) -> TaskStatus {
    let j = job.build();
    let r = result.build();
    let mut o = obs(Some(&j), Some(&r), &[]);
    o.outputs = target;
    desired(&Task::test(), &o).status
}

#[test]
fn completed_tasks_list_their_outputs() {
    let r = ResultFixture::new("42").outputs(report("lt/ns/t/tu/", &["b", "a/c"]));
    let s = ended(JobFixture::ours().complete(), r, Some(&target()));
    assert_eq!(s.phase, Some(Phase::Completed));
    assert_eq!(
        s.result.as_deref(),
        Some("42"),
        "the inline result beside them"
    );
    let o = s.outputs.expect("outputs");
    assert_eq!((o.count, o.total_bytes, o.size.as_str()), (2, 20, "20"));
    assert_eq!(o.location, "s3://outs/lt/ns/t/tu/");
    assert_eq!(o.files[0].name, "a/c");
    assert_eq!(o.files[0].url, "s3://outs/lt/ns/t/tu/a/c");
    // Without a report (a Task without store): nothing, as before.
    let s = ended(
        JobFixture::ours().complete(),
        ResultFixture::new("42"),
        None,
    );
    assert_eq!((s.phase, s.outputs), (Some(Phase::Completed), None));
}

#[test]
fn a_failed_upload_fails_the_task_and_keeps_its_result() {
    let r = ResultFixture::new("42").outputs(failed_report("OutputAccessDenied"));
    let s = ended(JobFixture::ours().complete(), r, Some(&target()));
    assert_eq!(s.phase, Some(Phase::Failed));
    assert_eq!(s.reason.as_deref(), Some(reasons::OUTPUT_ACCESS_DENIED));
    assert_eq!(
        s.message.as_deref(),
        Some("uploading the outputs failed: a.bin: the store refused the policy")
    );
    assert_eq!((s.result.as_deref(), s.exit_code), (Some("42"), Some(0)));
    assert_eq!(s.outputs, None, "nothing partial is shown");
    // Said where people look: a Warning Event naming the reason.
    let notes = events::transitions(Task::test().running().status.as_ref(), &s);
    let failed = notes
        .iter()
        .find(|n| n.reason == events::reason::FAILED)
        .expect("an Event");
    assert!(
        failed.warning && failed.message.starts_with("OutputAccessDenied: "),
        "{failed:?}"
    );
}

#[test]
fn a_program_that_failed_keeps_its_own_reason() {
    let r = ResultFixture::new("oops")
        .exit(3)
        .outputs(failed_report("OutputStoreUnreachable"));
    let s = ended(
        JobFixture::ours().failed("BackoffLimitExceeded"),
        r,
        Some(&target()),
    );
    assert_eq!(s.reason.as_deref(), Some(reasons::BACKOFF_LIMIT_EXCEEDED));
    assert_eq!(s.outputs, None);
    // Its outputs uploaded fine: listed beside the failure.
    let r = ResultFixture::new("oops")
        .exit(3)
        .outputs(report("lt/ns/t/tu/", &["log.txt"]));
    let s = ended(
        JobFixture::ours().failed("BackoffLimitExceeded"),
        r,
        Some(&target()),
    );
    assert_eq!(s.reason.as_deref(), Some(reasons::BACKOFF_LIMIT_EXCEEDED));
    assert_eq!(s.outputs.map(|o| o.count), Some(1));
}

#[test]
fn a_large_result_in_the_store_is_no_failure() {
    let r = ResultFixture::omitted(5 << 20).outputs(report("lt/ns/t/tu/", &[".longtask/result"]));
    let s = ended(JobFixture::ours().complete(), r, Some(&target()));
    assert_eq!(s.phase, Some(Phase::Completed), "{:?}", s.message);
    assert!(s.message.unwrap_or_default().contains(".longtask/result"));
    assert_eq!(
        s.outputs.map(|o| o.files[0].name.clone()).as_deref(),
        Some(".longtask/result")
    );
    // Not uploaded (no store): ResultTooLarge as before.
    let s = ended(
        JobFixture::ours().complete(),
        ResultFixture::omitted(5 << 20),
        None,
    );
    assert_eq!(s.reason.as_deref(), Some(reasons::RESULT_TOO_LARGE));
}

#[test]
fn a_report_reaching_another_tasks_objects_is_refused() {
    let r = ResultFixture::new("42").outputs(report("lt/other-ns/t/tu/", &["model.bin"]));
    let s = ended(JobFixture::ours().complete(), r, Some(&target()));
    assert_eq!(s.reason.as_deref(), Some(reasons::OUTPUT_UPLOAD_FAILED));
    assert!(
        s.message
            .unwrap_or_default()
            .contains("outside the Task's prefix")
    );
    assert_eq!(s.outputs, None);
    // A report where the Task has no store: refused too.
    let r = ResultFixture::new("42").outputs(report("lt/ns/t/tu/", &["model.bin"]));
    let s = ended(JobFixture::ours().complete(), r, None);
    assert_eq!(
        s.reason.as_deref(),
        Some(Reason::OutputUploadFailed.as_str())
    );
    // A foreign result's report is never read: the result is refused first.
    let r = ResultFixture::new("42")
        .of_job("old")
        .outputs(report("lt/ns/t/tu/", &["model.bin"]));
    let s = ended(JobFixture::ours().complete(), r, Some(&target()));
    assert_eq!(
        (s.reason.as_deref(), s.outputs),
        (Some(reasons::RESULT_MISSING), None)
    );
}

#[test]
fn shards_report_each_below_their_prefix() {
    let t = Task::test().sharded(2);
    let j = JobFixture::ours()
        .complete()
        .completed_indexes("0-1")
        .build();
    let cms = [
        ResultFixture::new("a")
            .shard(0)
            .outputs(report("lt/ns/t/tu/shard-0/", &["x"])),
        ResultFixture::new("b")
            .shard(1)
            .outputs(report("lt/ns/t/tu/shard-1/", &["x"])),
    ]
    .map(ResultFixture::build);
    let mut o = obs(Some(&j), None, &[]);
    o.shard_results = &cms;
    let target = target();
    o.outputs = Some(&target);
    let s = desired(&t, &o).status;
    assert_eq!(s.phase, Some(Phase::Completed), "{:?}", s.message);
    let names: Vec<String> = s
        .outputs
        .expect("outputs")
        .files
        .into_iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(names, ["shard-0/x", "shard-1/x"]);
}
