//! The CronTask plan with the clock handed in: each concurrency policy,
//! catch-up after downtime, suspension, history limits, stopAfterFailures,
//! edits, a status write that was lost; runs named after a time to come,
//! and the operator's bounds.

use crds::cron::{ConcurrencyPolicy, CronTask, CronTaskSpec, CronTaskStatus, TaskTemplate};
use crds::{Phase, TaskSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use k8s_openapi::jiff::SignedDuration;

use super::decide::{Limits, Run, manual_run_name, plan, plan_with, run_name};

fn ts(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

/// A CronTask `nightly` made at 00:00:30 running every minute.
fn cron(change: impl FnOnce(&mut CronTaskSpec)) -> CronTask {
    let mut spec = CronTaskSpec {
        schedule: Some("* * * * *".to_owned()),
        schedules: Vec::new(),
        time_zone: None,
        concurrency_policy: ConcurrencyPolicy::Allow,
        catch_up_seconds: None,
        suspend: false,
        stop_after_failures: None,
        successful_tasks_history_limit: None,
        failed_tasks_history_limit: None,
        max_active_runs: None,
        task_template: TaskTemplate {
            metadata: None,
            spec: serde_json::from_value::<TaskSpec>(serde_json::json!({"command": ["true"]}))
                .expect("spec"),
        },
    };
    change(&mut spec);
    let mut c = CronTask::new("nightly", spec);
    c.metadata = ObjectMeta {
        name: Some("nightly".to_owned()),
        namespace: Some("ns".to_owned()),
        uid: Some("cron-uid".to_owned()),
        generation: Some(1),
        creation_timestamp: Some(Time(ts("2026-01-01T00:00:30Z"))),
        ..ObjectMeta::default()
    };
    c
}

fn with_status(mut c: CronTask, change: impl FnOnce(&mut CronTaskStatus)) -> CronTask {
    let mut s = c.status.take().unwrap_or_default();
    s.schedule_in_effect = Some(super::decide::schedule_key(&c));
    change(&mut s);
    c.status = Some(s);
    c
}

/// The condition `type_` of a plan's status; the plan must set it.
fn condition<'a>(p: &'a super::decide::Plan, type_: &str) -> &'a Condition {
    p.status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition: {:?}", p.status))
}

fn run(at: &str, finished: Option<Phase>) -> Run {
    let t = ts(at);
    Run {
        name: run_name("nightly", t),
        uid: format!("uid-{}", t.as_second()),
        scheduled: t,
        manual: false,
        finished,
        cancelling: false,
    }
}

#[test]
fn a_scheduled_time_creates_its_run_and_waits_for_the_next() {
    let c = cron(|_| {});
    let p = plan(&c, &[], ts("2026-01-01T00:01:00.2Z"));
    assert_eq!(p.create, [ts("2026-01-01T00:01:00Z")]);
    assert_eq!(
        p.status.last_schedule_time,
        Some(Time(ts("2026-01-01T00:01:00Z")))
    );
    assert_eq!(p.status.active, ["nightly-1767225660"]);
    assert_eq!(p.requeue, Some(std::time::Duration::from_millis(59_800)));
    assert_eq!(p.status.next_schedule_times[0], "2026-01-01T00:02:00Z");
    // Before the first time: nothing yet.
    let p = plan(&c, &[], ts("2026-01-01T00:00:59Z"));
    assert!(p.create.is_empty());
    assert_eq!(p.requeue, Some(std::time::Duration::from_secs(1)));
}

#[test]
fn a_lost_status_write_does_not_make_a_second_run() {
    let c = cron(|_| {});
    let made = run("2026-01-01T00:01:00Z", None);
    let p = plan(&c, &[made], ts("2026-01-01T00:01:01Z"));
    assert!(p.create.is_empty(), "{p:?}");
    assert_eq!(
        p.status.last_schedule_time,
        Some(Time(ts("2026-01-01T00:01:00Z")))
    );
}

