//! Pure: what a CronTask's reconcile does at `now`, from the CronTask and
//! its runs as the Task cache shows them. No clock is read here: tests
//! hand in `now`.

use crds::cron::{ConcurrencyPolicy, CronTask, CronTaskStatus};
use crds::schedule::{Schedule, between, next_of};
use crds::{Phase, Task};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How many missed times are counted one by one after a long downtime;
/// beyond it the count says "at least".
const COUNT_LIMIT: usize = 10_000;

/// How many next times the status shows.
const NEXT_SHOWN: usize = 3;

/// How far ahead of the operator's clock a run's time may be (clocks of
/// nodes and of `kubectl longtask trigger` users differ a little): a run
/// named after a later time is no run, whatever its owner says.
pub const CLOCK_SKEW: SignedDuration = SignedDuration::from_secs(60);

/// How many consecutive scheduled times `--cron-min-interval` looks at.
const GAPS_CHECKED: usize = 64;

/// How many ignored runs the status names.
const IGNORED_SHOWN: usize = 16;

/// The operator's bounds on CronTasks (its flags), and what the
/// CronTask's namespace has active now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// `--cron-min-interval`: the shortest time allowed between two
    /// scheduled times; `None`: any.
    pub min_interval: Option<SignedDuration>,
    /// `--cron-max-active-per-namespace`; `None`: no bound.
    pub namespace_max: Option<usize>,
    /// Active runs of every CronTask in the namespace, as the cache shows.
    pub namespace_active: usize,
}

impl Limits {
    fn namespace_full(&self) -> bool {
        self.namespace_max
            .is_some_and(|max| self.namespace_active >= max)
    }
}

/// A run of a CronTask as the reconcile needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub name: String,
    pub uid: String,
    /// Its scheduled time (a manual run: when it was triggered).
    pub scheduled: Timestamp,
    pub manual: bool,
    /// `None` while it has not finished.
    pub finished: Option<Phase>,
    /// `spec.cancel` is set already.
    pub cancelling: bool,
}

impl Run {
    /// The run `task` is of CronTask `cron_name`, from its name
    /// (`<cron>-<unix seconds>`, manual `<cron>-m<unix seconds>`): the
    /// cache keeps no labels or annotations of finished Tasks.
    pub fn of(task: &Task, cron_name: &str) -> Option<Run> {
        let name = task.metadata.name.as_deref()?;
        let suffix = name.strip_prefix(cron_name)?.strip_prefix('-')?;
        let (manual, digits) = match suffix.strip_prefix('m') {
            Some(d) => (true, d),
            None => (false, suffix),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let scheduled = Timestamp::from_second(digits.parse().ok()?).ok()?;
        let phase = task.status.as_ref().and_then(|s| s.phase);
        Some(Run {
            name: name.to_owned(),
            uid: task.metadata.uid.clone().unwrap_or_default(),
            scheduled,
            manual,
            finished: phase.filter(|p| p.is_terminal()),
            cancelling: task.spec.cancel,
        })
    }
}

pub use crds::cron::{manual_run_name, run_name};

/// An Event to record on the CronTask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub warning: bool,
    /// The Task it is about, if one (the Event's related object: Events
    /// about different Tasks are not taken for repeats of one another).
    pub related: Option<String>,
    pub reason: &'static str,
    pub message: String,
}

/// What the reconcile does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Runs to create, by scheduled time.
    pub create: Vec<Timestamp>,
    /// Active runs to cancel (concurrencyPolicy Replace).
    pub cancel: Vec<String>,
    /// Finished runs past the history limits: (name, uid).
    pub delete: Vec<(String, String)>,
    /// Set spec.suspend: stopAfterFailures was reached.
    pub suspend: bool,
    pub status: CronTaskStatus,
    pub notes: Vec<Note>,
    /// When to look again (the next scheduled time); `None`: on a change.
    pub requeue: Option<std::time::Duration>,
}

