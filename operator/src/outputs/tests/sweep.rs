use std::collections::BTreeSet;

use crds::Task;

use crate::fixtures::TaskFixture;
use crate::outputs::sweep::{
    Live, Suspects, TaskDir, is_label, is_uid, orphans, parts, rotate, segment, task_dirs,
};

const U1: &str = "0b6e0a58-5c3e-4c8e-9f5e-1a2b3c4d5e6f";
const U2: &str = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f";

fn live() -> Live {
    let tasks = [
        Task::test().named("train").uid(U1),
        Task::test().named("other").in_ns("b").uid(U2),
    ];
    Live::new(tasks.iter())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn only_names_shaped_like_ours_are_looked_at() {
    assert_eq!(segment("lt/", "lt/ns/"), Some("ns"));
    assert_eq!(segment("lt/", "lt/ns/x/"), None);
    assert_eq!(segment("lt/", "other/ns/"), None);
    assert_eq!(segment("lt/", "lt//"), None);
    assert!(is_label("ns-1") && is_label("a"));
    assert!(
        !is_label("Ns")
            && !is_label("-a")
            && !is_label("a-")
            && !is_label("")
            && !is_label(&"a".repeat(64))
    );
    assert!(is_uid(U1));
    assert!(!is_uid("tu") && !is_uid(&U1.to_uppercase()) && !is_uid(&U1.replace('-', "")));
}

#[test]
fn a_task_dir_is_live_while_a_task_has_its_name() {
    let listed = strings(&[
        "lt/ns/train/",
        "lt/ns/gone/",
        "lt/ns/Not_A_Name/",
        "lt/ns/x/y/",
    ]);
    let dirs = task_dirs("lt/ns/", "ns", &listed, &live());
    let got: Vec<(&str, bool)> = dirs.iter().map(|d| (d.name.as_str(), d.live)).collect();
    assert_eq!(got, [("train", true), ("gone", false)]);
}

#[test]
fn uids_no_task_has_are_orphans() {
    let dir = TaskDir {
        prefix: "lt/ns/train/".into(),
        namespace: "ns".into(),
        name: "train".into(),
        live: true,
    };
    let listed = vec![
        format!("lt/ns/train/{U1}/"),
        format!("lt/ns/train/{U2}/"),
        "lt/ns/train/not-a-uid/".to_owned(),
    ];
    assert_eq!(
        orphans(&dir, &listed, &live()),
        [format!("lt/ns/train/{U2}/")]
    );
    // In another namespace the same UID is no Task of this one.
    let elsewhere = TaskDir {
        prefix: "lt/b/train/".into(),
        namespace: "b".into(),
        ..dir
    };
    let listed = vec![format!("lt/b/train/{U1}/")];
    assert_eq!(orphans(&elsewhere, &listed, &live()), listed);
    assert_eq!(
        parts("lt/", &format!("lt/b/train/{U1}/")),
        Some(("b", "train", U1))
    );
    assert_eq!(parts("lt/", "lt/b/train/"), None);
}

/// An orphan is deleted only when two sweeps in a row found it; a store a
/// sweep could not list keeps its suspects.
#[test]
fn orphans_wait_one_sweep() {
    let mut s = Suspects::default();
    let f = |store: &str, p: &str| (store.to_owned(), p.to_owned());
    let found = |v: &[(&str, &str)]| v.iter().map(|(s, p)| f(s, p)).collect::<BTreeSet<_>>();
    let all = |_: &str| true;
    assert!(
        s.confirm(found(&[("a", "1/"), ("a", "2/")]), all)
            .is_empty()
    );
    assert_eq!(s.len(), 2);
    // 2 went meanwhile (its Task's delete), 3 is new.
    assert_eq!(
        s.confirm(found(&[("a", "1/"), ("a", "3/")]), all),
        [f("a", "1/")]
    );
    assert_eq!(s.len(), 1, "3 waits");
    // Store b could not be listed: its suspect stays.
    s.keep(f("b", "1/"));
    let only_a = |store: &str| store == "a";
    assert_eq!(s.confirm(found(&[("a", "3/")]), only_a), [f("a", "3/")]);
    assert_eq!(s.len(), 1, "b's still waits");
    // The same prefix in two stores is two prefixes.
    assert_eq!(
        s.confirm(found(&[("b", "1/"), ("a", "1/")]), all),
        [f("b", "1/")]
    );
    assert_eq!(s.len(), 1);
}

#[test]
fn live_dirs_are_listed_in_turn() {
    let items = [1, 2, 3, 4, 5];
    assert_eq!(rotate(&items, 0, 2), (vec![1, 2], 2));
    assert_eq!(rotate(&items, 4, 2), (vec![5, 1], 1));
    assert_eq!(rotate(&items, 7, 9), (vec![3, 4, 5, 1, 2], 2));
    assert_eq!(rotate::<i32>(&[], 3, 2), (vec![], 0));
    assert_eq!(rotate(&items, 1, 0), (vec![], 0));
}