#[test]
fn concurrency_policies() {
    let active = run("2026-01-01T00:01:00Z", None);
    let at = ts("2026-01-01T00:02:00Z");
    let now = ts("2026-01-01T00:02:00.1Z");
    let last =
        |s: &mut CronTaskStatus| s.last_schedule_time = Some(Time(ts("2026-01-01T00:01:00Z")));
    let allow = plan(
        &with_status(cron(|_| {}), last),
        std::slice::from_ref(&active),
        now,
    );
    assert_eq!(allow.create, [at]);
    assert_eq!(allow.status.active_count, 2);

    let forbid = with_status(
        cron(|s| s.concurrency_policy = ConcurrencyPolicy::Forbid),
        last,
    );
    let p = plan(&forbid, std::slice::from_ref(&active), now);
    assert!(p.create.is_empty());
    assert_eq!(p.status.skipped, 1);
    assert_eq!(p.status.last_schedule_time, Some(Time(at)));
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == "Skipped" && n.message.contains(&active.name))
    );

    let replace = with_status(
        cron(|s| s.concurrency_policy = ConcurrencyPolicy::Replace),
        last,
    );
    let p = plan(&replace, std::slice::from_ref(&active), now);
    assert_eq!(p.cancel, std::slice::from_ref(&active.name));
    assert_eq!(p.create, [at]);

    let buffer = with_status(
        cron(|s| s.concurrency_policy = ConcurrencyPolicy::BufferOne),
        last,
    );
    let p = plan(&buffer, std::slice::from_ref(&active), now);
    assert!(p.create.is_empty());
    assert_eq!(p.status.buffered, Some(Time(at)));
    // The next time while one waits: skipped.
    let mut later = buffer.clone();
    later.status = Some(p.status.clone());
    let p2 = plan(
        &later,
        std::slice::from_ref(&active),
        ts("2026-01-01T00:03:00.1Z"),
    );
    assert!(p2.create.is_empty());
    assert_eq!(p2.status.skipped, 1);
    assert_eq!(p2.status.buffered, Some(Time(at)));
    // The active run ends: the buffered one starts.
    let mut ended = later.clone();
    ended.status = Some(p2.status.clone());
    let done = run("2026-01-01T00:01:00Z", Some(Phase::Completed));
    let p3 = plan(&ended, &[done], ts("2026-01-01T00:03:10Z"));
    assert_eq!(p3.create, [at]);
    assert_eq!(p3.status.buffered, None);
}

#[test]
fn after_downtime_only_the_latest_time_within_the_window_runs() {
    let c = with_status(cron(|s| s.catch_up_seconds = Some(30)), |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T00:01:00Z")));
    });
    // Down over 00:02, 00:03 and 00:04; back at 00:04:10.
    let p = plan(&c, &[], ts("2026-01-01T00:04:10Z"));
    assert_eq!(p.create, [ts("2026-01-01T00:04:00Z")]);
    assert_eq!(p.status.missed, 2);
    assert!(p.notes.iter().any(|n| n.reason == "Missed" && n.warning));
    // Back at 00:04:40: 00:04 is 40 s late, past the window: none runs.
    let p = plan(&c, &[], ts("2026-01-01T00:04:40Z"));
    assert!(p.create.is_empty());
    assert_eq!(p.status.missed, 3);
    assert_eq!(
        p.status.last_schedule_time,
        Some(Time(ts("2026-01-01T00:04:00Z")))
    );
}

#[test]
fn suspended_nothing_starts_and_resumed_the_latest_catches_up() {
    let at = |s: &mut CronTaskStatus| s.last_schedule_time = Some(Time(ts("2026-01-01T00:01:00Z")));
    let suspended = with_status(cron(|s| s.suspend = true), at);
    let p = plan(&suspended, &[], ts("2026-01-01T00:05:30Z"));
    assert!(p.create.is_empty());
    assert_eq!(p.requeue, None);
    assert!(p.status.next_schedule_times.is_empty());
    assert_eq!(
        p.status.last_schedule_time,
        Some(Time(ts("2026-01-01T00:01:00Z")))
    );
    let suspended_cond = p.status.conditions.iter().find(|c| c.type_ == "Suspended");
    assert_eq!(suspended_cond.map(|c| c.status.as_str()), Some("True"));
    let resumed = with_status(cron(|_| {}), at);
    let p = plan(&resumed, &[], ts("2026-01-01T00:05:30Z"));
    assert_eq!(p.create, [ts("2026-01-01T00:05:00Z")]);
    assert_eq!(p.status.missed, 3);
}

