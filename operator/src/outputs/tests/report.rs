use crds::conditions::Reason;
use crds::outputs::{OutputReport, UploadedFile};

use crate::outputs::report::{MAX_STATUS_FILES_BYTES, Outcome, Raw, Target, read};

const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn target() -> Target {
    Target {
        store: "s3".into(),
        bucket: "outs".into(),
        prefix: "lt/ns/t/tu/".into(),
    }
}

fn file(name: &str, key: &str, size: u64) -> UploadedFile {
    UploadedFile {
        name: name.into(),
        key: key.into(),
        size,
        sha256: SHA.into(),
    }
}

fn json(files: Vec<UploadedFile>) -> String {
    serde_json::to_string(&OutputReport { files, error: None }).unwrap()
}

fn one(json: &str) -> Option<Outcome> {
    read(&[Raw { shard: None, json }], Some(&target()))
}

fn failure(o: Option<Outcome>) -> (Reason, String) {
    match o {
        Some(Outcome::Failed(r, m)) => (r, m),
        other => panic!("not a failure: {other:?}"),
    }
}

#[test]
fn a_report_becomes_the_status_listing() {
    let report = json(vec![
        file("plots/b.png", "lt/ns/t/tu/plots/b.png", 1536),
        file("a.bin", "lt/ns/t/tu/a.bin", 2 * 1024 * 1024 * 1024),
    ]);
    let Some(Outcome::Listed(l)) = one(&report) else {
        panic!("not listed")
    };
    let s = l.status;
    assert_eq!(
        (s.store.as_str(), s.location.as_str()),
        ("s3", "s3://outs/lt/ns/t/tu/")
    );
    assert_eq!(
        (s.count, s.total_bytes, s.size.as_str()),
        (2, 2 * 1024 * 1024 * 1024 + 1536, "2.0Gi")
    );
    let names: Vec<&str> = s.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["a.bin", "plots/b.png"], "by name");
    assert_eq!(s.files[1].url, "s3://outs/lt/ns/t/tu/plots/b.png");
    assert_eq!(s.files[1].digest, format!("sha256:{SHA}"));
    assert_eq!(s.files[1].size, 1536);
    assert_eq!(
        s.download_secret, None,
        "set once the Secret holds the URLs"
    );
    assert_eq!(l.names, ["a.bin", "plots/b.png"]);
    // No files at all is a listing too (the store was used, nothing left).
    let Some(Outcome::Listed(empty)) = one(&json(vec![])) else {
        panic!("not listed")
    };
    assert_eq!((empty.status.count, empty.status.size.as_str()), (0, "0"));
}

#[test]
fn no_report_is_no_listing() {
    assert_eq!(read(&[], Some(&target())), None);
    assert_eq!(read(&[], None), None);
}

/// A forged or broken report is refused whole: nothing of it is shown.
#[test]
fn reports_that_reach_outside_the_prefix_are_refused() {
    let cases = [
        (
            json(vec![file("x", "lt/ns/other/uid/x", 1)]),
            "outside the Task's prefix",
        ),
        (
            json(vec![file("x", "lt/ns/t/tu/y", 1)]),
            "outside the Task's prefix",
        ),
        (json(vec![file("../x", "lt/ns/t/tu/../x", 1)]), "component"),
        (
            json(vec![file("a\u{7}", "lt/ns/t/tu/a\u{7}", 1)]),
            "control character",
        ),
        (
            json(vec![
                file("x", "lt/ns/t/tu/x", 1),
                file("x", "lt/ns/t/tu/x", 1),
            ]),
            "listed twice",
        ),
        (
            json(vec![UploadedFile {
                sha256: "XYZ".into(),
                ..file("x", "lt/ns/t/tu/x", 1)
            }]),
            "no valid sha256",
        ),
        (
            json(vec![file("x", "lt/ns/t/tu/x", u64::MAX)]),
            "more than an object may be",
        ),
        ("{not json".to_owned(), "not valid"),
    ];
    for (report, want) in cases {
        let (reason, message) = failure(one(&report));
        assert_eq!(reason, Reason::OutputUploadFailed, "{report}");
        assert!(
            message.starts_with("the outputs report was refused: "),
            "{message}"
        );
        assert!(message.contains(want), "{report}: {message}");
    }
    // A report where no store was used: refused too.
    let r = read(
        &[Raw {
            shard: None,
            json: &json(vec![]),
        }],
        None,
    );
    assert!(failure(r).1.contains("has no output store"));
}

