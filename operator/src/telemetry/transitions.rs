//! Pure: what a status transition measures for the metrics, the phase
//! counts of the Task cache, and the table of metrics in docs/operations.md.

use crds::{Phase, Reason, Task, TaskStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// `phase` label values of `longtask_tasks`: Pending (no phase yet, or
/// the phase Pending: waiting for upstreams), then the phases.
pub const PHASES: [&str; 5] = [
    "Pending",
    Phase::Queued.as_str(),
    Phase::Running.as_str(),
    Phase::Completed.as_str(),
    Phase::Failed.as_str(),
];

/// One measurement taken from a transition.
#[derive(Clone, Debug, PartialEq)]
pub enum Sample {
    /// Task created → Job started, seconds.
    Queued(f64),
    /// The Task reached a terminal phase.
    Finished {
        outcome: &'static str,
        /// The status reason; empty when it has none in the vocabulary.
        reason: &'static str,
        /// Job start → Task end, seconds.
        duration: Option<f64>,
        /// Job end → now (the terminal status is being written), seconds.
        job_to_task: Option<f64>,
    },
    /// The Task's pod began to wait for `reason` (one of [`WAITS`]).
    Waiting(&'static str),
    /// `spec.startTimeoutSeconds` failed the Task while its pod waited for
    /// `reason` (one of [`WAITS`]): the only way a Task fails with those.
    StartTimedOut(&'static str),
}

/// Why a pod cannot start: the reasons a Running Task waits with, and
/// the reasons a start timeout fails it with.
pub const WAITS: [Reason; 4] = [
    Reason::Unschedulable,
    Reason::ImagePullFailed,
    Reason::CreateContainerConfigError,
    Reason::PodRefused,
];

fn waits_for(status: &TaskStatus) -> Option<&'static str> {
    status
        .known_reason()
        .filter(|r| WAITS.contains(r))
        .map(Reason::as_str)
}

fn secs(from: &Time, to: &Time) -> f64 {
    let ms = to.0.as_millisecond() - from.0.as_millisecond();
    (ms as f64 / 1000.0).max(0.0)
}

/// What going from `prev` to `next` at `now` measured.
pub fn from_transition(
    task: &Task,
    prev: Option<&TaskStatus>,
    next: &TaskStatus,
    now: &Time,
) -> Vec<Sample> {
    let empty = TaskStatus::default();
    let prev = prev.unwrap_or(&empty);
    let mut out = Vec::new();
    // A Task with upstreams waited for them, not for a slot: its
    // creation-to-start time measures the graph, not the queue.
    if prev.job_uid.is_none()
        && next.job_uid.is_some()
        && task.spec.after.is_empty()
        && let (Some(created), Some(started)) =
            (task.metadata.creation_timestamp.as_ref(), &next.started_at)
    {
        out.push(Sample::Queued(secs(created, started)));
    }
    if next.phase == Some(Phase::Running)
        && prev.reason != next.reason
        && let Some(r) = waits_for(next)
    {
        out.push(Sample::Waiting(r));
    }
    if let Some(phase) = next.phase.filter(|p| p.is_terminal())
        && prev.phase != Some(phase)
    {
        let outcome = if phase == Phase::Completed {
            "completed"
        } else {
            "failed"
        };
        let duration = match (&next.started_at, &next.completed_at) {
            (Some(s), Some(c)) if next.job_uid.is_some() => Some(secs(s, c)),
            _ => None,
        };
        let job_to_task = match &next.completed_at {
            Some(c) if next.job_uid.is_some() => Some(secs(c, now)),
            _ => None,
        };
        out.push(Sample::Finished {
            outcome,
            reason: next.known_reason().map_or("", Reason::as_str),
            duration,
            job_to_task,
        });
        if let (Phase::Failed, Some(r)) = (phase, waits_for(next)) {
            out.push(Sample::StartTimedOut(r));
        }
    }
    out
}

/// How many Tasks are in each of [`PHASES`].
pub fn count_phases<'a>(tasks: impl Iterator<Item = &'a Task>) -> [(&'static str, usize); 5] {
    let mut n = [0usize; 5];
    for t in tasks {
        let i = match t.status.as_ref().and_then(|s| s.phase) {
            // Not started: no phase yet, or waiting for its upstreams.
            None | Some(Phase::Pending) => 0,
            Some(Phase::Queued) => 1,
            Some(Phase::Running) => 2,
            Some(Phase::Completed) => 3,
            Some(Phase::Failed) => 4,
        };
        n[i] += 1;
    }
    [0, 1, 2, 3, 4].map(|i| (PHASES[i], n[i]))
}

/// One registered metric, as docs/operations.md lists it.
#[derive(Clone, Debug)]
pub struct Doc {
    /// Full family name, e.g. `longtask_reconciles`.
    pub name: String,
    /// OpenMetrics type: counter, gauge, histogram.
    pub kind: String,
    pub labels: &'static [&'static str],
    pub help: &'static str,
}

/// A Markdown table of `docs`; counters are shown with their `_total`
/// sample name, as they appear in a scrape.
pub fn markdown_table(docs: &[Doc]) -> String {
    let mut out = String::from("| metric | type | labels | what |\n| --- | --- | --- | --- |\n");
    for d in docs {
        let shown = if d.kind == "counter" {
            format!("{}_total", d.name)
        } else {
            d.name.clone()
        };
        let labels: Vec<String> = d.labels.iter().map(|l| format!("`{l}`")).collect();
        out.push_str(&format!(
            "| `{shown}` | {} | {} | {} |\n",
            d.kind,
            labels.join(", "),
            d.help
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{TaskFixture, at};

    fn st(phase: Option<Phase>, job: bool, started: Option<i64>, done: Option<i64>) -> TaskStatus {
        TaskStatus {
            phase,
            job_uid: job.then(|| "j".into()),
            started_at: started.map(at),
            completed_at: done.map(at),
            reason: phase.map(|_| Reason::JobFailed.to_string()),
            ..TaskStatus::default()
        }
    }

    #[test]
    fn transitions() {
        let t = Task::test().created_at(90);
        let running = st(Some(Phase::Running), true, Some(100), None);
        let fin = |outcome, duration, job_to_task| Sample::Finished {
            outcome,
            reason: Reason::JobFailed.as_str(),
            duration,
            job_to_task,
        };
        let done = st(Some(Phase::Completed), true, Some(100), Some(160));
        let failed = st(Some(Phase::Failed), true, Some(100), Some(130));
        let invalid = st(Some(Phase::Failed), false, None, Some(95));
        let cases: Vec<(Option<&TaskStatus>, &TaskStatus, Vec<Sample>)> = vec![
            (None, &running, vec![Sample::Queued(10.0)]),
            (Some(&running), &running, vec![]),
            (
                Some(&running),
                &done,
                vec![fin("completed", Some(60.0), Some(40.0))],
            ),
            (
                Some(&running),
                &failed,
                vec![fin("failed", Some(30.0), Some(70.0))],
            ),
            (Some(&done), &done, vec![]),
            (None, &invalid, vec![fin("failed", None, None)]),
        ];
        for (i, (prev, next, want)) in cases.into_iter().enumerate() {
            assert_eq!(from_transition(&t, prev, next, &at(200)), want, "case {i}");
        }
        // Waiting for upstreams is no queueing: no queue latency.
        let waited = Task::test().created_at(90).after(&["a"]);
        assert_eq!(from_transition(&waited, None, &running, &at(200)), vec![]);
        // A reason outside the vocabulary is no label value.
        let junk = TaskStatus {
            reason: Some("EditedByHand".into()),
            ..failed.clone()
        };
        let got = from_transition(&t, Some(&running), &junk, &at(200));
        assert!(
            matches!(got.as_slice(), [Sample::Finished { reason: "", .. }]),
            "{got:?}"
        );
    }

    #[test]
    fn waits_and_start_timeouts_are_counted_once() {
        let t = Task::test().created_at(90).start_timeout(30);
        let with = |phase, reason: Reason| TaskStatus {
            reason: Some(reason.to_string()),
            ..st(Some(phase), true, Some(100), None)
        };
        let running = st(Some(Phase::Running), true, Some(100), None);
        let pulling = with(Phase::Running, Reason::ImagePullFailed);
        let unschedulable = with(Phase::Running, Reason::Unschedulable);
        let timed_out = TaskStatus {
            completed_at: Some(at(130)),
            ..with(Phase::Failed, Reason::ImagePullFailed)
        };
        let too_large = with(Phase::Failed, Reason::ResultTooLarge);
        let waits = |prev: &TaskStatus, next: &TaskStatus| -> Vec<Sample> {
            from_transition(&t, Some(prev), next, &at(200))
                .into_iter()
                .filter(|s| matches!(s, Sample::Waiting(_) | Sample::StartTimedOut(_)))
                .collect()
        };
        assert_eq!(
            waits(&running, &pulling),
            [Sample::Waiting("ImagePullFailed")]
        );
        assert_eq!(waits(&pulling, &pulling), []);
        assert_eq!(
            waits(&pulling, &unschedulable),
            [Sample::Waiting("Unschedulable")]
        );
        assert_eq!(
            waits(&pulling, &timed_out),
            [Sample::StartTimedOut("ImagePullFailed")]
        );
        assert_eq!(waits(&timed_out, &timed_out), []);
        assert_eq!(waits(&running, &too_large), []);
    }

    #[test]
    fn phases_are_counted() {
        let tasks = [
            Task::test(),
            Task::test().status(st(Some(Phase::Running), true, None, None)),
            Task::test().status(st(Some(Phase::Failed), true, None, None)),
            Task::test().status(st(Some(Phase::Failed), false, None, None)),
        ];
        let got = count_phases(tasks.iter());
        assert_eq!(
            got,
            [
                ("Pending", 1),
                ("Queued", 0),
                ("Running", 1),
                ("Completed", 0),
                ("Failed", 2)
            ]
        );
    }

    #[test]
    fn table_rows() {
        let docs = [
            Doc {
                name: "a_x".into(),
                kind: "counter".into(),
                labels: &["verb", "outcome"],
                help: "Things done",
            },
            Doc {
                name: "a_y".into(),
                kind: "gauge".into(),
                labels: &[],
                help: "Level",
            },
        ];
        assert_eq!(
            markdown_table(&docs),
            "| metric | type | labels | what |\n| --- | --- | --- | --- |\n| `a_x_total` | counter | `verb`, `outcome` | Things done |\n| `a_y` | gauge |  | Level |\n"
        );
    }
}