#[test]
fn history_limits_delete_the_oldest_finished_runs() {
    let c = with_status(cron(|_| {}), |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T00:06:00Z")));
    });
    let runs = [
        run("2026-01-01T00:01:00Z", Some(Phase::Completed)),
        run("2026-01-01T00:02:00Z", Some(Phase::Failed)),
        run("2026-01-01T00:03:00Z", Some(Phase::Completed)),
        run("2026-01-01T00:04:00Z", Some(Phase::Completed)),
        run("2026-01-01T00:05:00Z", Some(Phase::Failed)),
        run("2026-01-01T00:06:00Z", Some(Phase::Completed)),
    ];
    let p = plan(&c, &runs, ts("2026-01-01T00:06:30Z"));
    let deleted: Vec<&str> = p.delete.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(deleted, [runs[0].name.as_str(), runs[1].name.as_str()]);
    assert_eq!(
        p.status.last_successful_time,
        Some(Time(ts("2026-01-01T00:06:00Z")))
    );
}

#[test]
fn stop_after_failures_suspends() {
    let c = with_status(cron(|s| s.stop_after_failures = Some(2)), |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T00:02:00Z")));
    });
    let one = [run("2026-01-01T00:01:00Z", Some(Phase::Failed))];
    let p = plan(&c, &one, ts("2026-01-01T00:02:30Z"));
    assert!(!p.suspend);
    assert_eq!(p.status.consecutive_failures, 1);
    let two = [
        run("2026-01-01T00:01:00Z", Some(Phase::Failed)),
        run("2026-01-01T00:02:00Z", Some(Phase::Failed)),
    ];
    let p = plan(&c, &two, ts("2026-01-01T00:02:30Z"));
    assert!(p.suspend);
    assert!(p.create.is_empty());
    assert!(p.notes.iter().any(|n| n.reason == "TooManyFailures"));
    let cond = condition(&p, "Suspended");
    assert_eq!(
        (cond.status.as_str(), cond.reason.as_str()),
        ("True", "TooManyFailures")
    );
    // Seen again with spec.suspend set: still TooManyFailures.
    let mut after = c.clone();
    after.spec.suspend = true;
    after.status = Some(p.status.clone());
    let q = plan(&after, &two, ts("2026-01-01T00:02:31Z"));
    let cond = condition(&q, "Suspended");
    assert_eq!(cond.reason, "TooManyFailures");
    // The spec patch seen before the status that told it (a reconcile
    // between the two writes): still TooManyFailures.
    let mut stale = c.clone();
    stale.spec.suspend = true;
    let q2 = plan(&stale, &two, ts("2026-01-01T00:02:31Z"));
    let cond = condition(&q2, "Suspended");
    assert_eq!(cond.reason, "TooManyFailures");
    // Resumed: counted afresh, not suspended again at once.
    let mut resumed = after.clone();
    resumed.spec.suspend = false;
    resumed.status = Some(q.status.clone());
    let r = plan(&resumed, &two, ts("2026-01-01T00:02:40Z"));
    assert!(!r.suspend);
    assert_eq!(r.status.consecutive_failures, 0);
    // A success in between resets the count.
    let mixed = [
        run("2026-01-01T00:01:00Z", Some(Phase::Failed)),
        run("2026-01-01T00:02:00Z", Some(Phase::Completed)),
    ];
    let p = plan(&c, &mixed, ts("2026-01-01T00:02:30Z"));
    assert_eq!(p.status.consecutive_failures, 0);
}

#[test]
fn an_edited_schedule_never_runs_a_time_already_past() {
    let c = with_status(cron(|s| s.schedule = Some("0 * * * *".to_owned())), |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T10:00:00Z")));
    });
    // Edited at 10:30 to 15 past the hour: 10:15 has passed, it does not run.
    let mut edited = c.clone();
    edited.spec.schedule = Some("15 * * * *".to_owned());
    let p = plan(&edited, &[], ts("2026-01-01T10:30:00Z"));
    assert!(p.create.is_empty(), "{p:?}");
    assert_eq!(p.status.missed, 0);
    assert_eq!(p.status.next_schedule_times[0], "2026-01-01T11:15:00Z");
}

