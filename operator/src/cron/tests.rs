//! The CronTask plan with the clock handed in: each concurrency policy,
//! catch-up after downtime, suspension, history limits, stopAfterFailures,
//! edits, and a status write that was lost.

use crds::cron::{ConcurrencyPolicy, CronTask, CronTaskSpec, CronTaskStatus, TaskTemplate};
use crds::{Phase, TaskSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use super::plan::{Run, manual_run_name, plan, run_name};

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
    s.schedule_in_effect = Some(super::plan::schedule_key(&c));
    change(&mut s);
    c.status = Some(s);
    c
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
    let cond = p
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Suspended")
        .expect("Suspended");
    assert_eq!(
        (cond.status.as_str(), cond.reason.as_str()),
        ("True", "TooManyFailures")
    );
    // Seen again with spec.suspend set: still TooManyFailures.
    let mut after = c.clone();
    after.spec.suspend = true;
    after.status = Some(p.status.clone());
    let q = plan(&after, &two, ts("2026-01-01T00:02:31Z"));
    let cond = q
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Suspended")
        .expect("Suspended");
    assert_eq!(cond.reason, "TooManyFailures");
    // The spec patch seen before the status that told it (a reconcile
    // between the two writes): still TooManyFailures.
    let mut stale = c.clone();
    stale.spec.suspend = true;
    let q2 = plan(&stale, &two, ts("2026-01-01T00:02:31Z"));
    let cond = q2
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Suspended")
        .expect("Suspended");
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
    let ready = p
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
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