/// The schedules and zone of `cron`, or why they cannot be read.
pub fn schedules(cron: &CronTask) -> Result<(Vec<Schedule>, TimeZone), String> {
    let mut out = Vec::new();
    for s in cron.spec.all_schedules() {
        out.push(Schedule::parse(s).map_err(|e| e.to_string())?);
    }
    if out.is_empty() {
        return Err("give spec.schedule (or spec.schedules)".to_owned());
    }
    let tz = match cron.spec.time_zone.as_deref() {
        None | Some("UTC" | "Etc/UTC") => TimeZone::UTC,
        Some(name) => TimeZone::get(name).map_err(|_| {
            format!("spec.timeZone {name:?} is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)")
        })?,
    };
    Ok((out, tz))
}

/// What the schedules and zone are, as one string (an edit changes it).
pub fn schedule_key(cron: &CronTask) -> String {
    let all: Vec<&str> = cron.spec.all_schedules().collect();
    format!(
        "{} ({})",
        all.join("; "),
        cron.spec.time_zone.as_deref().unwrap_or("UTC")
    )
}

/// The reconcile of `cron` at `now`, its runs being `runs`, without the
/// operator's bounds.
pub fn plan(cron: &CronTask, runs: &[Run], now: Timestamp) -> Plan {
    plan_with(cron, runs, now, &Limits::default())
}

/// The reconcile of `cron` at `now`, its runs being `runs`, within `limits`.
pub fn plan_with(cron: &CronTask, runs: &[Run], now: Timestamp, limits: &Limits) -> Plan {
    let prev = cron.status.clone().unwrap_or_default();
    let mut plan = Plan {
        status: CronTaskStatus {
            observed_generation: cron.metadata.generation,
            ..prev.clone()
        },
        ..Plan::default()
    };
    let mut real = ignore_forged(runs, now, &prev, &mut plan);
    real.extend(unseen_runs(cron, &real, &prev, now));
    let runs = &real;
    let (schedules, tz) = match runnable(cron, now, limits) {
        Ok(s) => s,
        Err((reason, why)) => {
            invalid(&mut plan, &prev, reason, &why, now);
            return plan;
        }
    };
    count_finished(cron, runs, &mut plan);
    let suspended = cron.spec.suspend || plan.suspend;
    if !suspended {
        due(cron, runs, &schedules, &tz, now, limits, &mut plan);
        release_buffered(cron, runs, limits, &mut plan);
    }
    history(cron, runs, &mut plan);
    let active: Vec<String> = runs
        .iter()
        .filter(|r| r.finished.is_none())
        .map(|r| r.name.clone())
        .chain(plan.create.iter().map(|t| run_name(cron_name(cron), *t)))
        .collect();
    plan.status.active_count = i32::try_from(active.len()).unwrap_or(i32::MAX);
    plan.status.active = active;
    plan.status.schedule_in_effect = Some(schedule_key(cron));
    let next: Vec<Timestamp> = if suspended {
        Vec::new()
    } else {
        std::iter::successors(next_of(&schedules, now, &tz), |t| {
            next_of(&schedules, *t, &tz)
        })
        .take(NEXT_SHOWN)
        .collect()
    };
    plan.status.next_schedule_times = next.iter().map(ToString::to_string).collect();
    plan.requeue = next.first().map(|t| {
        let wait = t.duration_since(now).max(SignedDuration::ZERO);
        std::time::Duration::try_from(wait).unwrap_or_default()
    });
    conditions(cron, &mut plan, &prev, suspended, now);
    plan
}

/// The schedules and zone of `cron`, or why none of its times runs (a
/// reason and a message).
fn runnable(
    cron: &CronTask,
    now: Timestamp,
    limits: &Limits,
) -> Result<(Vec<Schedule>, TimeZone), (&'static str, String)> {
    let system = cron
        .metadata
        .namespace
        .as_deref()
        .is_some_and(|ns| crds::names::SYSTEM_NAMESPACES.contains(&ns));
    if system {
        let why = "CronTasks may not run in system namespaces";
        return Err(("SystemNamespace", why.to_owned()));
    }
    let (schedules, tz) = schedules(cron).map_err(|why| ("InvalidSchedule", why))?;
    if let Some(why) = too_frequent(&schedules, &tz, now, limits) {
        return Err(("TooFrequent", why));
    }
    Ok((schedules, tz))
}