#[test]
fn several_schedules_run_each_time_once() {
    let c = cron(|s| {
        s.schedule = Some("0 * * * *".to_owned());
        s.schedules = vec!["*/30 * * * *".to_owned()];
    });
    let p = plan(&c, &[], ts("2026-01-01T00:00:31Z"));
    assert_eq!(
        p.status.next_schedule_times,
        [
            "2026-01-01T00:30:00Z",
            "2026-01-01T01:00:00Z",
            "2026-01-01T01:30:00Z"
        ]
    );
}

#[test]
fn a_bad_zone_is_told_and_nothing_runs() {
    let c = cron(|s| s.time_zone = Some("Mars/Olympus".to_owned()));
    let p = plan(&c, &[], ts("2026-01-01T00:05:00Z"));
    assert!(p.create.is_empty());
    assert_eq!(p.requeue, None);
    let ready = condition(&p, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "InvalidSchedule")
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.warning && n.message.contains("Mars/Olympus"))
    );
}

#[test]
fn runs_are_known_by_name() {
    let mut t = crds::Task::new(
        "nightly-1767225660",
        serde_json::from_value(serde_json::json!({"command": ["true"]})).expect("spec"),
    );
    t.metadata.uid = Some("u".to_owned());
    let r = Run::of(&t, "nightly").expect("a run");
    assert_eq!(r.scheduled, ts("2026-01-01T00:01:00Z"));
    assert!(!r.manual);
    let m = crds::Task::new(
        &manual_run_name("nightly", ts("2026-01-01T00:01:00Z")),
        t.spec.clone(),
    );
    assert!(Run::of(&m, "nightly").expect("manual").manual);
    for other in [
        "nightly",
        "nightly-x1",
        "nightly-",
        "nightly2-123",
        "other-123",
    ] {
        let o = crds::Task::new(other, t.spec.clone());
        assert_eq!(Run::of(&o, "nightly"), None, "{other}");
    }
}

/// A CronTask run over 40 minutes by a simulated operator that wakes every
/// `poll` seconds: runs last their drawn durations, cancellations take one
/// wake to land, the plan's creates, cancels and deletes are applied. Per
/// policy: every scheduled time is created, skipped or (BufferOne) still
/// kept, exactly once; Forbid and BufferOne never run two at once; Replace
/// leaves at most one run that is not being cancelled; Allow skips none.
fn simulate(policy: ConcurrencyPolicy, durations: &[i64], poll: i64) -> Result<(), String> {
    let mut c = cron(|s| s.concurrency_policy = policy);
    let start = ts("2026-01-01T00:00:30Z");
    let mut runs: Vec<Run> = Vec::new();
    let mut ends: std::collections::BTreeMap<String, Timestamp> = Default::default();
    let mut created = std::collections::BTreeSet::new();
    let mut made = 0usize;
    for step in 0..(40 * 60 / poll) {
        let now = start + k8s_openapi::jiff::SignedDuration::from_secs(step * poll);
        for r in &mut runs {
            let ended = ends.get(&r.name).is_some_and(|e| *e <= now);
            if r.finished.is_none() && (r.cancelling || ended) {
                r.finished = Some(if r.cancelling {
                    Phase::Failed
                } else {
                    Phase::Completed
                });
            }
        }
        let p = plan(&c, &runs, now);
        for at in &p.create {
            if !created.insert(*at) {
                return Err(format!("{at} created twice"));
            }
            let d = durations[made % durations.len()];
            made += 1;
            let r = Run {
                name: run_name("nightly", *at),
                uid: format!("uid-{}", at.as_second()),
                scheduled: *at,
                manual: false,
                finished: None,
                cancelling: false,
            };
            ends.insert(
                r.name.clone(),
                now + k8s_openapi::jiff::SignedDuration::from_secs(d),
            );
            runs.push(r);
        }
        for name in &p.cancel {
            runs.iter_mut()
                .filter(|r| &r.name == name)
                .for_each(|r| r.cancelling = true);
        }
        runs.retain(|r| !p.delete.iter().any(|(n, _)| *n == r.name));
        c.status = Some(p.status.clone());
        let active: Vec<&Run> = runs.iter().filter(|r| r.finished.is_none()).collect();
        let live = active.iter().filter(|r| !r.cancelling).count();
        match policy {
            ConcurrencyPolicy::Forbid | ConcurrencyPolicy::BufferOne if active.len() > 1 => {
                return Err(format!("two runs at once at {now}"));
            }
            ConcurrencyPolicy::Replace if live > 1 => {
                return Err(format!("{live} runs not cancelled at {now}"));
            }
            _ => {}
        }
    }
    let end = start + k8s_openapi::jiff::SignedDuration::from_secs((40 * 60 / poll - 1) * poll);
    let ticks = (end.as_second() - start.as_second() + 30) / 60;
    let s = c.status.unwrap_or_default();
    let kept = i64::from(s.buffered.is_some_and(|b| !created.contains(&b.0)));
    let accounted = created.len() as i64 + s.skipped + s.missed + kept;
    if accounted != ticks {
        return Err(format!(
            "{ticks} times, {} created, {} skipped, {} missed, {kept} kept",
            created.len(),
            s.skipped,
            s.missed
        ));
    }
    if policy == ConcurrencyPolicy::Allow && s.skipped != 0 {
        return Err("Allow skipped a time".to_owned());
    }
    Ok(())
}

