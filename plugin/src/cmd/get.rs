//! `kubectl longtask get [NAMES] [-A]` (alias `list`): a table like
//! `kubectl get`, with what a Task waits for (`task::waiting`): its queue
//! position while Queued for a slot, else the Waiting condition's reason.
//! CronTasks follow in a table of their own, with their next run.

use crds::cron::CronTask;
use crds::{Phase, Task};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::ListParams;

use crate::cli::GetArgs;
use crate::client::{Error, Kube};
use crate::show;
use crate::task::cron;
use crate::task::waiting::waiting;

pub async fn run(k: &Kube, a: GetArgs) -> Result<(), Error> {
    let mut tasks = Vec::new();
    let mut crons = Vec::new();
    let mut missing = 0;
    if a.names.is_empty() {
        let (api, ns) = if a.all_namespaces {
            (k.all_tasks(), "")
        } else {
            (k.tasks(), k.namespace.as_str())
        };
        tasks = api
            .list(&ListParams::default())
            .await
            .map_err(|e| Error::api("list", "tasks", ns, None, e))?
            .items;
        tasks.sort_by_key(|t| (t.namespace(), t.name_any()));
        // CronTasks beside them, as `kubectl get all` shows several kinds;
        // someone who may not list them sees the Tasks alone.
        crons = cron::list_all(k, a.all_namespaces)
            .await
            .unwrap_or_default();
    } else {
        for n in &a.names {
            match k.task(n).await {
                Ok(t) => tasks.push(t),
                Err(e @ Error::NotFound { .. }) => match cron::get_opt(k, n).await? {
                    Some(c) => crons.push(c),
                    None => {
                        crate::print::note!("error: {e}");
                        missing += 1;
                    }
                },
                Err(e) => return Err(e),
            }
        }
    }
    let now = Timestamp::now();
    if tasks.is_empty() && crons.is_empty() && missing == 0 {
        match a.all_namespaces {
            true => crate::print::note!("No tasks found."),
            false => crate::print::note!("No tasks found in {} namespace.", k.namespace),
        }
    }
    crate::print::out(tables(&tasks, &crons, now, a.all_namespaces))?;
    match missing {
        0 => Ok(()),
        _ => Err(Error::Exit(1)),
    }
}

/// The Tasks' table, then the CronTasks' (with their next run) after a
/// blank line; either is left out when it has no rows.
pub fn tables(tasks: &[Task], crons: &[CronTask], now: Timestamp, all_namespaces: bool) -> String {
    let mut parts = Vec::new();
    if !tasks.is_empty() {
        parts.push(table(tasks, now, all_namespaces));
    }
    if !crons.is_empty() {
        parts.push(cron::table(crons, all_namespaces, now));
    }
    parts.join("\n")
}

/// The table `get` prints (a NAMESPACE column first with `-A`).
pub fn table(tasks: &[Task], now: Timestamp, all_namespaces: bool) -> String {
    let mut header = vec![
        "NAME", "PHASE", "REASON", "ATTEMPTS", "OUTPUTS", "AGE", "WAITING",
    ];
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| {
            let mut r = row(t, now);
            if all_namespaces {
                r.insert(0, t.namespace().unwrap_or_default());
            }
            r
        })
        .collect();
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    show::table(&header, &rows)
}

