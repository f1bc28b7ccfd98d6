use std::collections::BTreeMap;
use std::sync::Arc;

use crds::{OutputStore, Task};
use k8s_openapi::ByteString;

use crate::fixtures::{StoreFixture, TaskFixture};
use crate::outputs::resolve::{Named, Resolution, credentials, resolve, wanted};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// What `resolve` makes of `task` in a namespace labelled `ns`, with
/// `stores` in the cache: the store's name, "none", or "unavailable: …".
fn outcome(
    task: &Task,
    ns: Option<&BTreeMap<String, String>>,
    stores: &[Arc<OutputStore>],
) -> String {
    let lookup = |name: &str| {
        stores
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(name))
            .cloned()
    };
    match resolve(task, ns, lookup) {
        Resolution::None => "none".into(),
        Resolution::Use(s) => s.metadata.name.clone().unwrap_or_default(),
        Resolution::Unavailable(why) => format!("unavailable: {why}"),
    }
}

#[test]
fn the_task_then_the_namespace_then_default_name_the_store() {
    let plain = labels(&[]);
    let team = labels(&[("longtask.dev/output-store", "team")]);
    let t = Task::test();
    assert_eq!(
        wanted(&t, Some(&plain)),
        Some(("default".into(), Named::Default))
    );
    assert_eq!(wanted(&t, None), Some(("default".into(), Named::Default)));
    assert_eq!(
        wanted(&t, Some(&team)),
        Some(("team".into(), Named::Namespace))
    );
    let named = Task::test().outputs(Some("mine"), None);
    assert_eq!(
        wanted(&named, Some(&team)),
        Some(("mine".into(), Named::Task))
    );
    // Opting out wins over any name.
    let off = Task::test().outputs(Some("mine"), Some(false));
    assert_eq!(wanted(&off, Some(&team)), None);
    let on = Task::test().outputs(None, Some(true));
    assert_eq!(
        wanted(&on, Some(&team)),
        Some(("team".into(), Named::Namespace))
    );
    // An empty label names nothing.
    let empty = labels(&[("longtask.dev/output-store", "")]);
    assert_eq!(
        wanted(&t, Some(&empty)),
        Some(("default".into(), Named::Default))
    );
}

/// (case, Task, namespace labels, stores, outcome).
type Case<'a> = (
    &'a str,
    Task,
    Option<&'a BTreeMap<String, String>>,
    Vec<Arc<OutputStore>>,
    &'a str,
);

#[test]
fn resolution_table() {
    let default = OutputStore::test("default").arc();
    let team_only = OutputStore::test("team").selecting("team", "a").arc();
    let default_team_a = OutputStore::test("default").selecting("team", "a").arc();
    let broken = OutputStore::test("broken").bad_selector().arc();
    let a = labels(&[("team", "a")]);
    let b = labels(&[("team", "b")]);
    let labelled_b = labels(&[("team", "b"), ("longtask.dev/output-store", "team")]);
    let t = Task::test();
    let named = |n: &str| Task::test().outputs(Some(n), None);
    let cases: Vec<Case<'_>> = vec![
        (
            "no store at all: as before",
            t.clone(),
            Some(&a),
            vec![],
            "none",
        ),
        (
            "the default serves all",
            t.clone(),
            Some(&a),
            vec![default.clone()],
            "default",
        ),
        (
            "opted out",
            Task::test().outputs(None, Some(false)),
            Some(&a),
            vec![default.clone()],
            "none",
        ),
        (
            "default not for this namespace: none, quietly",
            t.clone(),
            Some(&b),
            vec![default_team_a.clone()],
            "none",
        ),
        (
            "default selecting, labels unknown: none",
            t.clone(),
            None,
            vec![default_team_a.clone()],
            "none",
        ),
        (
            "default for this namespace",
            t.clone(),
            Some(&a),
            vec![default_team_a.clone()],
            "default",
        ),
        (
            "named and selecting",
            named("team"),
            Some(&a),
            vec![team_only.clone()],
            "team",
        ),
        (
            "named, missing",
            named("nope"),
            Some(&a),
            vec![default.clone()],
            "unavailable: spec.outputs.store names the OutputStore nope, which does not exist",
        ),
        (
            "named, not selecting",
            named("team"),
            Some(&b),
            vec![team_only.clone()],
            "unavailable: spec.outputs.store names the OutputStore team, whose namespaceSelector does not select the namespace ns",
        ),
        (
            "named by the namespace, not selecting",
            t.clone(),
            Some(&labelled_b),
            vec![team_only.clone(), default.clone()],
            "unavailable: the namespace's label longtask.dev/output-store names the OutputStore team, whose namespaceSelector does not select the namespace ns",
        ),
        (
            "named, bad selector",
            named("broken"),
            Some(&a),
            vec![broken.clone()],
            "unavailable: spec.outputs.store names the OutputStore broken, whose namespaceSelector is invalid: failed to parse value as expression: Invalid expression operator",
        ),
    ];
    for (case, task, ns, stores, want) in cases {
        assert_eq!(outcome(&task, ns, &stores), want, "{case}");
    }
}

#[test]
fn credentials_need_both_keys() {
    let data = |pairs: &[(&str, &[u8])]| -> BTreeMap<String, ByteString> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), ByteString(v.to_vec())))
            .collect()
    };
    let read = |d: Option<&BTreeMap<String, ByteString>>| {
        credentials("s3", "s3-keys", "longtask-system", d)
    };
    let full = data(&[
        ("accessKeyId", b"AK"),
        ("secretAccessKey", b"SK\n"),
        ("sessionToken", b""),
    ]);
    let keys = read(Some(&full)).expect("complete");
    assert_eq!(
        (
            keys.access_key_id.as_str(),
            keys.secret_access_key.as_str(),
            keys.session_token.clone()
        ),
        ("AK", "SK", None)
    );
    assert!(!format!("{keys:?}").contains("SK"), "never printed");
    let token = data(&[
        ("accessKeyId", b"AK"),
        ("secretAccessKey", b"SK"),
        ("sessionToken", b"T"),
    ]);
    assert_eq!(
        read(Some(&token))
            .expect("with token")
            .session_token
            .as_deref(),
        Some("T")
    );
    assert_eq!(
        read(None).unwrap_err(),
        "the credentials Secret longtask-system/s3-keys of OutputStore s3 does not exist"
    );
    let half = data(&[("accessKeyId", b"AK")]);
    assert!(
        read(Some(&half))
            .unwrap_err()
            .contains("has no key secretAccessKey")
    );
    let blank = data(&[("accessKeyId", b" "), ("secretAccessKey", b"SK")]);
    assert!(
        read(Some(&blank))
            .unwrap_err()
            .contains("has no key accessKeyId")
    );
    let binary = data(&[("accessKeyId", &[0xff, 0xfe]), ("secretAccessKey", b"SK")]);
    assert!(read(Some(&binary)).unwrap_err().contains("is not UTF-8"));
}
