//! Pure: the Tasks that waited longest, one per namespace, for the gauges
//! counted from the Task cache at each scrape. One series per namespace
//! names its Task, so an alert can say which Task to look at while the
//! series stay bounded by the namespaces, not the Tasks.

use std::collections::BTreeMap;

use crds::{Phase, Task};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

/// The Task of a namespace that has waited longest, and for how long.
#[derive(Clone, Debug, PartialEq)]
pub struct Oldest {
    pub namespace: String,
    pub task: String,
    pub seconds: f64,
}

/// Per namespace: the Task not started yet (no phase, or Queued) created
/// longest ago, and the Running Task whose last progress report is the
/// oldest (only Tasks that report progress).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Backlog {
    pub queued: Vec<Oldest>,
    pub stalled: Vec<Oldest>,
}

fn since(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time, now: Timestamp) -> f64 {
    let ms = now.as_millisecond() - t.0.as_millisecond();
    (ms as f64 / 1000.0).max(0.0)
}

/// Keeps, per namespace, the longest wait; equal waits keep the first name.
fn keep(into: &mut BTreeMap<String, (f64, String)>, ns: String, task: String, secs: f64) {
    let e = into.entry(ns).or_insert((secs, task.clone()));
    if secs > e.0 || (secs == e.0 && task < e.1) {
        *e = (secs, task);
    }
}

fn flatten(m: BTreeMap<String, (f64, String)>) -> Vec<Oldest> {
    m.into_iter()
        .map(|(namespace, (seconds, task))| Oldest {
            namespace,
            task,
            seconds,
        })
        .collect()
}

/// The [`Backlog`] of `tasks` at `now`.
pub fn backlog<'a>(tasks: impl Iterator<Item = &'a Task>, now: Timestamp) -> Backlog {
    let mut queued = BTreeMap::new();
    let mut stalled = BTreeMap::new();
    for t in tasks {
        let status = t.status.as_ref();
        let phase = status.and_then(|s| s.phase);
        let ns = t.namespace().unwrap_or_default();
        match phase {
            None | Some(Phase::Queued) => {
                if let Some(c) = &t.metadata.creation_timestamp {
                    keep(&mut queued, ns, t.name_any(), since(c, now));
                }
            }
            Some(Phase::Running) => {
                let reported = status
                    .and_then(|s| s.progress.as_ref())
                    .and_then(|p| p.updated_at.as_ref());
                if let Some(at) = reported {
                    keep(&mut stalled, ns, t.name_any(), since(at, now));
                }
            }
            // Waiting for upstreams (`spec.after`) is waiting for work,
            // not for capacity: no backlog.
            Some(Phase::Pending | Phase::Completed | Phase::Failed) => {}
        }
    }
    Backlog {
        queued: flatten(queued),
        stalled: flatten(stalled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{TaskFixture, at};
    use crds::{TaskProgress, TaskStatus};

    fn phase(p: Phase) -> TaskStatus {
        TaskStatus {
            phase: Some(p),
            ..TaskStatus::default()
        }
    }

    fn reported(s: i64) -> TaskStatus {
        TaskStatus {
            progress: Some(TaskProgress {
                percent: 10,
                display: "10%".into(),
                updated_at: Some(at(s)),
                ..TaskProgress::default()
            }),
            ..phase(Phase::Running)
        }
    }

    #[test]
    fn the_longest_wait_of_each_namespace_names_its_task() {
        let tasks = [
            Task::test().in_ns("a").named("new").created_at(90),
            Task::test().in_ns("a").named("old").created_at(10),
            Task::test()
                .in_ns("a")
                .named("queued")
                .created_at(50)
                .status(phase(Phase::Queued)),
            Task::test().in_ns("b").named("b1").created_at(70),
            // Started, finished: not waiting.
            Task::test()
                .in_ns("c")
                .created_at(0)
                .status(phase(Phase::Running)),
            Task::test()
                .in_ns("c")
                .created_at(0)
                .status(phase(Phase::Completed)),
            // Progress: a stale report and a fresh one; a finished Task's old one.
            Task::test()
                .in_ns("a")
                .named("slow")
                .created_at(0)
                .status(reported(40)),
            Task::test()
                .in_ns("a")
                .named("busy")
                .created_at(0)
                .status(reported(95)),
            Task::test()
                .in_ns("b")
                .named("done")
                .created_at(0)
                .status(TaskStatus {
                    phase: Some(Phase::Completed),
                    ..reported(1)
                }),
        ];
        let got = backlog(tasks.iter(), at(100).0);
        let o = |ns: &str, task: &str, seconds| Oldest {
            namespace: ns.into(),
            task: task.into(),
            seconds,
        };
        assert_eq!(got.queued, vec![o("a", "old", 90.0), o("b", "b1", 30.0)]);
        assert_eq!(got.stalled, vec![o("a", "slow", 60.0)]);
        assert_eq!(backlog([].iter(), at(100).0), Backlog::default());
    }

    #[test]
    fn equal_waits_name_the_first_task_and_clocks_ahead_count_zero() {
        let tasks = [
            Task::test().named("z").created_at(10),
            Task::test().named("m").created_at(10),
            Task::test().in_ns("later").named("x").created_at(200),
        ];
        let got = backlog(tasks.iter(), at(100).0);
        let named: Vec<(&str, &str, f64)> = got
            .queued
            .iter()
            .map(|o| (o.namespace.as_str(), o.task.as_str(), o.seconds))
            .collect();
        assert_eq!(named, [("later", "x", 0.0), ("ns", "m", 90.0)]);
    }
}