fn cron_name(cron: &CronTask) -> &str {
    cron.metadata.name.as_deref().unwrap_or_default()
}

/// The runs of `runs` whose time has come (within [`CLOCK_SKEW`]). The
/// others were not made by the operator, which names a run after a time
/// that came, nor by `trigger` (after its user's clock): they are left
/// out of every count and never deleted, and named in the status and,
/// once each, in a Warning.
fn ignore_forged(runs: &[Run], now: Timestamp, prev: &CronTaskStatus, plan: &mut Plan) -> Vec<Run> {
    let (forged, real): (Vec<Run>, Vec<Run>) = runs
        .iter()
        .cloned()
        .partition(|r| r.scheduled.duration_since(now) > CLOCK_SKEW);
    let mut names: Vec<String> = forged.iter().map(|r| r.name.clone()).collect();
    names.sort();
    names.truncate(IGNORED_SHOWN);
    for r in &forged {
        if prev.ignored_runs.contains(&r.name) || !names.contains(&r.name) {
            continue;
        }
        plan.notes.push(Note {
            warning: true,
            related: Some(r.name.clone()),
            reason: "ForgedRun",
            message: format!(
                "Task {} claims to be a run of this CronTask for {}, a time still to come: \
                 ignored (not counted, never deleted); the operator did not make it",
                r.name, r.scheduled
            ),
        });
    }
    plan.status.ignored_runs = names;
    real
}

/// How long a run the last status recorded as active may be missing from
/// the Task cache and still count as active: the cache's lag behind the
/// operator's own creates, which under load reached seconds.
const CACHE_LAG: SignedDuration = SignedDuration::from_secs(120);

/// The runs `prev.active` names that the cache does not show, made at most
/// `CACHE_LAG` ago (the scheduled time is in the name): the last reconcile
/// created them and their watch events are not here yet. They count as
/// active, so that a lagging cache cannot start a run past maxActiveRuns
/// or Forbid (a cron_max_active_runs_caps run on a loaded machine saw 4
/// runs of maxActiveRuns 3). Older ones are dropped: a run deleted right
/// after its creation holds nothing back for longer.
fn unseen_runs(cron: &CronTask, runs: &[Run], prev: &CronTaskStatus, now: Timestamp) -> Vec<Run> {
    let prefix = format!("{}-", cron_name(cron));
    prev.active
        .iter()
        .filter(|n| !runs.iter().any(|r| &r.name == *n))
        .filter_map(|n| {
            let rest = n.strip_prefix(&prefix)?;
            let (manual, secs) = match rest.strip_prefix('m') {
                Some(secs) => (true, secs),
                None => (false, rest),
            };
            let scheduled = Timestamp::from_second(secs.parse().ok()?).ok()?;
            let age = now.duration_since(scheduled);
            (age <= CACHE_LAG && age >= -CLOCK_SKEW).then(|| Run {
                name: n.clone(),
                uid: String::new(),
                scheduled,
                manual,
                finished: None,
                cancelling: false,
            })
        })
        .collect()
}

/// Why `schedules` fire more often than `--cron-min-interval` allows, if
/// they do: two of the next scheduled times are closer than it.
fn too_frequent(
    schedules: &[Schedule],
    tz: &TimeZone,
    now: Timestamp,
    limits: &Limits,
) -> Option<String> {
    let min = limits.min_interval?;
    let times: Vec<Timestamp> =
        std::iter::successors(next_of(schedules, now, tz), |t| next_of(schedules, *t, tz))
            .take(GAPS_CHECKED)
            .collect();
    let gap = times
        .windows(2)
        .map(|w| w[1].duration_since(w[0]))
        .min()
        .filter(|g| *g < min)?;
    Some(format!(
        "the schedule fires {}s apart, more often than this operator allows \
         (--cron-min-interval={}s, set by the cluster admin)",
        gap.as_secs(),
        min.as_secs()
    ))
}