/// NAME, PHASE, REASON, ATTEMPTS, OUTPUTS, AGE, WAITING of one Task.
pub fn row(t: &Task, now: Timestamp) -> Vec<String> {
    let s = t.status.clone().unwrap_or_default();
    let age = t
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|c| show::human(show::seconds_since(now, c)))
        .unwrap_or_else(|| "<unknown>".to_owned());
    vec![
        t.name_any(),
        s.phase.map(Phase::as_str).unwrap_or_default().to_owned(),
        s.reason.unwrap_or_default(),
        s.attempts.map(|a| a.to_string()).unwrap_or_default(),
        crate::outputs::summary(s.outputs.as_ref()),
        age,
        waiting(t),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{NOW, now, output, task};
    use crds::conditions::{reasons, types};

    #[test]
    fn rows_show_phase_reason_attempts_age_and_waiting() {
        let queued = task("q")
            .created(NOW - 200)
            .phase(Phase::Queued)
            .reason(
                reasons::QUEUE_FULL,
                "position 3 in the queue: at most 2 Tasks may be active at once (--max-active-tasks)",
            )
            .condition(types::WAITING, "True", reasons::QUEUE_FULL, "position 3 in the queue: …")
            .queue_position(3)
            .build();
        assert_eq!(
            row(&queued, now()),
            ["q", "Queued", "QueueFull", "", "", "3m20s", "position 3"]
        );
        let stuck = task("s")
            .phase(Phase::Running)
            .reason(reasons::JOB_CREATED, "")
            .attempts(1)
            .condition(
                types::WAITING,
                "True",
                reasons::UNSCHEDULABLE,
                "0/1 nodes are available",
            )
            .build();
        assert_eq!(
            row(&stuck, now()),
            [
                "s",
                "Running",
                "JobCreated",
                "1",
                "",
                "60m",
                "Unschedulable"
            ]
        );
        let done = task("d")
            .phase(Phase::Completed)
            .reason(reasons::SUCCEEDED, "")
            .attempts(2)
            .condition(types::WAITING, "False", reasons::NOT_WAITING, "")
            .build();
        assert_eq!(row(&done, now())[6], "");
        assert_eq!(
            row(&task("new").build(), now())[1..],
            ["", "", "", "", "60m", ""]
        );
    }

    #[test]
    fn outputs_show_their_count_and_total_size() {
        let t = task("train")
            .phase(Phase::Completed)
            .outputs(&[output("model.bin", &[0; 3000]), output("log.txt", b"ok")])
            .build();
        assert_eq!(row(&t, now())[4], "2 files, 2.9Ki");
        let out = table(&[t], now(), false);
        let head = out.lines().next().unwrap_or_default();
        assert!(head.contains("ATTEMPTS   OUTPUTS          AGE"), "{out}");
    }

    #[test]
    fn suspended_shows_its_reason() {
        let t = task("k")
            .phase(Phase::Queued)
            .reason(reasons::SUSPENDED, "the Job is suspended")
            .condition(
                types::WAITING,
                "True",
                reasons::SUSPENDED,
                "the Job is suspended",
            )
            .build();
        assert_eq!(waiting(&t), "Suspended");
    }

    #[test]
    fn all_namespaces_adds_a_column() {
        let t = [task("a").namespace("team-1").build()];
        let out = table(&t, now(), true);
        assert!(out.starts_with("NAMESPACE   NAME   PHASE"), "{out}");
        assert!(
            out.lines()
                .nth(1)
                .is_some_and(|l| l.starts_with("team-1      a ")),
            "{out}"
        );
    }

    #[test]
    fn crontasks_follow_the_tasks_in_their_own_table() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().expect("now");
        let cron: CronTask = serde_json::from_value(serde_json::json!({
            "apiVersion": "longtask.dev/v1alpha1", "kind": "CronTask",
            "metadata": {"name": "nightly", "namespace": "ns"},
            "spec": {"schedule": "0 3 * * *", "taskTemplate": {"spec": {"command": ["true"]}}},
            "status": {"nextScheduleTimes": ["2026-01-01T03:00:00Z"]}
        }))
        .expect("cron");
        let only = tables(&[], std::slice::from_ref(&cron), now, false);
        assert!(only.starts_with("NAME"), "{only}");
        assert!(only.contains("2026-01-01T03:00:00Z (in 3h)"), "{only}");
        let task = [task("run").phase(Phase::Running).build()];
        let both = tables(&task, &[cron], now, false);
        let (first, second) = both.split_once("\n\n").expect("a blank line between");
        assert!(
            first.contains("PHASE") && second.contains("SCHEDULE"),
            "{both}"
        );
    }
}
