use crate::telemetry::metrics::*;
use crate::telemetry::transitions::Sample;

const BEGIN: &str = "<!-- metrics:begin -->\n";
const END: &str = "<!-- metrics:end -->";

/// The metrics table in docs/operations.md must be what the registry
/// renders. To regenerate it: `LONGTASK_UPDATE_DOCS=1 cargo test -p
/// longtask-operator readme` (`LONGTASK_UPDATE_README=1` works too).
#[test]
fn readme_lists_every_metric() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/operations.md");
    let readme = std::fs::read_to_string(path).expect("read docs/operations.md");
    let table = Metrics::new().markdown_table();
    let (Some(b), Some(e)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("docs/operations.md has no {BEGIN:?} … {END:?} section");
    };
    let current = &readme[b + BEGIN.len()..e];
    if current == table {
        return;
    }
    if ["LONGTASK_UPDATE_DOCS", "LONGTASK_UPDATE_README"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
    {
        let updated = format!("{}{table}{}", &readme[..b + BEGIN.len()], &readme[e..]);
        std::fs::write(path, updated).expect("write docs/operations.md");
        return;
    }
    panic!(
        "docs/operations.md's metrics table is stale; run `LONGTASK_UPDATE_DOCS=1 cargo test -p longtask-operator readme`.\nwant:\n{table}"
    );
}

#[test]
fn transitions_move_the_counters() {
    let m = Metrics::new();
    m.record(
        "team-a",
        &[
            Sample::Queued(1.5),
            Sample::Finished {
                outcome: "completed",
                reason: "Succeeded",
                duration: Some(3.0),
                job_to_task: Some(0.5),
            },
            Sample::Waiting("ImagePullFailed"),
            Sample::StartTimedOut("ImagePullFailed"),
        ],
    );
    m.set_leader_transitions(3);
    m.event_published("Started");
    let text = m.encode();
    for want in [
        "longtask_task_results_total{namespace=\"team-a\",outcome=\"completed\",reason=\"Succeeded\"} 1",
        "longtask_task_waits_total{namespace=\"team-a\",reason=\"ImagePullFailed\"} 1",
        "longtask_start_timeouts_total{namespace=\"team-a\",reason=\"ImagePullFailed\"} 1",
        "longtask_leader_transitions 3",
        "process_resident_memory_bytes ",
        "process_start_time_seconds ",
        "longtask_task_queue_seconds_count 1",
        "longtask_task_duration_seconds_count{outcome=\"completed\"} 1",
        "longtask_job_to_task_seconds_count 1",
        "longtask_events_total{reason=\"Started\"} 1",
        "longtask_tasks{phase=\"Pending\"} 0",
    ] {
        assert!(text.contains(want), "{want} missing in\n{text}");
    }
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn a_standby_exports_no_leader_transitions_and_no_longest_waits() {
    let text = Metrics::new().encode();
    for absent in [
        "longtask_leader_transitions ",
        "longtask_queue_oldest_seconds{",
        "longtask_progress_stalled_seconds{",
    ] {
        assert!(!text.contains(absent), "{absent} in\n{text}");
    }
}
