use std::collections::BTreeMap;

use crds::names::annotations;
use crds::{Phase, Task};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::fixtures::{TaskFixture, at, running};
use crate::queue::*;

fn e<'a>(ns: &'a str, name: &'a str, prio: i32, created: &'a Time, holds: bool) -> Entry<'a> {
    Entry {
        namespace: ns,
        name,
        uid: name,
        priority: prio,
        created: Some(created),
        holds,
    }
}

fn limits(global: Option<u32>, ns: &[(&str, u32)]) -> Limits {
    Limits {
        global,
        namespaces: ns.iter().map(|(n, l)| ((*n).to_owned(), *l)).collect(),
    }
}

fn waits(p: &Plan, uid: &str) -> (usize, usize, Scope) {
    match &p.verdicts[uid] {
        Verdict::Wait(w) => (w.position, w.of, w.scope),
        v => panic!("{uid}: {v:?}"),
    }
}

#[test]
fn no_cap_starts_everyone_in_order() {
    let (t1, t2) = (at(1), at(2));
    let entries = [e("a", "y", 0, &t2, false), e("a", "x", 0, &t1, false)];
    let p = plan(&entries, &Limits::default());
    assert_eq!(p.start, vec!["x", "y"]);
}

#[test]
fn global_cap_orders_by_age_then_name_and_gives_positions() {
    let (t1, t2, t3) = (at(1), at(2), at(3));
    let entries = [
        e("a", "run", 0, &t1, true),
        e("a", "c", 0, &t3, false),
        e("b", "b2", 0, &t2, false),
        e("a", "b1", 0, &t2, false),
        e("a", "d", 0, &t3, false),
    ];
    let p = plan(&entries, &limits(Some(3), &[]));
    assert_eq!(p.verdicts["run"], Verdict::Active);
    // Same second: the name breaks the tie.
    assert_eq!(p.start, vec!["b1", "b2"]);
    assert_eq!(waits(&p, "c"), (1, 2, Scope::Global));
    assert_eq!(waits(&p, "d"), (2, 2, Scope::Global));
    let Verdict::Wait(w) = &p.verdicts["d"] else {
        unreachable!()
    };
    assert_eq!(
        w.message(),
        "position 2 in the queue: at most 3 Tasks may be active at once (--max-active-tasks)"
    );
}

#[test]
fn priority_goes_first() {
    let (t1, t2, t3) = (at(1), at(2), at(3));
    let entries = [
        e("a", "old", 0, &t1, false),
        e("a", "urgent", 5, &t3, false),
        e("a", "mid", 1, &t2, false),
        e("a", "low", -1, &t1, false),
    ];
    let p = plan(&entries, &limits(Some(1), &[]));
    assert_eq!(p.start, vec!["urgent"]);
    assert_eq!(waits(&p, "mid"), (1, 3, Scope::Global));
    assert_eq!(waits(&p, "old"), (2, 3, Scope::Global));
    assert_eq!(waits(&p, "low"), (3, 3, Scope::Global));
}

#[test]
fn namespace_cap_blocks_only_its_namespace() {
    let t = at(1);
    let (t2, t3) = (at(2), at(3));
    let entries = [
        e("a", "a0", 0, &t, true),
        e("a", "a1", 0, &t2, false),
        e("a", "a2", 0, &t3, false),
        e("b", "b1", 0, &t3, false),
    ];
    let p = plan(&entries, &limits(None, &[("a", 1)]));
    assert_eq!(p.start, vec!["b1"]);
    assert_eq!(waits(&p, "a1"), (1, 2, Scope::Namespace));
    assert_eq!(waits(&p, "a2"), (2, 2, Scope::Namespace));
    let Verdict::Wait(w) = &p.verdicts["a2"] else {
        unreachable!()
    };
    assert!(
        w.message().contains("Tasks of namespace a"),
        "{}",
        w.message()
    );
}

#[test]
fn both_caps_a_namespace_blocked_task_does_not_take_a_global_slot() {
    let (t1, t2, t3) = (at(1), at(2), at(3));
    let entries = [
        e("a", "a0", 0, &t1, true),
        e("a", "a1", 0, &t2, false),
        e("b", "b1", 0, &t3, false),
        e("b", "b2", 0, &t3, false),
    ];
    let p = plan(&entries, &limits(Some(2), &[("a", 1)]));
    assert_eq!(p.start, vec!["b1"]);
    assert_eq!(waits(&p, "a1"), (1, 1, Scope::Namespace));
    assert_eq!(waits(&p, "b2"), (1, 1, Scope::Global));
}

#[test]
fn a_zero_cap_holds_everything_and_full_caps_start_nothing() {
    let t = at(1);
    let entries = [e("a", "x", 0, &t, false), e("a", "y", 0, &t, true)];
    assert!(plan(&entries, &limits(None, &[("a", 0)])).start.is_empty());
    assert!(plan(&entries, &limits(Some(1), &[])).start.is_empty());
}

#[test]
fn namespace_annotation_parses() {
    let a = |v: &str| BTreeMap::from([(annotations::MAX_ACTIVE_TASKS.to_owned(), v.to_owned())]);
    assert_eq!(namespace_limit(None), Ok(None));
    assert_eq!(namespace_limit(Some(&BTreeMap::new())), Ok(None));
    assert_eq!(namespace_limit(Some(&a(" 4 "))), Ok(Some(4)));
    assert!(namespace_limit(Some(&a("-1"))).is_err());
    assert!(namespace_limit(Some(&a("many"))).is_err());
}

#[test]
fn entries_hold_by_status_or_live_job_and_skip_terminal_tasks() {
    let waiting = Task::test();
    assert!(!entry(&waiting, false).unwrap().holds);
    assert!(entry(&waiting, true).unwrap().holds);
    assert!(entry(&Task::test().running(), false).unwrap().holds);
    let mut done = running();
    done.phase = Some(Phase::Completed);
    assert!(entry(&Task::test().status(done), true).is_none());
}

#[test]
fn entries_carry_the_tasks_place_in_the_queue() {
    let t = Task::test()
        .in_ns("a")
        .named("x")
        .uid("ux")
        .priority(5)
        .created_at(7);
    let e = entry(&t, false).unwrap();
    assert_eq!(
        (e.namespace, e.name, e.uid, e.priority, e.created, e.holds),
        ("a", "x", "ux", 5, Some(&at(7)), false)
    );
}

#[test]
fn a_cancelled_task_wants_a_slot_only_while_it_holds_one() {
    let t = Task::test().cancelled();
    assert!(entry(&t, false).is_none());
    assert!(entry(&t, true).unwrap().holds);
    assert!(entry(&t.running(), false).unwrap().holds);
}
