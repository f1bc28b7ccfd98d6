//! `kubectl longtask describe NAME`: the spec in brief, the status fields,
//! the conditions, the Task's Events and its log tail, on one screen.

use std::fmt::Write;

use crds::outputs::{OutputsStatus, human_size};
use crds::{Task, TaskStatus};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use crate::cli::NameArg;
use crate::client::{Error, Kube};
use crate::safe::visible;
use crate::show;

pub async fn run(k: &Kube, a: NameArg) -> Result<(), Error> {
    let task = k.task(&a.name).await?;
    // Events are a help, not the point: without them, say why and go on.
    let events = Api::<Event>::namespaced(k.client.clone(), &k.namespace)
        .list(&ListParams::default().fields(&format!(
            "involvedObject.name={},involvedObject.kind={}",
            a.name,
            crds::names::KIND
        )))
        .await
        .map(|l| l.items)
        .map_err(|e| Error::api("list", "events", &k.namespace, None, e).to_string());
    crate::print::out(render(&task, events, Timestamp::now()))?;
    Ok(())
}

/// Longest result shown inline; a longer one is left to `result`.
const INLINE_RESULT: usize = 200;

fn when(t: Option<&Time>, now: Timestamp) -> String {
    t.map(|t| format!("{} ({} ago)", t.0, show::human(show::seconds_since(now, t))))
        .unwrap_or_else(|| "<none>".to_owned())
}

/// The whole screen. `events` is the list, or why it could not be read.
pub fn render(t: &Task, events: Result<Vec<Event>, String>, now: Timestamp) -> String {
    let mut o = String::new();
    let s = t.status.clone().unwrap_or_default();
    let name = t.name_any();
    spec_fields(&mut o, t, &name, now);
    status_fields(&mut o, &s, now);
    if let Some(r) = &s.result {
        result_fields(&mut o, &s, r, &name);
    }
    if let Some(outputs) = &s.outputs {
        outputs_section(&mut o, &name, outputs);
    }
    conditions_section(&mut o, &s, now);
    events_section(&mut o, t, events, now);
    o.push_str("Log Tail:\n");
    match s.log_tail.as_deref().filter(|l| !l.is_empty()) {
        None => o.push_str("  <none yet: kept once a run ends>\n"),
        Some(tail) => indent(&mut o, tail),
    }
    o
}

/// One `Key:   value` line, left out when the value is empty.
fn field(o: &mut String, k: &str, v: &str) {
    if !v.is_empty() {
        let _ = writeln!(o, "{:<13}{}", format!("{k}:"), visible(v));
    }
}

/// The Task's identity and its spec in brief.
fn spec_fields(o: &mut String, t: &Task, name: &str, now: Timestamp) {
    field(o, "Name", name);
    field(o, "Namespace", &t.namespace().unwrap_or_default());
    field(
        o,
        "Created",
        &when(t.metadata.creation_timestamp.as_ref(), now),
    );
    if let Some(origin) = t.labels().get(crds::names::labels::RERUN_OF) {
        field(o, "Rerun of", origin);
    }
    let mut command = t.spec.command.clone();
    command.extend(t.spec.args.iter().cloned());
    field(o, "Command", &command.join(" "));
    if t.spec.is_sharded() {
        field(
            o,
            "Shards",
            &format!("{} ({} at once)", t.spec.shards, t.spec.shard_parallelism()),
        );
    }
    let after: Vec<String> = t
        .spec
        .after
        .iter()
        .map(|u| match u.condition {
            crds::UpstreamCondition::Succeeded => u.name.clone(),
            c => format!("{} ({})", u.name, c.as_str()),
        })
        .collect();
    field(o, "After", &after.join(", "));
    if t.spec.cancel {
        field(o, "Cancel", "requested");
    }
}