#[test]
fn the_workers_failure_is_the_tasks() {
    let with = |reason: &str| {
        serde_json::json!({
            "files": [{"name": "a", "key": "lt/ns/t/tu/a", "size": 1, "sha256": SHA}],
            "error": {"reason": reason, "message": "model.bin: the store answered 403"},
        })
        .to_string()
    };
    let (r, m) = failure(one(&with("OutputAccessDenied")));
    assert_eq!(r, Reason::OutputAccessDenied);
    assert_eq!(
        m,
        "uploading the outputs failed: model.bin: the store answered 403"
    );
    // Reasons that are not the worker's to give become OutputUploadFailed.
    for other in ["Succeeded", "OutputStoreUnavailable", "Whatever", ""] {
        assert_eq!(
            failure(one(&with(other))).0,
            Reason::OutputUploadFailed,
            "{other}"
        );
    }
}

#[test]
fn shards_list_their_files_below_their_own_prefix() {
    let s0 = json(vec![file("a", "lt/ns/t/tu/shard-0/a", 1)]);
    let s1 = json(vec![file("a", "lt/ns/t/tu/shard-1/a", 2)]);
    let raws = [
        Raw {
            shard: Some(1),
            json: &s1,
        },
        Raw {
            shard: Some(0),
            json: &s0,
        },
    ];
    let Some(Outcome::Listed(l)) = read(&raws, Some(&target())) else {
        panic!("not listed")
    };
    assert_eq!(l.names, ["shard-0/a", "shard-1/a"]);
    assert_eq!(l.status.files[1].url, "s3://outs/lt/ns/t/tu/shard-1/a");
    assert_eq!(l.status.total_bytes, 3);
    // A shard writing into another's prefix is refused.
    let thief = json(vec![file("a", "lt/ns/t/tu/shard-0/a", 1)]);
    let raws = [Raw {
        shard: Some(1),
        json: &thief,
    }];
    assert!(
        failure(read(&raws, Some(&target())))
            .1
            .contains("outside the Task's prefix")
    );
    // The first shard that failed names itself.
    let failed = r#"{"files":[],"error":{"reason":"OutputChanged","message":"x grew"}}"#;
    let raws = [
        Raw {
            shard: Some(0),
            json: &s0,
        },
        Raw {
            shard: Some(2),
            json: failed,
        },
    ];
    let (r, m) = failure(read(&raws, Some(&target())));
    assert_eq!(r, Reason::OutputChanged);
    assert!(m.contains("shard 2: x grew"), "{m}");
}

#[test]
fn the_status_lists_what_fits_and_counts_everything() {
    let long = "n".repeat(500);
    let files: Vec<UploadedFile> = (0..2000)
        .map(|i| {
            let name = format!("{long}{i:04}");
            file(&name, &format!("lt/ns/t/tu/{name}"), 1)
        })
        .collect();
    let Some(Outcome::Listed(l)) = one(&json(files)) else {
        panic!("not listed")
    };
    assert_eq!((l.status.count, l.status.total_bytes), (2000, 2000));
    assert_eq!(l.names.len(), 2000, "the download Secret names them all");
    let shown = serde_json::to_string(&l.status.files).unwrap().len();
    assert!(shown <= MAX_STATUS_FILES_BYTES, "{shown}");
    assert!(
        l.status.files.len() < 2000 && l.status.files.len() > 100,
        "{}",
        l.status.files.len()
    );
}

#[test]
fn targets_read_back_from_their_location() {
    let t = target();
    assert_eq!(Target::parse("s3", &t.location()), Some(t));
    for bad in ["outs/lt/", "s3://outs", "s3:///lt/", "s3://outs/"] {
        assert_eq!(Target::parse("s3", bad), None, "{bad}");
    }
}
