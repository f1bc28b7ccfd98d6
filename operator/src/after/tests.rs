use std::collections::HashMap;

use crds::after::{UpstreamCondition, UpstreamSeen};
use crds::{Phase, Reason, Task, TaskStatus};

use super::*;
use crate::fixtures::{TaskFixture, at};

/// The Task cache of one namespace: each Task by name, its UID its name.
fn cache(tasks: Vec<Task>) -> HashMap<String, Arc<Task>> {
    tasks
        .into_iter()
        .map(|t| (t.metadata.name.clone().unwrap_or_default(), Arc::new(t)))
        .collect()
}

fn up(name: &str) -> Task {
    Task::test().named(name).uid(name)
}

fn gate(task: &Task, tasks: Vec<Task>, now: i64) -> Gate {
    let c = cache(tasks);
    decide(task, &|n: &str| c.get(n).cloned(), at(now).0)
}

fn seen(pairs: &[(&str, &str)]) -> Vec<UpstreamSeen> {
    pairs
        .iter()
        .map(|(n, u)| UpstreamSeen {
            name: (*n).into(),
            uid: (*u).into(),
        })
        .collect()
}

/// The downstream `d`, created at 0, which recorded `recorded` upstreams.
fn down(after: &[&str], recorded: &[(&str, &str)]) -> Task {
    Task::test()
        .named("d")
        .uid("d")
        .created_at(0)
        .after(after)
        .status(TaskStatus {
            phase: Some(Phase::Pending),
            upstreams: seen(recorded),
            ..TaskStatus::default()
        })
}

fn fail_reason(g: &Gate) -> Option<Reason> {
    match g {
        Gate::Fail(f) => Some(f.reason),
        _ => None,
    }
}

#[test]
fn no_after_goes_at_once() {
    assert_eq!(gate(&Task::test(), vec![], 0), Gate::Go);
}

#[test]
fn waits_until_every_upstream_succeeded() {
    let d = Task::test().named("d").created_at(0).after(&["a", "b"]);
    let a_done = up("a").phase(Phase::Completed, Some(Reason::Succeeded));
    let b_running = up("b").phase(Phase::Running, None);
    let Gate::Wait(w) = gate(&d, vec![a_done.clone(), b_running], 10) else {
        panic!("not waiting");
    };
    assert_eq!(
        w.message,
        "waiting for upstream b to succeed (one of 2 in spec.after)"
    );
    // Both are recorded with their UIDs, the first time they are seen.
    assert_eq!(w.seen, seen(&[("a", "a"), ("b", "b")]));
    assert_eq!(w.wake_in, None, "no timeout: wait for ever");
    let b_done = up("b").phase(Phase::Completed, None);
    assert_eq!(gate(&d, vec![a_done, b_done], 10), Gate::Go);
}

#[test]
fn the_message_names_the_first_unmet_only() {
    // It does not change as later upstreams finish: few status writes.
    let d = Task::test().named("d").after(&["a", "b", "c"]);
    let run = |n: &str| up(n).phase(Phase::Running, None);
    let done = |n: &str| up(n).phase(Phase::Completed, None);
    let msg = |tasks| match gate(&d, tasks, 0) {
        Gate::Wait(w) => w.message,
        g => panic!("{g:?}"),
    };
    let first = msg(vec![run("a"), run("b"), run("c")]);
    assert_eq!(first, msg(vec![run("a"), done("b"), run("c")]));
    assert!(first.contains("upstream a"), "{first}");
}

#[test]
fn a_failed_upstream_fails_at_once_under_succeeded_only() {
    let failed = up("a").phase(Phase::Failed, Some(Reason::BackoffLimitExceeded));
    let d = Task::test().named("d").after(&["a"]);
    let Gate::Fail(f) = gate(&d, vec![failed.clone()], 0) else {
        panic!("not failed");
    };
    assert_eq!(f.reason, Reason::UpstreamFailed);
    assert!(
        f.message
            .contains("upstream a failed (BackoffLimitExceeded)")
    );
    let finished = d.with(|t| t.spec.after[0].condition = UpstreamCondition::Finished);
    assert_eq!(gate(&finished, vec![failed], 0), Gate::Go);
}