/// The status fields, from the phase to the shards' counts.
fn status_fields(o: &mut String, s: &TaskStatus, now: Timestamp) {
    field(o, "Phase", s.phase.map_or("<not started>", |p| p.as_str()));
    field(o, "Reason", s.reason.as_deref().unwrap_or_default());
    field(o, "Message", s.message.as_deref().unwrap_or_default());
    field(
        o,
        "Attempts",
        &s.attempts.map(|a| a.to_string()).unwrap_or_default(),
    );
    if let Some(n) = s.disruptions {
        // Pods preempted, evicted or drained: no retry used (docs/retries.md).
        let last = s.last_disruption.as_ref().map_or(String::new(), |d| {
            let ago = d.at.as_ref().map_or(String::new(), |t| {
                format!(", {} ago", show::human(show::seconds_since(now, t)))
            });
            format!(" (last: pod {} {}{ago})", d.pod, d.reason)
        });
        field(o, "Disruptions", &format!("{n}{last}"));
    }
    field(
        o,
        "Exit Code",
        &s.exit_code.map(|c| c.to_string()).unwrap_or_default(),
    );
    if let Some(p) = &s.progress {
        let msg = p.message.as_deref().unwrap_or_default();
        field(o, "Progress", format!("{} {msg}", p.display).trim_end());
    }
    field(o, "Job", s.job_name.as_deref().unwrap_or_default());
    field(o, "Pod", s.pod_name.as_deref().unwrap_or_default());
    if s.started_at.is_some() {
        field(o, "Started", &when(s.started_at.as_ref(), now));
    }
    if s.completed_at.is_some() {
        field(o, "Completed", &when(s.completed_at.as_ref(), now));
    }
    if let Some(c) = &s.shards {
        field(
            o,
            "Shard Counts",
            &format!(
                "{} succeeded, {} failed, {} active",
                c.succeeded, c.failed, c.active
            ),
        );
    }
}

/// The result as the status holds it (inline when short and whole) and
/// its digest.
fn result_fields(o: &mut String, s: &TaskStatus, r: &str, name: &str) {
    let whole = s.result_truncated != Some(true);
    let shown = if whole && r.len() <= INLINE_RESULT && !r.trim_end().contains('\n') {
        r.trim_end().to_owned()
    } else {
        format!(
            "{}{} bytes in the status (kubectl longtask result {name} prints all of it)",
            if whole { "" } else { "first " },
            r.len()
        )
    };
    field(o, "Result", &shown);
    field(o, "Digest", s.result_digest.as_deref().unwrap_or_default());
}

fn conditions_section(o: &mut String, s: &TaskStatus, now: Timestamp) {
    o.push_str("Conditions:\n");
    if s.conditions.is_empty() {
        o.push_str("  <none>\n");
    } else {
        let rows: Vec<Vec<String>> = s
            .conditions
            .iter()
            .map(|c| {
                vec![
                    c.type_.clone(),
                    c.status.clone(),
                    c.reason.clone(),
                    show::human(show::seconds_since(now, &c.last_transition_time)),
                    c.message.clone(),
                ]
            })
            .collect();
        indent(
            o,
            &show::table(&["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"], &rows),
        );
    }
}

fn events_section(o: &mut String, t: &Task, events: Result<Vec<Event>, String>, now: Timestamp) {
    o.push_str("Events:\n");
    match events {
        Err(why) => {
            let _ = writeln!(o, "  <cannot list: {why}>");
        }
        Ok(ev) => {
            let rows = event_rows(t, ev, now);
            if rows.is_empty() {
                o.push_str("  <none>\n");
            } else {
                indent(
                    o,
                    &show::table(&["TYPE", "REASON", "AGE", "FROM", "MESSAGE"], &rows),
                );
            }
        }
    }
}

/// Most output files `describe` lists; `result -o DIR` fetches them all.
const LISTED_OUTPUTS: usize = 20;

/// The outputs: count, size and where they are, the first files with
/// their size and digest, and how to download them.
fn outputs_section(o: &mut String, name: &str, outputs: &OutputsStatus) {
    let mut line = crate::outputs::summary(Some(outputs));
    if !outputs.location.is_empty() {
        line.push_str(&format!(" in {}", outputs.location));
    }
    if !outputs.store.is_empty() {
        line.push_str(&format!(" (store {})", outputs.store));
    }
    let _ = writeln!(o, "{:<13}{}", "Outputs:", visible(&line));
    if outputs.files.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = outputs
        .files
        .iter()
        .take(LISTED_OUTPUTS)
        .map(|f| {
            let size = u64::try_from(f.size).unwrap_or_default();
            vec![f.name.clone(), human_size(size), f.digest.clone()]
        })
        .collect();
    indent(o, &show::table(&["NAME", "SIZE", "DIGEST"], &rows));
    let more = outputs.files.len().saturating_sub(LISTED_OUTPUTS);
    if more > 0 {
        let _ = writeln!(o, "  ... and {more} more");
    }
    let _ = writeln!(
        o,
        "{:<13}kubectl longtask result {} -o DIR (the links are in the Secret {})",
        "Download:",
        visible(name),
        visible(&crds::outputs::secret_name(name))
    );
}