proptest::proptest! {
    #[test]
    fn every_policy_accounts_for_each_time_once(
        policy in proptest::sample::select(vec![
            ConcurrencyPolicy::Allow,
            ConcurrencyPolicy::Forbid,
            ConcurrencyPolicy::Replace,
            ConcurrencyPolicy::BufferOne,
        ]),
        durations in proptest::collection::vec(5i64..200, 1..6),
        poll in proptest::sample::select(vec![1i64, 5, 10, 20]),
    ) {
        proptest::prop_assert_eq!(simulate(policy, &durations, poll), Ok(()));
    }

    /// After downtime from the last handled time: the latest missed time
    /// runs if within catchUpSeconds, every other one is counted missed,
    /// and a second plan at the same moment adds nothing.
    #[test]
    fn catch_up_runs_only_the_latest_time_in_the_window(
        step in proptest::sample::select(vec![1i64, 2, 5, 15]),
        window in 0i64..3_600,
        down_ms in 0i64..7_200_000,
    ) {
        let last = ts("2026-01-01T01:00:00Z");
        let c = with_status(
            cron(|s| {
                s.schedule = Some(format!("*/{step} * * * *"));
                s.catch_up_seconds = Some(window);
            }),
            |s| s.last_schedule_time = Some(Time(last)),
        );
        let now = last + k8s_openapi::jiff::SignedDuration::from_millis(down_ms);
        let times: Vec<Timestamp> = (1..)
            .map(|k| last + k8s_openapi::jiff::SignedDuration::from_secs(k * step * 60))
            .take_while(|t| *t <= now)
            .collect();
        let p = plan(&c, &[], now);
        match times.last() {
            None => {
                proptest::prop_assert!(p.create.is_empty());
                proptest::prop_assert_eq!(p.status.missed, 0);
            }
            Some(&latest) => {
                let in_window = now.duration_since(latest).as_millis() <= i128::from(window) * 1000;
                let want: Vec<Timestamp> = if in_window { vec![latest] } else { Vec::new() };
                proptest::prop_assert_eq!(&p.create, &want);
                proptest::prop_assert_eq!(p.status.missed, times.len() as i64 - i64::from(in_window));
                proptest::prop_assert_eq!(p.status.last_schedule_time.as_ref().map(|t| t.0), Some(latest));
            }
        }
        let mut again = c.clone();
        again.status = Some(p.status.clone());
        let made: Vec<Run> = p.create.iter().map(|t| Run {
            name: run_name("nightly", *t),
            uid: "u".to_owned(),
            scheduled: *t,
            manual: false,
            finished: None,
            cancelling: false,
        }).collect();
        let p2 = plan(&again, &made, now);
        proptest::prop_assert!(p2.create.is_empty());
        proptest::prop_assert_eq!(p2.status.missed, p.status.missed);
    }
}

