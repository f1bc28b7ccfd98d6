//! Plain-text tables (N as columns, goals beside) and the JSON summary.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::audit::{Steps, Writes};
use crate::batch::Batch;
use crate::ceiling::Ceiling;
use crate::presence::Presence;
use crate::queue::Queue;

/// A Tasks batch with the writes attributed to its namespace and the
/// operator CPU time it cost.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Round {
    pub jobs: Batch,
    pub tasks: Batch,
    pub writes: Writes,
    /// Every write in each batch's namespace, by anyone (audit log).
    pub jobs_all_writes: u64,
    pub tasks_all_writes: u64,
    /// The steps from a Task's create to its `Running` status (audit log).
    pub steps: Steps,
    pub operator_cpu_s: f64,
    /// The operator's API requests (every verb) and reconciles during the
    /// Tasks batch, from its own /metrics.
    pub operator_requests: f64,
    pub operator_reconciles: f64,
    /// CPU seconds per component during the bare Jobs' batch and during
    /// the Tasks' (`procfs::cluster_cpu`, plus "operator").
    pub jobs_cpu_s: BTreeMap<String, f64>,
    pub tasks_cpu_s: BTreeMap<String, f64>,
}

/// Nearest-rank percentile of `v` (0 < p ≤ 1).
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = (p * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

pub fn table(title: &str, columns: &[String], rows: &[(String, Vec<String>, &str)]) -> String {
    let mut head = vec![String::new()];
    head.extend(columns.iter().cloned());
    head.push("goal".to_owned());
    let mut all = vec![head];
    for (label, cells, goal) in rows {
        let mut r = vec![label.clone()];
        r.extend(cells.iter().cloned());
        r.push((*goal).to_owned());
        all.push(r);
    }
    let cols = all.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            all.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!("{title}\n");
    for r in &all {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i == 0 {
                    format!("{s:<w$}", w = width[i])
                } else {
                    format!("{s:>w$}", w = width[i])
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// One cell per N: the rounds' values joined by " / ".
fn cells(
    sizes: &[usize],
    rounds: &BTreeMap<usize, Vec<Round>>,
    f: impl Fn(&Round) -> String,
) -> Vec<String> {
    sizes
        .iter()
        .map(|n| {
            rounds
                .get(n)
                .map(|rs| rs.iter().map(&f).collect::<Vec<_>>().join(" / "))
                .unwrap_or_else(|| "-".to_owned())
        })
        .collect()
}

/// Where the CPU went: each component's CPU during the bare Jobs' batch
/// per Job beside the Tasks' batch per Task. On 2 cores the machine is
/// the limit, so the makespan ratio follows the machine's row.
fn cpu_table(sizes: &[usize], rounds: &BTreeMap<usize, Vec<Round>>, cols: &[String]) -> String {
    let keys: BTreeSet<String> = rounds
        .values()
        .flatten()
        .flat_map(|r| r.jobs_cpu_s.keys().chain(r.tasks_cpu_s.keys()).cloned())
        .collect();
    let order = |k: &String| match k.as_str() {
        "machine" => 2,
        "operator" => 1,
        _ => 0,
    };
    let mut keys: Vec<String> = keys.into_iter().collect();
    keys.sort_by_key(|k| (order(k), k.clone()));
    let mut rows = Vec::new();
    for k in &keys {
        for (side, label) in [(false, "bare Job"), (true, "Task")] {
            let k2 = k.clone();
            rows.push((
                format!("{k}, per {label}"),
                cells(sizes, rounds, move |r| {
                    let (m, n) = if side {
                        (&r.tasks_cpu_s, r.tasks.n)
                    } else {
                        (&r.jobs_cpu_s, r.jobs.n)
                    };
                    format!(
                        "{:.1}",
                        m.get(&k2).copied().unwrap_or(0.0) * 1000.0 / n as f64
                    )
                }),
                "",
            ));
        }
    }
    table(
        "CPU during each batch, ms per bare Job / per Task (/proc: a component with the children it reaped; nodes run the pods' programs; machine = all CPUs busy)",
        cols,
        &rows,
    )
}

pub fn render(
    sizes: &[usize],
    rounds: &BTreeMap<usize, Vec<Round>>,
    queues: &[Queue],
    ceilings: &[Ceiling],
    presence: &[Presence],
) -> String {
    let mut out = String::new();
    let f1 = |x: f64| format!("{x:.1}");
    let f2 = |x: f64| format!("{x:.2}");
    let f0 = |x: f64| format!("{x:.0}");
    if !rounds.is_empty() {
        out += &batch_tables(sizes, rounds);
    }
    if !queues.is_empty() {
        out.push('\n');
        let qcols: Vec<String> = queues.iter().map(|q| format!("Q={}", q.tasks)).collect();
        let row = |f: &dyn Fn(&Queue) -> String| queues.iter().map(f).collect::<Vec<_>>();
        out += &table(
            "Q Tasks queued behind a namespace cap of 0 (then idle 20 s: the operator's own counters)",
            &qcols,
            &[
                ("all created, s".into(), row(&|q| f1(q.created_s)), ""),
                (
                    "every Task shows Queued, s".into(),
                    row(&|q| f1(q.all_queued_s)),
                    "~ created",
                ),
                (
                    "API requests/s while idle".into(),
                    row(&|q| f2(q.idle_api_per_s)),
                    "0",
                ),
                (
                    "reconciles/s while idle".into(),
                    row(&|q| f0(q.idle_reconciles_per_s)),
                    "",
                ),
            ],
        );
    }
    if !ceilings.is_empty() {
        out.push('\n');
        let ccols: Vec<String> = ceilings.iter().map(|c| format!("C={}", c.tasks)).collect();
        let row = |f: &dyn Fn(&Ceiling) -> String| ceilings.iter().map(f).collect::<Vec<_>>();
        out += &table(
            "The operator's ceiling: C Tasks whose pods no node takes (first create -> every Task Running)",
            &ccols,
            &[
                ("all created, s".into(), row(&|c| f1(c.created_s)), ""),
                (
                    "every Task Running, s".into(),
                    row(&|c| f1(c.all_running_s)),
                    "",
                ),
                ("Tasks/s to Running".into(), row(&|c| f0(c.tasks_per_s)), ""),
                (
                    "operator CPU, ms per Task".into(),
                    row(&|c| f2(c.cpu_ms_per_task)),
                    "",
                ),
            ],
        );
    }
    if !presence.is_empty() {
        out.push('\n');
        let pcols: Vec<String> = presence.iter().map(|p| format!("P={}", p.tasks)).collect();
        let row = |f: &dyn Fn(&Presence) -> String| presence.iter().map(f).collect::<Vec<_>>();
        out += &table(
            "Fresh operator with P terminal Tasks present (start -> Ready and CPU idle 3 s)",
            &pcols,
            &[
                (
                    "peak RSS (VmHWM), MiB".into(),
                    row(&|p| f1(p.peak_rss_mib)),
                    "< 64 at P=10000",
                ),
                ("RSS when settled, MiB".into(), row(&|p| f1(p.rss_mib)), ""),
                ("CPU s until settled".into(), row(&|p| f2(p.cpu_s)), ""),
                ("settle time, s".into(), row(&|p| f1(p.settle_s)), ""),
            ],
        );
    }
    out
}

/// The bare Jobs against Tasks tables, one column per N.
fn batch_tables(sizes: &[usize], rounds: &BTreeMap<usize, Vec<Round>>) -> String {
    let cols: Vec<String> = sizes.iter().map(|n| format!("N={n}")).collect();
    let mut out = String::new();
    let f1 = |x: f64| format!("{x:.1}");
    let f2 = |x: f64| format!("{x:.2}");
    let f0 = |x: f64| format!("{x:.0}");
    out += &table(
        "Makespan, s (first create sent -> last Job Complete / last Task Completed; rounds joined by /)",
        &cols,
        &[
            (
                "bare Jobs".into(),
                cells(sizes, rounds, |r| f1(r.jobs.makespan_s)),
                "",
            ),
            (
                "Tasks".into(),
                cells(sizes, rounds, |r| f1(r.tasks.makespan_s)),
                "",
            ),
            (
                "Tasks / Jobs".into(),
                cells(
                    sizes,
                    rounds,
                    |r| f2(r.tasks.makespan_s / r.jobs.makespan_s),
                ),
                "<= 1.05 at N=200",
            ),
            (
                "failed (Jobs/Tasks)".into(),
                cells(sizes, rounds, |r| {
                    format!("{}+{}", r.jobs.failed, r.tasks.failed)
                }),
                "0",
            ),
        ],
    );
    out.push('\n');
    let tpm = |b: &Batch| f0(b.n as f64 / b.makespan_s * 60.0);
    out += &table(
        "Throughput, per minute (N / makespan)",
        &cols,
        &[
            (
                "bare Jobs".into(),
                cells(sizes, rounds, |r| tpm(&r.jobs)),
                "",
            ),
            ("Tasks".into(), cells(sizes, rounds, |r| tpm(&r.tasks)), ""),
        ],
    );
    out.push('\n');
    let p = |v: &[f64], q: f64| f0(percentile(v, q));
    out += &table(
        "Create returned -> watch sees it, ms, p50 / p99 per round (the Job controller's own: bare Job -> its pod)",
        &cols,
        &[
            (
                "bare Job -> pod, p50".into(),
                cells(sizes, rounds, |r| p(&r.jobs.pod_ms, 0.5)),
                "",
            ),
            (
                "bare Job -> pod, p99".into(),
                cells(sizes, rounds, |r| p(&r.jobs.pod_ms, 0.99)),
                "",
            ),
            (
                "Task -> its Job, p50".into(),
                cells(sizes, rounds, |r| p(&r.tasks.job_ms, 0.5)),
                "",
            ),
            (
                "Task -> its Job, p99".into(),
                cells(sizes, rounds, |r| p(&r.tasks.job_ms, 0.99)),
                "",
            ),
            (
                "Task -> phase Running, p50".into(),
                cells(sizes, rounds, |r| p(&r.tasks.running_ms, 0.5)),
                "< 100",
            ),
            (
                "Task -> phase Running, p99".into(),
                cells(sizes, rounds, |r| p(&r.tasks.running_ms, 0.99)),
                "<= Job -> pod p99, < 250 at N=200",
            ),
            (
                "Task -> pod, p99".into(),
                cells(sizes, rounds, |r| p(&r.tasks.pod_ms, 0.99)),
                "",
            ),
        ],
    );
    out.push('\n');
    out += &steps_table(sizes, rounds, &cols);
    out.push('\n');
    out += &table(
        "Watch sees Job Complete -> watch sees Task Completed, ms",
        &cols,
        &[
            (
                "p50".into(),
                cells(sizes, rounds, |r| f0(percentile(&r.tasks.finish_ms, 0.5))),
                "",
            ),
            (
                "p99".into(),
                cells(sizes, rounds, |r| f0(percentile(&r.tasks.finish_ms, 0.99))),
                "< 250",
            ),
            (
                "max".into(),
                cells(sizes, rounds, |r| f0(percentile(&r.tasks.finish_ms, 1.0))),
                "",
            ),
        ],
    );
    out.push('\n');
    out += &writes_table(sizes, rounds, &cols);
    out.push('\n');
    let per_task =
        |f: fn(&Round) -> f64| cells(sizes, rounds, move |r| f2(f(r) / r.tasks.n as f64));
    out += &table(
        "The operator during the Tasks batch, per Task (CPU: utime+stime; API requests of every verb, reads included, and reconciles: its own /metrics)",
        &cols,
        &[
            (
                "CPU, ms".into(),
                per_task(|r| r.operator_cpu_s * 1000.0),
                "",
            ),
            ("API requests".into(), per_task(|r| r.operator_requests), ""),
            ("reconciles".into(), per_task(|r| r.operator_reconciles), ""),
        ],
    );
    out.push('\n');
    out += &cpu_table(sizes, rounds, &cols);
    out
}

/// Where a new Task waits until `Running`: the API server's time per
/// call beside the operator's time between calls.
fn steps_table(sizes: &[usize], rounds: &BTreeMap<usize, Vec<Round>>, cols: &[String]) -> String {
    type Pick = fn(&Steps) -> &Vec<f64>;
    let steps: [(&str, Pick); 6] = [
        ("Task create (API)", |s| &s.task_create_ms),
        ("-> operator sends Job create", |s| &s.to_job_create_ms),
        ("Job create (API)", |s| &s.job_create_ms),
        ("-> operator sends status", |s| &s.to_status_ms),
        ("status patch (API)", |s| &s.status_ms),
        ("Task created -> Running written", |s| {
            &s.created_to_running_ms
        }),
    ];
    let rows: Vec<(String, Vec<String>, &str)> = steps
        .iter()
        .map(|&(label, pick)| {
            let c = cells(sizes, rounds, |r| {
                let v = pick(&r.steps);
                format!("{:.0}/{:.0}", percentile(v, 0.5), percentile(v, 0.99))
            });
            (label.to_owned(), c, "")
        })
        .collect();
    table(
        "From a Task's create to its Running status, ms p50/p99 (audit log: the API server's receive and response times)",
        cols,
        &rows,
    )
}

fn writes_table(sizes: &[usize], rounds: &BTreeMap<usize, Vec<Round>>, cols: &[String]) -> String {
    let ratio = |c: u64, n: usize| c as f64 / n as f64;
    let all = |c: u64, n: usize| format!("{:.2}", ratio(c, n));
    let per = |c: u64, r: &Round| all(c, r.tasks.n);
    let keys = |pick: fn(&Writes) -> &BTreeMap<String, u64>| {
        rounds
            .values()
            .flatten()
            .flat_map(|r| pick(&r.writes).keys().cloned())
            .collect::<BTreeSet<_>>()
    };
    let mut rows = vec![
        (
            "every writer, per bare Job".to_owned(),
            cells(sizes, rounds, |r| all(r.jobs_all_writes, r.jobs.n)),
            "",
        ),
        (
            "every writer, per Task".to_owned(),
            cells(sizes, rounds, |r| all(r.tasks_all_writes, r.tasks.n)),
            "",
        ),
        (
            "  Task / bare Job".to_owned(),
            cells(sizes, rounds, |r| {
                format!(
                    "{:.2}",
                    ratio(r.tasks_all_writes, r.tasks.n) / ratio(r.jobs_all_writes, r.jobs.n)
                )
            }),
            "",
        ),
        (
            "operator, total".to_owned(),
            cells(sizes, rounds, |r| per(r.writes.operator_total(), r)),
            "",
        ),
        (
            "operator, Events aside".to_owned(),
            cells(sizes, rounds, |r| per(r.writes.operator_not_events(), r)),
            "<= 3",
        ),
    ];
    for k in keys(|w| &w.operator) {
        let c = cells(sizes, rounds, |r| {
            per(r.writes.operator.get(&k).copied().unwrap_or(0), r)
        });
        rows.push((format!("  {k}"), c, ""));
    }
    rows.push((
        "worker, total".to_owned(),
        cells(sizes, rounds, |r| per(r.writes.worker_total(), r)),
        "1",
    ));
    for k in keys(|w| &w.worker) {
        let c = cells(sizes, rounds, |r| {
            per(r.writes.worker.get(&k).copied().unwrap_or(0), r)
        });
        rows.push((format!("  {k}"), c, ""));
    }
    table(
        "API writes per Task in the batch's namespace (audit log, ResponseComplete; every writer: refused ones too)",
        cols,
        &rows,
    )
}

/// Everything measured, raw and summarised.
pub fn json(
    profile: &str,
    sizes: &[usize],
    rounds: &BTreeMap<usize, Vec<Round>>,
    queues: &[Queue],
    ceilings: &[Ceiling],
    presence: &[Presence],
) -> Value {
    let summary: Vec<Value> = rounds
        .values()
        .flatten()
        .map(|r| {
            json!({
                "n": r.tasks.n,
                "jobs_makespan_s": r.jobs.makespan_s,
                "tasks_makespan_s": r.tasks.makespan_s,
                "ratio": r.tasks.makespan_s / r.jobs.makespan_s,
                "jobs_per_min": r.jobs.n as f64 / r.jobs.makespan_s * 60.0,
                "tasks_per_min": r.tasks.n as f64 / r.tasks.makespan_s * 60.0,
                "job_pod_ms_p50": percentile(&r.jobs.pod_ms, 0.5),
                "job_pod_ms_p99": percentile(&r.jobs.pod_ms, 0.99),
                "task_job_ms_p50": percentile(&r.tasks.job_ms, 0.5),
                "task_job_ms_p99": percentile(&r.tasks.job_ms, 0.99),
                "task_pod_ms_p99": percentile(&r.tasks.pod_ms, 0.99),
                "running_ms_p50": percentile(&r.tasks.running_ms, 0.5),
                "running_ms_p99": percentile(&r.tasks.running_ms, 0.99),
                "completed_ms_p50": percentile(&r.tasks.finish_ms, 0.5),
                "completed_ms_p99": percentile(&r.tasks.finish_ms, 0.99),
                "operator_writes_per_task": r.writes.operator_total() as f64 / r.tasks.n as f64,
                "worker_writes_per_task": r.writes.worker_total() as f64 / r.tasks.n as f64,
                "writes": r.writes,
                "jobs_all_writes": r.jobs_all_writes,
                "tasks_all_writes": r.tasks_all_writes,
                "steps": r.steps,
                "operator_cpu_s": r.operator_cpu_s,
                "operator_requests_per_task": r.operator_requests / r.tasks.n as f64,
                "operator_reconciles_per_task": r.operator_reconciles / r.tasks.n as f64,
                "jobs_cpu_s": r.jobs_cpu_s,
                "tasks_cpu_s": r.tasks_cpu_s,
                "failed_jobs": r.jobs.failed,
                "failed_tasks": r.tasks.failed,
            })
        })
        .collect();
    json!({
        "operator_profile": profile,
        "sizes": sizes,
        "rounds": summary,
        "queue": queues,
        "ceiling": ceilings,
        "presence": presence,
    })
}