fn indent(o: &mut String, text: &str) {
    for line in visible(text).lines() {
        let _ = writeln!(o, "  {line}");
    }
}

/// This Task's Events (not those of an earlier Task of the same name),
/// oldest first, as TYPE, REASON, AGE, FROM, MESSAGE.
fn event_rows(t: &Task, mut ev: Vec<Event>, now: Timestamp) -> Vec<Vec<String>> {
    let uid = t.metadata.uid.as_deref();
    ev.retain(|e| uid.is_none() || e.involved_object.uid.as_deref() == uid);
    let last = |e: &Event| {
        e.last_timestamp
            .clone()
            .or_else(|| e.event_time.as_ref().map(|m| Time(m.0)))
            .or_else(|| e.metadata.creation_timestamp.clone())
    };
    ev.sort_by_key(|e| last(e).map(|t| t.0));
    ev.iter()
        .map(|e| {
            let age = last(e)
                .map(|t| show::human(show::seconds_since(now, &t)))
                .unwrap_or_default();
            let count = e.count.filter(|c| *c > 1);
            let from = e
                .source
                .as_ref()
                .and_then(|s| s.component.clone())
                .or_else(|| e.reporting_component.clone())
                .unwrap_or_default();
            vec![
                e.type_.clone().unwrap_or_default(),
                e.reason.clone().unwrap_or_default(),
                match count {
                    Some(c) => format!("{age} (x{c})"),
                    None => age,
                },
                from,
                e.message.clone().unwrap_or_default().trim_end().to_owned(),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{NOW, at, now, output, task};
    use crds::Phase;
    use crds::conditions::{reasons, types};
    use k8s_openapi::api::core::v1::{EventSource, ObjectReference};

    fn event(uid: &str, reason: &str, secs_ago: i64) -> Event {
        Event {
            involved_object: ObjectReference {
                uid: Some(uid.into()),
                ..ObjectReference::default()
            },
            type_: Some("Normal".into()),
            reason: Some(reason.into()),
            message: Some(format!("{reason} happened")),
            last_timestamp: Some(Time(at(NOW - secs_ago))),
            source: Some(EventSource {
                component: Some("longtask-operator".into()),
                host: None,
            }),
            ..Event::default()
        }
    }

    #[test]
    fn one_screen_with_status_conditions_events_and_log_tail() {
        let mut t = task("train")
            .phase(Phase::Failed)
            .reason(reasons::BACKOFF_LIMIT_EXCEEDED, "exit code 3")
            .attempts(2)
            .completed(NOW - 60)
            .result("partial", false, "sha256:ab")
            .condition(
                types::FAILED,
                "True",
                reasons::BACKOFF_LIMIT_EXCEEDED,
                "exit code 3",
            )
            .build();
        if let Some(s) = t.status.as_mut() {
            s.log_tail = Some("step 1\nboom\n".into());
            s.disruptions = Some(1);
            s.last_disruption = Some(crds::Disruption {
                pod: "train-x7k2p".into(),
                reason: "EvictionByEvictionAPI".into(),
                message: "Eviction API: evicting".into(),
                at: Some(Time(at(NOW - 90))),
            });
        }
        let events = vec![
            event("uid-train", "Failed", 60),
            event("uid-old-train", "Stale", 600),
            event("uid-train", "JobCreated", 120),
        ];
        let out = render(&t, Ok(events), now());
        for want in [
            "Name:        train\n",
            "Phase:       Failed\n",
            "Reason:      BackoffLimitExceeded\n",
            "Attempts:    2\n",
            "Disruptions: 1 (last: pod train-x7k2p EvictionByEvictionAPI, 90s ago)\n",
            "Result:      partial\n",
            "Digest:      sha256:ab\n",
            "  TYPE     STATUS   REASON                 AGE   MESSAGE\n",
            "  Failed   True     BackoffLimitExceeded   30s   exit code 3\n",
            "Log Tail:\n  step 1\n  boom\n",
        ] {
            assert!(out.contains(want), "{want:?} in\n{out}");
        }
        let job = out.find("JobCreated").expect("event");
        assert!(
            job < out.find("Failed happened").expect("event"),
            "oldest first\n{out}"
        );
        assert!(!out.contains("Stale"), "another Task's events\n{out}");
    }

    /// Issue 24: every string a program or a user wrote reaches the screen
    /// with its control characters made visible.
    #[test]
    fn hostile_strings_are_shown_not_obeyed() {
        const OSC52: &str = "\u{1b}]52;c;ZXZpbA==\u{7}";
        let mut t = task("t")
            .phase(Phase::Failed)
            .reason(reasons::BACKOFF_LIMIT_EXCEEDED, &format!("msg {OSC52}"))
            .result(&format!("{OSC52}\u{9b}2J"), false, "sha256:ab")
            .condition(types::FAILED, "True", "X", "cond \u{1b}[2J")
            .build();
        if let Some(s) = t.status.as_mut() {
            s.log_tail = Some("tail \u{1b}[8mhidden\r\n".into());
            s.progress = Some(crds::TaskProgress {
                percent: 5,
                message: Some("\u{1b}]0;title\u{7}".into()),
                display: "5%".into(),
                ..crds::TaskProgress::default()
            });
        }
        let mut ev = event("uid-t", "Note", 1);
        ev.message = Some(format!("event {OSC52}\u{85}end"));
        let out = render(&t, Ok(vec![ev]), now());
        let bad: Vec<char> = out
            .chars()
            .filter(|c| c.is_control() && *c != '\n')
            .collect();
        assert!(bad.is_empty(), "{bad:?} in\n{out}");
        for want in [
            "Message:     msg ^[]52;c;ZXZpbA==^G\n",
            "Result:      ^[]52;c;ZXZpbA==^G\\u{9b}2J\n",
            "Progress:    5% ^[]0;title^G\n",
            "cond ^[[2J",
            "event ^[]52;c;ZXZpbA==^G\\u{85}end",
            "  tail ^[[8mhidden\\r\n",
        ] {
            assert!(out.contains(want), "{want:?} in\n{out}");
        }
    }

    #[test]
    fn outputs_are_listed_with_size_and_digest_up_to_a_limit() {
        let files: Vec<_> = (0..23)
            .map(|i| output(&format!("shard-{i:02}.bin"), &vec![7; 2048]))
            .collect();
        let t = task("train")
            .phase(Phase::Completed)
            .outputs(&files)
            .build();
        let out = render(&t, Ok(vec![]), now());
        let digest = crds::result::digest(&[7; 2048]);
        for want in [
            "Outputs:     23 files, 46.0Ki in s3://bucket/lt/ns/t/uid/ (store default)\n",
            "  NAME           SIZE    DIGEST\n",
            &format!("  shard-00.bin   2.0Ki   {digest}\n"),
            &format!("  shard-19.bin   2.0Ki   {digest}\n"),
            "  ... and 3 more\n",
            "Download:    kubectl longtask result train -o DIR (the links are in the Secret train-outputs)\n",
        ] {
            assert!(out.contains(want), "{want:?} in\n{out}");
        }
        assert!(!out.contains("shard-20.bin"), "{out}");
        let none = task("t").phase(Phase::Completed).outputs(&[]).build();
        let out = render(&none, Ok(vec![]), now());
        assert!(out.contains("Outputs:     0 files, 0 in"), "{out}");
        assert!(!out.contains("Download:"), "{out}");
    }

    #[test]
    fn missing_parts_say_so() {
        let out = render(&task("new").build(), Err("forbidden".into()), now());
        assert!(out.contains("Phase:       <not started>"), "{out}");
        assert!(out.contains("Conditions:\n  <none>\n"), "{out}");
        assert!(out.contains("<cannot list: forbidden>"), "{out}");
        assert!(out.contains("Log Tail:\n  <none yet"), "{out}");
        assert!(!out.contains("After:"), "{out}");
    }

    #[test]
    fn upstreams_are_listed_with_their_condition() {
        let mut t = task("c").after(&["a", "b"]).build();
        t.spec.after[1].condition = crds::UpstreamCondition::Finished;
        let out = render(&t, Ok(Vec::new()), now());
        assert!(out.contains("After:       a, b (Finished)\n"), "{out}");
    }
}