#[test]
fn runs_named_after_a_time_to_come_are_ignored_and_told_once() {
    let c = with_status(cron(|s| s.stop_after_failures = Some(2)), |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T00:03:00Z")));
    });
    let now = ts("2026-01-01T00:03:30Z");
    let genuine = [
        run("2026-01-01T00:02:00Z", Some(Phase::Completed)),
        run("2026-01-01T00:03:00Z", Some(Phase::Completed)),
    ];
    // Forged: far ahead (failed, completed, and one that never ends).
    let forged = [
        run("2286-11-20T17:46:30Z", Some(Phase::Failed)),
        run("2286-11-20T17:46:31Z", Some(Phase::Failed)),
        run("2286-11-20T17:46:32Z", Some(Phase::Completed)),
        run("2286-11-20T17:46:33Z", None),
    ];
    let all: Vec<Run> = genuine.iter().chain(&forged).cloned().collect();
    let p = plan(&c, &all, now);
    assert!(p.delete.is_empty(), "genuine runs deleted: {:?}", p.delete);
    assert!(!p.suspend);
    assert_eq!(p.status.consecutive_failures, 0);
    assert_eq!(
        p.status.last_successful_time,
        Some(Time(ts("2026-01-01T00:03:00Z")))
    );
    assert!(p.status.active.is_empty(), "{:?}", p.status.active);
    let mut names: Vec<String> = forged.iter().map(|r| r.name.clone()).collect();
    names.sort();
    assert_eq!(p.status.ignored_runs, names);
    let warned: Vec<&str> = p
        .notes
        .iter()
        .filter(|n| n.reason == "ForgedRun" && n.warning)
        .map(|n| n.message.as_str())
        .collect();
    assert_eq!(warned.len(), 4, "{:?}", p.notes);
    // Seen again (the status shows them): no second Warning, still ignored.
    let mut again = c.clone();
    again.status = Some(p.status.clone());
    let q = plan(&again, &all, ts("2026-01-01T00:03:40Z"));
    assert!(
        q.notes.iter().all(|n| n.reason != "ForgedRun"),
        "{:?}",
        q.notes
    );
    assert_eq!(q.status.ignored_runs, names);
    // Forbid is not frozen by a forged run that never ends.
    let forbid = with_status(
        cron(|s| s.concurrency_policy = ConcurrencyPolicy::Forbid),
        |s| s.last_schedule_time = Some(Time(ts("2026-01-01T00:03:00Z"))),
    );
    let r = plan(&forbid, &forged, ts("2026-01-01T00:04:00.5Z"));
    assert_eq!(r.create, [ts("2026-01-01T00:04:00Z")]);
    // Within the clock skew a run counts (a trigger from a clock a little ahead).
    let ahead = run("2026-01-01T00:04:20Z", Some(Phase::Failed));
    let s = plan(&c, std::slice::from_ref(&ahead), now);
    assert!(s.status.ignored_runs.is_empty());
    assert_eq!(s.status.consecutive_failures, 1);
}

#[test]
fn a_schedule_more_frequent_than_the_operator_allows_starts_nothing() {
    let limits = Limits {
        min_interval: Some(SignedDuration::from_secs(60)),
        ..Limits::default()
    };
    let every_second = cron(|s| s.schedule = Some("* * * * * *".to_owned()));
    let p = plan_with(&every_second, &[], ts("2026-01-01T00:01:00.5Z"), &limits);
    assert!(p.create.is_empty(), "{p:?}");
    let ready = condition(&p, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "TooFrequent")
    );
    assert!(
        ready.message.contains("--cron-min-interval=60s"),
        "{}",
        ready.message
    );
    // Two times a minute apart once a day: still too close for 2 minutes.
    let twice = cron(|s| s.schedule = Some("0,1 3 * * *".to_owned()));
    let two_min = Limits {
        min_interval: Some(SignedDuration::from_secs(120)),
        ..Limits::default()
    };
    let p = plan_with(&twice, &[], ts("2026-01-01T00:01:00Z"), &two_min);
    assert!(p.notes.iter().any(|n| n.reason == "TooFrequent"));
    // Every minute is allowed at 60 s, and every second with no limit.
    let p = plan_with(&cron(|_| {}), &[], ts("2026-01-01T00:01:00.2Z"), &limits);
    assert_eq!(p.create.len(), 1);
    let p = plan(&every_second, &[], ts("2026-01-01T00:01:00.5Z"));
    assert_eq!(p.create.len(), 1);
}