/// The schedule or zone cannot be read: nothing runs, and the status and
/// a Warning say why.
fn invalid(
    plan: &mut Plan,
    prev: &CronTaskStatus,
    reason: &'static str,
    why: &str,
    now: Timestamp,
) {
    plan.status.next_schedule_times = Vec::new();
    let ready = condition("Ready", false, reason, why, prev, now);
    let changed = prev.conditions.iter().find(|c| c.type_ == "Ready") != Some(&ready);
    set_condition(&mut plan.status, ready);
    if changed {
        plan.notes.push(Note {
            warning: true,
            related: None,
            reason,
            message: format!("{why}; no run starts"),
        });
    }
}

/// Counts the runs that finished since the last count (oldest first):
/// consecutive failures, the last successful time, and stopAfterFailures.
fn count_finished(cron: &CronTask, runs: &[Run], plan: &mut Plan) {
    // Resumed after stopAfterFailures suspended it: count afresh.
    let stopped = plan
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == "Suspended" && c.status == "True" && c.reason == "TooManyFailures");
    if stopped && !cron.spec.suspend {
        plan.status.consecutive_failures = 0;
    }
    let since = plan.status.last_counted_time.as_ref().map(|t| t.0);
    let mut fresh: Vec<&Run> = runs
        .iter()
        .filter(|r| r.finished.is_some() && since.is_none_or(|s| r.scheduled > s))
        .collect();
    fresh.sort_by_key(|r| r.scheduled);
    // A run still active before a finished one keeps the count where it
    // is until it finishes: count only up to the oldest active run.
    let oldest_active = runs
        .iter()
        .filter(|r| r.finished.is_none())
        .map(|r| r.scheduled)
        .min();
    for r in fresh {
        if oldest_active.is_some_and(|a| a < r.scheduled) {
            break;
        }
        plan.status.last_counted_time = Some(Time(r.scheduled));
        if r.finished == Some(Phase::Completed) {
            plan.status.consecutive_failures = 0;
            if plan
                .status
                .last_successful_time
                .as_ref()
                .is_none_or(|t| t.0 < r.scheduled)
            {
                plan.status.last_successful_time = Some(Time(r.scheduled));
            }
        } else {
            plan.status.consecutive_failures += 1;
        }
    }
    if let Some(limit) = cron.spec.stop_after_failures
        && !cron.spec.suspend
        && plan.status.consecutive_failures >= limit
    {
        plan.notes.push(Note {
            warning: true,
            related: None,
            reason: "TooManyFailures",
            message: format!(
                "{} runs in a row failed (stopAfterFailures: {limit}): suspended; set \
                 spec.suspend to false (kubectl longtask resume) to start again",
                plan.status.consecutive_failures
            ),
        });
        plan.suspend = true;
        plan.status.buffered = None;
    }
}

/// The scheduled times that came since the last one handled: the latest
/// runs if within the catch-up window (under the concurrency policy), the
/// others are missed.
fn due(
    cron: &CronTask,
    runs: &[Run],
    schedules: &[Schedule],
    tz: &TimeZone,
    now: Timestamp,
    limits: &Limits,
    plan: &mut Plan,
) {
    let (since, edited) = counted_from(cron, &plan.status, now);
    let (times, more) = between(schedules, since, now, tz, COUNT_LIMIT);
    let Some(&latest) = times.last() else {
        if edited {
            plan.status.last_schedule_time = Some(Time(now));
        }
        return;
    };
    plan.status.last_schedule_time = Some(Time(latest));
    let window = SignedDuration::from_secs(cron.spec.catch_up_seconds());
    let in_window = now.duration_since(latest) <= window;
    let missed = times.len() - usize::from(in_window);
    if missed > 0 {
        plan.status.missed += i64::try_from(missed).unwrap_or(i64::MAX);
        plan.notes.push(missed_note(cron, &times, more, in_window));
    }
    if in_window {
        start(cron, runs, latest, limits, plan);
    }
}