#[test]
fn a_missing_upstream_is_waited_for_until_the_start_timeout() {
    let d = Task::test()
        .named("d")
        .created_at(100)
        .after(&["later"])
        .start_timeout(60);
    let Gate::Wait(w) = gate(&d, vec![], 130) else {
        panic!("not waiting");
    };
    assert_eq!(w.message, "waiting for upstream later to be created");
    assert_eq!(w.wake_in, Some(Duration::from_secs(30)));
    assert!(w.seen.is_empty());
    assert_eq!(
        fail_reason(&gate(&d, vec![], 160)),
        Some(Reason::UpstreamMissing)
    );
    // Created in time: the timeout no longer applies.
    let running = up("later").phase(Phase::Running, None);
    let Gate::Wait(w) = gate(&d, vec![running], 500) else {
        panic!("not waiting");
    };
    assert_eq!(w.wake_in, None);
    // Without a timeout, a missing upstream is waited for for ever.
    let patient = Task::test().named("d").created_at(0).after(&["later"]);
    assert!(matches!(gate(&patient, vec![], 1_000_000), Gate::Wait(_)));
}

#[test]
fn an_upstream_seen_then_gone_or_replaced_fails() {
    let d = down(&["a"], &[("a", "a")]);
    assert_eq!(
        fail_reason(&gate(&d, vec![], 0)),
        Some(Reason::UpstreamDeleted)
    );
    let again = up("a").uid("a2").phase(Phase::Completed, None);
    let Gate::Fail(f) = gate(&d, vec![again], 0) else {
        panic!("not failed");
    };
    assert_eq!(f.reason, Reason::UpstreamDeleted);
    assert!(f.message.contains("UID a2"), "{}", f.message);
    // The same one, still there: no failure.
    let same = up("a").phase(Phase::Completed, None);
    assert_eq!(gate(&d, vec![same], 0), Gate::Go);
}

#[test]
fn a_cycle_fails_every_task_in_it() {
    let a = down(&["b"], &[]).named("a").uid("a");
    let b = down(&["c"], &[]).named("b").uid("b");
    let c = down(&["a"], &[]).named("c").uid("c");
    let all = vec![a.clone(), b.clone(), c.clone()];
    let Gate::Fail(f) = gate(&a, all.clone(), 0) else {
        panic!("no cycle");
    };
    assert_eq!(f.reason, Reason::DependencyCycle);
    assert_eq!(f.message.rsplit(": ").next(), Some("a -> b -> c -> a"));
    // Once `a` failed for it, `b` and `c` fail for the cycle too, not
    // because their upstream failed.
    let a_failed = a.phase(Phase::Failed, Some(Reason::DependencyCycle));
    for t in [&b, &c] {
        let tasks = vec![a_failed.clone(), b.clone(), c.clone()];
        assert_eq!(
            fail_reason(&gate(t, tasks, 0)),
            Some(Reason::DependencyCycle)
        );
    }
}

#[test]
fn a_task_waiting_behind_a_cycle_is_not_in_it() {
    let a = down(&["b"], &[]).named("a").uid("a");
    let b = down(&["a"], &[]).named("b").uid("b");
    let behind = down(&["a"], &[]).named("z").uid("z");
    let g = gate(&behind, vec![a.clone(), b.clone(), behind.clone()], 0);
    assert!(matches!(g, Gate::Wait(_)), "{g:?}");
    // Its upstream's failure ends it instead.
    let a_failed = a.phase(Phase::Failed, Some(Reason::DependencyCycle));
    assert_eq!(
        fail_reason(&gate(&behind, vec![a_failed, b], 0)),
        Some(Reason::UpstreamFailed)
    );
}

#[test]
fn a_started_task_breaks_no_cycle() {
    // `b` waits for `a`, which already started (its `after` is done with).
    let a = Task::test().named("a").uid("a").after(&["b"]).running();
    let b = down(&["a"], &[]).named("b").uid("b");
    let g = gate(&b, vec![a, b.clone()], 0);
    assert!(matches!(g, Gate::Wait(_)), "{g:?}");
}

#[test]
fn a_sharded_upstream_is_refused_by_name() {
    let d = Task::test().named("d").after(&["s"]);
    let s = up("s").sharded(4).phase(Phase::Running, None);
    let Gate::Fail(f) = gate(&d, vec![s], 0) else {
        panic!("not refused");
    };
    assert_eq!(f.reason, Reason::InvalidSpec);
    assert!(f.message.contains("s is a sharded Task"), "{}", f.message);
}

#[test]
fn a_long_chain_is_searched_within_bounds() {
    // A chain of 20,000 waiting Tasks and no cycle: the search stops.
    let n = 20_000;
    let tasks: Vec<Task> = (0..n)
        .map(|i| {
            let next = format!("t{}", i + 1);
            down(&[next.as_str()], &[])
                .named(&format!("t{i}"))
                .uid(&format!("t{i}"))
        })
        .collect();
    let c = cache(tasks.clone());
    assert_eq!(cycle(&tasks[0], &|n: &str| c.get(n).cloned()), None);
}