#[test]
fn max_active_runs_and_the_namespace_bound_skip_a_time() {
    let active: Vec<Run> = ["00:01:00", "00:02:00", "00:03:00"]
        .iter()
        .map(|t| run(&format!("2026-01-01T{t}Z"), None))
        .collect();
    let c = with_status(cron(|s| s.max_active_runs = Some(3)), |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T00:03:00Z")));
    });
    let now = ts("2026-01-01T00:04:00.5Z");
    let p = plan(&c, &active, now);
    assert!(p.create.is_empty(), "{p:?}");
    assert_eq!(p.status.skipped, 1);
    assert_eq!(
        p.status.last_schedule_time,
        Some(Time(ts("2026-01-01T00:04:00Z")))
    );
    let note = p
        .notes
        .iter()
        .find(|n| n.reason == "Skipped")
        .expect("note");
    assert!(
        note.warning && note.message.contains("maxActiveRuns: 3"),
        "{note:?}"
    );
    // One fewer active: it starts.
    let p = plan(&c, &active[1..], now);
    assert_eq!(p.create, [ts("2026-01-01T00:04:00Z")]);
    // The default is 10.
    let d = with_status(cron(|_| {}), |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T00:03:00Z")));
    });
    assert_eq!(plan(&d, &active, now).create.len(), 1);
    // Replace counts the runs still being cancelled, not the ones it cancels now.
    let r = with_status(
        cron(|s| {
            s.max_active_runs = Some(1);
            s.concurrency_policy = ConcurrencyPolicy::Replace;
        }),
        |s| s.last_schedule_time = Some(Time(ts("2026-01-01T00:03:00Z"))),
    );
    let p = plan(&r, &active[2..], now);
    assert_eq!(p.create.len(), 1);
    let mut cancelling = active[2].clone();
    cancelling.cancelling = true;
    let p = plan(&r, &[cancelling], now);
    assert!(p.create.is_empty());
    // The namespace's bound: a time due beyond it is skipped, with a Warning.
    let full = Limits {
        namespace_max: Some(100),
        namespace_active: 100,
        ..Limits::default()
    };
    let p = plan_with(&d, &[], now, &full);
    assert!(p.create.is_empty());
    assert_eq!(p.status.skipped, 1);
    let note = p
        .notes
        .iter()
        .find(|n| n.reason == "Skipped")
        .expect("note");
    assert!(
        note.warning && note.message.contains("--cron-max-active-per-namespace=100"),
        "{note:?}"
    );
    let room = Limits {
        namespace_active: 99,
        ..full
    };
    assert_eq!(plan_with(&d, &[], now, &room).create.len(), 1);
}

#[test]
fn runs_the_cache_does_not_show_yet_count_as_active_for_a_while() {
    let at = |t: &str| run(&format!("2026-01-01T{t}Z"), None);
    let c = with_status(cron(|s| s.max_active_runs = Some(2)), |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T00:03:00Z")));
        s.active = vec![at("00:02:00").name, at("00:03:00").name];
    });
    let now = ts("2026-01-01T00:04:00.5Z");
    // The cache lags: the run made at 00:03 is not in it yet. It still
    // counts (and stays in status.active), so 00:04 is skipped.
    let p = plan(&c, &[at("00:02:00")], now);
    assert!(p.create.is_empty(), "{p:?}");
    assert_eq!(p.status.skipped, 1);
    assert_eq!(p.status.active, [at("00:02:00").name, at("00:03:00").name]);
    // Shown by the cache as finished: not active, 00:04 starts.
    let p = plan(
        &c,
        &[
            at("00:02:00"),
            run("2026-01-01T00:03:00Z", Some(Phase::Completed)),
        ],
        now,
    );
    assert_eq!(p.create, [ts("2026-01-01T00:04:00Z")]);
    // Missing for longer than the cache can lag (deleted): not counted.
    let later = ts("2026-01-01T00:05:00.5Z");
    let c = with_status(c, |s| {
        s.last_schedule_time = Some(Time(ts("2026-01-01T00:04:00Z")))
    });
    let p = plan(&c, &[], later);
    assert_eq!(p.create, [ts("2026-01-01T00:05:00Z")]);
    assert_eq!(p.status.active, [at("00:05:00").name]);
}
