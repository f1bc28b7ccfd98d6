use std::collections::BTreeMap;
use std::time::Duration;

use crds::{Phase, Task, TaskStatus};

use super::*;
use crate::fixtures::{TaskFixture, at};

/// A Task that finished at `s` (created at `s - 10`).
fn finished(name: &str, s: i64) -> Task {
    Task::test()
        .named(name)
        .created_at(s - 10)
        .status(TaskStatus {
            phase: Some(Phase::Completed),
            completed_at: Some(at(s)),
            ..TaskStatus::default()
        })
}

fn ns(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn policy_table() {
    let flags = Defaults {
        delete_after: Some(600),
        keep: Some(5),
    };
    let cases = [
        (None, Defaults::default(), Policy::default()),
        (
            None,
            flags,
            Policy {
                delete_after: Some(600),
                keep: Some(5),
            },
        ),
        (
            Some(ns(&[
                ("longtask.dev/delete-finished-after", "30"),
                ("longtask.dev/keep-finished", " 2 "),
            ])),
            flags,
            Policy {
                delete_after: Some(30),
                keep: Some(2),
            },
        ),
        // Not a number: the flag applies.
        (
            Some(ns(&[
                ("longtask.dev/delete-finished-after", "1h"),
                ("longtask.dev/keep-finished", "-1"),
            ])),
            flags,
            Policy {
                delete_after: Some(600),
                keep: Some(5),
            },
        ),
        (
            Some(ns(&[("longtask.dev/keep-finished", "0")])),
            Defaults::default(),
            Policy {
                delete_after: None,
                keep: Some(0),
            },
        ),
    ];
    for (i, (annotations, defaults, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            policy("team-a", annotations.as_ref(), defaults),
            want,
            "case {i}"
        );
    }
    // The operator deletes nothing in the system namespaces, whatever is set.
    let set = ns(&[("longtask.dev/keep-finished", "0")]);
    for system in ["kube-system", "kube-public", "kube-node-lease"] {
        assert_eq!(
            policy(system, Some(&set), flags),
            Policy::default(),
            "{system}"
        );
    }
}

#[test]
fn due_table() {
    let none = Policy::default();
    let ns_60 = Policy {
        delete_after: Some(60),
        keep: None,
    };
    let running = Task::test().running().delete_after(0);
    let deleting = finished("d", 100).delete_after(0).with(|t| {
        t.metadata.deletion_timestamp = Some(at(150));
    });
    let cases = [
        (finished("a", 100), none, 200, Due::Never),
        (finished("a", 100).delete_after(0), none, 100, Due::Now),
        (
            finished("a", 100).delete_after(30),
            none,
            110,
            Due::In(Duration::from_secs(20)),
        ),
        (finished("a", 100).delete_after(30), none, 130, Due::Now),
        // The Task's own time wins over the namespace's.
        (
            finished("a", 100).delete_after(300),
            ns_60,
            200,
            Due::In(Duration::from_secs(200)),
        ),
        (
            finished("a", 100),
            ns_60,
            159,
            Due::In(Duration::from_secs(1)),
        ),
        (finished("a", 100), ns_60, 160, Due::Now),
        (running, ns_60, 1000, Due::Never),
        (deleting, none, 1000, Due::Never),
    ];
    for (i, (task, policy, now, want)) in cases.into_iter().enumerate() {
        assert_eq!(due(&task, policy, &at(now)), want, "case {i}");
    }
}

#[test]
fn keep_newest_by_finish_time() {
    let tasks = [
        finished("old", 100),
        finished("new", 300),
        finished("mid", 200),
        // Same finish time as "mid", created later: newer.
        finished("mid2", 200).created_at(195),
        Task::test().named("running").running(),
    ];
    let names = |keep| -> Vec<String> {
        excess(tasks.iter(), keep)
            .iter()
            .map(|t| t.metadata.name.clone().unwrap_or_default())
            .collect()
    };
    assert_eq!(names(0), ["new", "mid2", "mid", "old"]);
    assert_eq!(names(2), ["mid", "old"]);
    assert_eq!(names(4), Vec::<String>::new());
    assert_eq!(names(10), Vec::<String>::new());
}