/// Where the count of due times starts, and whether the schedule or zone
/// was edited. After an edit, times are counted from the moment the edit
/// is seen: an edit never runs a time already past.
fn counted_from(cron: &CronTask, prev: &CronTaskStatus, now: Timestamp) -> (Timestamp, bool) {
    let created = cron
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0);
    let edited = prev
        .schedule_in_effect
        .as_ref()
        .is_some_and(|k| *k != schedule_key(cron));
    let since = match (&prev.last_schedule_time, edited) {
        (_, true) => now,
        (Some(t), false) => t.0,
        (None, false) => created,
    };
    (since, edited)
}

/// The Warning for `times` (oldest first, not empty) that passed without
/// a run: all of them, or all but the latest when it is `in_window`.
fn missed_note(cron: &CronTask, times: &[Timestamp], more: bool, in_window: bool) -> Note {
    let missed = times.len() - usize::from(in_window);
    let (first, latest) = (times[0], times[times.len() - 1]);
    let last = if in_window {
        times[times.len() - 2]
    } else {
        latest
    };
    Note {
        warning: true,
        related: None,
        reason: "Missed",
        message: format!(
            "{}{missed} scheduled time(s) passed without a run ({first} to {last}): the \
             operator was down or the CronTask suspended; {}",
            if more { "at least " } else { "" },
            if in_window {
                format!("only the latest, {latest}, runs (within catchUpSeconds)")
            } else {
                format!(
                    "none is within catchUpSeconds ({}s), so none runs",
                    cron.spec.catch_up_seconds()
                )
            }
        ),
    }
}

/// Starts the run scheduled at `at`, as the concurrency policy says.
fn start(cron: &CronTask, runs: &[Run], at: Timestamp, limits: &Limits, plan: &mut Plan) {
    let name = run_name(cron_name(cron), at);
    if runs.iter().any(|r| r.name == name) {
        // Made already (a reconcile whose status write was lost).
        return;
    }
    let active: Vec<&Run> = runs.iter().filter(|r| r.finished.is_none()).collect();
    let names = || names_of(&active);
    if let Some((warning, why)) = held_back(cron, &active, limits) {
        skip(plan, at, warning, why);
        return;
    }
    match cron.spec.concurrency_policy {
        _ if active.is_empty() => plan.create.push(at),
        // Forbid with a run active: held back above.
        ConcurrencyPolicy::Allow | ConcurrencyPolicy::Forbid => plan.create.push(at),
        ConcurrencyPolicy::Replace => {
            plan.cancel = active
                .iter()
                .filter(|r| !r.cancelling)
                .map(|r| r.name.clone())
                .collect();
            plan.notes.push(Note {
                warning: false,
                related: None,
                reason: "Replaced",
                message: format!("cancelling {} to start {name} (Replace)", names()),
            });
            plan.create.push(at);
        }
        ConcurrencyPolicy::BufferOne => match &plan.status.buffered {
            None => {
                plan.status.buffered = Some(Time(at));
                plan.notes.push(Note {
                    warning: false,
                    related: None,
                    reason: "Buffered",
                    message: format!(
                        "the run scheduled at {at} starts when {} ends (BufferOne)",
                        names()
                    ),
                });
            }
            Some(b) => {
                let why = format!(
                    "{} still active and the run of {} already waits (BufferOne)",
                    names(),
                    b.0
                );
                skip(plan, at, false, why);
            }
        },
    }
}

