//! `kubectl longtask delete --finished [--older-than D] [--keep N] [-A]
//! [--dry-run]`: deletes finished Tasks only (Completed or Failed), with
//! propagation Background so owner references take their Jobs, pods and
//! result ConfigMaps along.

use std::collections::BTreeMap;
use std::time::Duration;

use crds::Task;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, Preconditions};

use crate::cli::DeleteArgs;
use crate::client::{Error, Kube};
use crate::show;

pub async fn run(k: &Kube, a: DeleteArgs) -> Result<(), Error> {
    let (api, ns) = if a.all_namespaces {
        (k.all_tasks(), "")
    } else {
        (k.tasks(), k.namespace.as_str())
    };
    let tasks = api
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::api("list", "tasks", ns, None, e))?
        .items;
    let chosen = select(&tasks, Timestamp::now(), a.older_than, a.keep);
    if chosen.is_empty() {
        crate::print::note!("No finished tasks to delete.");
        return Ok(());
    }
    for t in chosen {
        let name = t.name_any();
        let ns = t.namespace().unwrap_or_default();
        let where_ = if a.all_namespaces {
            format!(" (namespace {ns})")
        } else {
            String::new()
        };
        if a.dry_run {
            crate::print::out(format!("task/{name} deleted (dry run){where_}\n"))?;
            continue;
        }
        let api = kube::Api::<Task>::namespaced(k.client.clone(), &ns);
        match api.delete(&name, &params(t)).await {
            Ok(_) => crate::print::out(format!("task/{name} deleted{where_}\n"))?,
            // Someone else deleted it meanwhile: the goal is reached.
            Err(kube::Error::Api(s)) if s.code == 404 && s.reason == "NotFound" => {}
            // The precondition failed: a new Task of that name, not the
            // finished one listed, which is gone.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                crate::print::note!(
                    "task/{name} was not deleted{where_}: it was deleted and created again since it was listed"
                );
            }
            Err(e) => return Err(Error::api("delete", "tasks", &ns, Some(&name), e)),
        }
    }
    Ok(())
}

/// Deletes exactly the Task listed (its UID), so that a Task created
/// again under the same name in between is left alone; Background
/// propagation takes its Job, pods and result along.
fn params(t: &Task) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: t.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    }
}

/// When a finished Task finished: status.completedAt, else its creation.
fn finished_at(t: &Task) -> Option<&Time> {
    t.status
        .as_ref()
        .and_then(|s| s.completed_at.as_ref())
        .or(t.metadata.creation_timestamp.as_ref())
}

/// The finished Tasks to delete: per namespace, all but the `keep` newest
/// finished ones, and of those only the ones finished longer than
/// `older_than` ago. Running, queued and unstarted Tasks are never chosen.
/// In namespace order, oldest first.
pub fn select(
    tasks: &[Task],
    now: Timestamp,
    older_than: Option<Duration>,
    keep: Option<usize>,
) -> Vec<&Task> {
    let mut by_ns: BTreeMap<String, Vec<&Task>> = BTreeMap::new();
    for t in tasks.iter().filter(|t| t.is_terminal()) {
        by_ns
            .entry(t.namespace().unwrap_or_default())
            .or_default()
            .push(t);
    }
    let min_age = older_than.map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let mut out = Vec::new();
    for (_, mut finished) in by_ns {
        // Newest first; equal times by name, so the choice is stable.
        finished.sort_by(|a, b| {
            let key = |t: &Task| finished_at(t).map(|f| f.0);
            key(b)
                .cmp(&key(a))
                .then_with(|| a.name_any().cmp(&b.name_any()))
        });
        let mut gone: Vec<&Task> = finished
            .into_iter()
            .skip(keep.unwrap_or(0))
            .filter(|t| {
                min_age.is_none_or(|min| {
                    finished_at(t).is_some_and(|f| show::seconds_since(now, f) > min)
                })
            })
            .collect();
        gone.reverse();
        out.extend(gone);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{NOW, now, task};
    use crds::Phase;

    fn names(chosen: &[&Task]) -> Vec<String> {
        chosen.iter().map(|t| t.name_any()).collect()
    }

    const DAY: i64 = 86_400;

    fn tasks() -> Vec<Task> {
        vec![
            task("running")
                .phase(Phase::Running)
                .created(NOW - 30 * DAY)
                .build(),
            task("queued")
                .phase(Phase::Queued)
                .created(NOW - 30 * DAY)
                .build(),
            task("new").created(NOW - 30 * DAY).build(),
            task("old-ok")
                .phase(Phase::Completed)
                .completed(NOW - 10 * DAY)
                .build(),
            task("old-failed")
                .phase(Phase::Failed)
                .completed(NOW - 8 * DAY)
                .build(),
            task("recent")
                .phase(Phase::Completed)
                .completed(NOW - DAY)
                .build(),
            // No completedAt: its creation (NOW - 1h) counts.
            task("no-time").phase(Phase::Failed).build(),
            task("elsewhere")
                .namespace("other")
                .phase(Phase::Completed)
                .completed(NOW - 9 * DAY)
                .build(),
        ]
    }

    #[test]
    fn deletes_only_the_listed_task() {
        let t = task("old-ok").phase(Phase::Completed).build();
        let p = params(&t);
        let uid = p.preconditions.and_then(|c| c.uid);
        assert_eq!(uid, t.metadata.uid);
        assert!(uid.is_some());
    }

    #[test]
    fn only_finished_tasks_oldest_first_per_namespace() {
        let t = tasks();
        assert_eq!(
            names(&select(&t, now(), None, None)),
            ["old-ok", "old-failed", "recent", "no-time", "elsewhere"]
        );
    }

    #[test]
    fn older_than_counts_from_completion() {
        let t = tasks();
        let week = Some(Duration::from_secs(7 * 86_400));
        assert_eq!(
            names(&select(&t, now(), week, None)),
            ["old-ok", "old-failed", "elsewhere"]
        );
    }

    #[test]
    fn keep_spares_the_newest_per_namespace() {
        let t = tasks();
        assert_eq!(
            names(&select(&t, now(), None, Some(1))),
            ["old-ok", "old-failed", "recent"]
        );
        assert_eq!(
            names(&select(&t, now(), None, Some(10))),
            Vec::<String>::new()
        );
        // Keep applies among all finished Tasks, then the age filter.
        let week = Some(Duration::from_secs(7 * 86_400));
        assert_eq!(names(&select(&t, now(), week, Some(3))), ["old-ok"]);
    }
}