/// The names of `runs`, for a message.
fn names_of(runs: &[&Run]) -> String {
    runs.iter()
        .map(|r| r.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a new run may not start beside `active` (and whether that deserves
/// a Warning): the namespace's bound, maxActiveRuns (with Replace: runs
/// still being cancelled, which the new one does not wait for), or Forbid.
fn held_back(cron: &CronTask, active: &[&Run], limits: &Limits) -> Option<(bool, String)> {
    if limits.namespace_full() {
        let why = format!(
            "CronTasks have {} runs active in this namespace, the operator's bound \
             (--cron-max-active-per-namespace={})",
            limits.namespace_active,
            limits.namespace_max.unwrap_or_default()
        );
        return Some((true, why));
    }
    let policy = cron.spec.concurrency_policy;
    if policy == ConcurrencyPolicy::Forbid && !active.is_empty() {
        return Some((false, format!("{} still active (Forbid)", names_of(active))));
    }
    let max = cron.spec.max_active_runs();
    let counted = match policy {
        ConcurrencyPolicy::Replace => active.iter().filter(|r| r.cancelling).count(),
        _ => active.len(),
    };
    (counted >= max).then(|| {
        let why =
            format!("{counted} runs of this CronTask still active (spec.maxActiveRuns: {max})");
        (true, why)
    })
}

fn skip(plan: &mut Plan, at: Timestamp, warning: bool, why: String) {
    plan.status.skipped += 1;
    plan.notes.push(Note {
        warning,
        related: None,
        reason: "Skipped",
        message: format!("the run scheduled at {at} was skipped: {why}"),
    });
}

/// BufferOne: the kept time starts once no run is active.
fn release_buffered(cron: &CronTask, runs: &[Run], limits: &Limits, plan: &mut Plan) {
    let Some(at) = plan.status.buffered.as_ref().map(|t| t.0) else {
        return;
    };
    // Kept until the namespace has room.
    if limits.namespace_full() {
        return;
    }
    if runs.iter().all(|r| r.finished.is_some()) && plan.create.is_empty() {
        plan.status.buffered = None;
        let name = run_name(cron_name(cron), at);
        if !runs.iter().any(|r| r.name == name) {
            plan.create.push(at);
        }
    }
}

/// Finished runs past the history limits, oldest first.
fn history(cron: &CronTask, runs: &[Run], plan: &mut Plan) {
    for (phase, keep) in [
        (Phase::Completed, cron.spec.successful_limit()),
        (Phase::Failed, cron.spec.failed_limit()),
    ] {
        let mut done: Vec<&Run> = runs.iter().filter(|r| r.finished == Some(phase)).collect();
        done.sort_by_key(|r| std::cmp::Reverse(r.scheduled));
        plan.delete.extend(
            done.into_iter()
                .skip(keep)
                .map(|r| (r.name.clone(), r.uid.clone())),
        );
    }
    plan.delete.sort();
}

/// Ready and Suspended.
fn conditions(
    cron: &CronTask,
    plan: &mut Plan,
    prev: &CronTaskStatus,
    suspended: bool,
    now: Timestamp,
) {
    let ready = condition(
        "Ready",
        true,
        "Scheduled",
        "runs start at the scheduled times",
        prev,
        now,
    );
    set_condition(&mut plan.status, ready);
    let stop = || {
        (
            "TooManyFailures",
            format!(
                "suspended after {} failed runs in a row (stopAfterFailures)",
                cron.spec.stop_after_failures.unwrap_or_default()
            ),
        )
    };
    // Suspended by stopAfterFailures: the count says so even when the
    // status that told it is not seen yet (the spec patch came first).
    let failed_out = cron
        .spec
        .stop_after_failures
        .is_some_and(|limit| plan.status.consecutive_failures >= limit);
    let (reason, message) = if plan.suspend {
        stop()
    } else if cron.spec.suspend {
        let kept = prev
            .conditions
            .iter()
            .find(|c| c.type_ == "Suspended" && c.status == "True");
        match kept {
            Some(c) if c.reason == "TooManyFailures" => ("TooManyFailures", c.message.clone()),
            _ if failed_out => stop(),
            Some(c) => ("Suspended", c.message.clone()),
            None => (
                "Suspended",
                "spec.suspend is true: no new run starts".to_owned(),
            ),
        }
    } else {
        ("Active", "new runs start as scheduled".to_owned())
    };
    let c = condition("Suspended", suspended, reason, &message, prev, now);
    set_condition(&mut plan.status, c);
}

/// A condition, keeping the previous transition time when the status did
/// not change.
fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    prev: &CronTaskStatus,
    now: Timestamp,
) -> Condition {
    let status = if status { "True" } else { "False" };
    let since = prev
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map_or(Time(now), |c| c.last_transition_time.clone());
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_transition_time: since,
        observed_generation: None,
    }
}

fn set_condition(status: &mut CronTaskStatus, c: Condition) {
    match status.conditions.iter_mut().find(|x| x.type_ == c.type_) {
        Some(x) => *x = c,
        None => status.conditions.push(c),
    }
}
