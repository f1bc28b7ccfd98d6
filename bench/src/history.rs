//! Kept history: N finished Tasks that keep their Jobs, pods and result
//! ConfigMaps, run through the whole pipeline (the operator runs every
//! one), grown size by size in one namespace. At each size: the operator
//! that ran the burst, once idle (steady state), then a fresh operator
//! started beside them (scaled to 0, then to 1). RSS per kept Task is the
//! slope between sizes.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::batch::{self, spawn_watch, tasks_api};
use crate::cluster::Cluster;
use crate::fit;
use crate::memory::{self, Mem};
use crate::report::table;

pub const NAMESPACE: &str = "bench-history";
/// No Task finishing for this long means the cluster stopped moving.
const STALL: Duration = Duration::from_secs(300);

/// How the history grows.
#[derive(Debug, Clone)]
pub struct Growth {
    /// Tasks created per chunk; at most two chunks are unfinished at once.
    pub chunk: usize,
    pub inflight: usize,
    /// Stop growing when the machine's MemAvailable falls below this.
    pub min_free_mib: u64,
    /// Other operator builds, by name, each also started fresh at every
    /// size (`--alt-operator`).
    pub alts: Vec<(String, std::path::PathBuf)>,
}

/// The measures at one size.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Point {
    /// Finished Tasks kept (with Jobs, pods, results).
    pub tasks: usize,
    /// Of those, how many ended Failed (they keep their objects too).
    pub failed: usize,
    /// Creating the Tasks added at this size until all finished, s.
    pub grow_s: f64,
    /// The operator that ran the burst, once idle. Its VmHWM is the
    /// peak since it started (a fresh start at the size before, or the
    /// install).
    pub steady: Mem,
    /// A fresh operator beside them: once it leads, is Ready and idle.
    pub fresh: Mem,
    /// The same for each other build, by name.
    pub alts: Vec<(String, Mem)>,
}

/// RSS per kept Task of one series, KiB per Task.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Slope {
    pub series: &'static str,
    /// Least squares over every size.
    pub least_squares_kib_per_task: Option<f64>,
    /// Between neighbouring sizes, in order.
    pub pairwise_kib_per_task: Vec<f64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct History {
    pub namespace: String,
    pub points: Vec<Point>,
    pub slopes: Vec<Slope>,
    /// Why growing stopped before the largest size asked for.
    pub stopped: Option<String>,
    /// Tasks in the namespace at the end (what the failover runs beside).
    pub kept: usize,
}

/// The series the slopes are taken of, with how to read each from a point.
type Series = (&'static str, fn(&Point) -> f64);
const SERIES: [Series; 4] = [
    ("fresh start VmHWM", |p| p.fresh.hwm_mib),
    ("fresh start VmRSS", |p| p.fresh.rss_mib),
    ("after the burst VmRSS", |p| p.steady.rss_mib),
    ("after the burst VmHWM", |p| p.steady.hwm_mib),
];

/// KiB per kept Task for each series (pure).
pub fn slopes(points: &[Point]) -> Vec<Slope> {
    SERIES
        .iter()
        .map(|(series, f)| {
            let pts: Vec<(f64, f64)> = points
                .iter()
                .map(|p| (p.tasks as f64, f(p) * 1024.0))
                .collect();
            Slope {
                series,
                least_squares_kib_per_task: fit::least_squares(&pts).map(|f| f.slope),
                pairwise_kib_per_task: fit::pairwise(&pts),
            }
        })
        .collect()
}

/// Counts Tasks that reached a terminal phase, by a watch.
struct Finished {
    seen: watch::Receiver<(usize, usize)>,
    watch: JoinHandle<()>,
}

impl Finished {
    async fn start(api: &Api<DynamicObject>) -> Result<Finished> {
        let (tx, seen) = watch::channel((0, 0));
        let (listed_tx, listed) = oneshot::channel();
        let mut names = HashSet::new();
        let mut failed = 0;
        let watch = spawn_watch(api.clone(), "task", listed_tx, move |t, _| {
            let phase = t.data.pointer("/status/phase").and_then(Value::as_str);
            if let Some(p @ ("Completed" | "Failed")) = phase
                && names.insert(t.name_any())
            {
                failed += usize::from(p == "Failed");
                let _ = tx.send((names.len(), failed));
            }
        });
        let f = Finished { seen, watch };
        tokio::time::timeout(Duration::from_secs(60), listed)
            .await
            .context("task watch never listed")??;
        Ok(f)
    }

    fn now(&self) -> (usize, usize) {
        *self.seen.borrow()
    }

    /// Waits until `n` Tasks finished; fails when none finishes for `STALL`.
    async fn reach(&mut self, n: usize) -> Result<()> {
        loop {
            let before = self.now().0;
            if before >= n {
                return Ok(());
            }
            let moved = tokio::time::timeout(STALL, self.seen.changed()).await;
            if moved.is_err() {
                bail!("no Task finished for {STALL:?} ({before} of {n} finished)");
            }
            moved?.context("task watch ended")?;
        }
    }
}

impl Drop for Finished {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

/// MemAvailable of this machine, MiB.
fn mem_available_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib / 1024)
}

/// Creates Tasks `*created..want` in chunks, at most two chunks
/// unfinished, and waits until all have finished.
async fn grow(
    api: &Api<DynamicObject>,
    done: &mut Finished,
    created: &mut usize,
    want: usize,
    g: &Growth,
) -> Result<()> {
    let chunk = g.chunk.max(1);
    let mut last_note = Instant::now();
    while *created < want {
        let end = (*created + chunk).min(want);
        done.reach(created.saturating_sub(chunk)).await?;
        if let Some(free) = mem_available_mib()
            && free < g.min_free_mib
        {
            bail!(
                "the machine has {free} MiB available, under --history-min-free-mib {}",
                g.min_free_mib
            );
        }
        batch::create_tasks(api, *created..end, g.inflight, batch::task, None).await?;
        *created = end;
        if last_note.elapsed() > Duration::from_secs(30) {
            last_note = Instant::now();
            let (finished, failed) = done.now();
            eprintln!("bench: history: {created} created, {finished} finished ({failed} failed)");
        }
    }
    done.reach(want).await
}

/// Grows the history through `sizes` (ascending) and measures at each;
/// `after(n)` runs once size `n` is measured, beside its Tasks.
pub async fn run(
    cluster: &Cluster,
    sizes: &[usize],
    g: Growth,
    mut after: impl AsyncFnMut(usize),
) -> Result<History> {
    let mut sizes = sizes.to_vec();
    sizes.sort_unstable();
    sizes.dedup();
    cluster.namespace(NAMESPACE).await?;
    let api = tasks_api(&cluster.client, NAMESPACE);
    let mut done = Finished::start(&api).await?;
    let mut created = 0;
    let mut points = Vec::new();
    let mut stopped = None;
    for &n in &sizes {
        let at = async {
            let t = Instant::now();
            grow(&api, &mut done, &mut created, n, &g).await?;
            let grow_s = t.elapsed().as_secs_f64();
            eprintln!("bench: history: {n} Tasks finished in {grow_s:.0}s; measuring the operator that ran them");
            let steady = memory::steady(cluster, Duration::from_secs(300)).await?;
            eprintln!("bench: history: {n}: after the burst RSS {:.1} MiB (VmHWM {:.1}); fresh start", steady.rss_mib, steady.hwm_mib);
            let fresh = memory::fresh_start(cluster, Duration::from_secs(600)).await?;
            eprintln!(
                "bench: history: {n}: fresh start VmHWM {:.1} MiB, RSS {:.1} MiB, settled in {:.1}s",
                fresh.hwm_mib, fresh.rss_mib, fresh.settle_s
            );
            let mut alts = Vec::new();
            for (name, bin) in &g.alts {
                let m = memory::fresh_start_of(cluster, bin, Duration::from_secs(600)).await?;
                eprintln!(
                    "bench: history: {n}: fresh start of {name}: VmHWM {:.1} MiB, RSS {:.1} MiB",
                    m.hwm_mib, m.rss_mib
                );
                alts.push((name.clone(), m));
            }
            anyhow::Ok(Point {
                tasks: n,
                failed: done.now().1,
                grow_s,
                steady,
                fresh,
                alts,
            })
        }
        .await;
        match at {
            Ok(p) => {
                points.push(p);
                after(n).await;
            }
            Err(e) => {
                let why = format!(
                    "stopped at N={n} ({created} Tasks created, {} finished): {e:#}",
                    done.now().0
                );
                eprintln!("bench: history: {why}");
                stopped = Some(why);
                break;
            }
        }
    }
    Ok(History {
        namespace: NAMESPACE.to_owned(),
        slopes: slopes(&points),
        points,
        stopped,
        kept: created,
    })
}

/// The history tables: one column per size, then the slopes.
pub fn render(h: &History) -> String {
    let cols: Vec<String> = h.points.iter().map(|p| format!("N={}", p.tasks)).collect();
    let row = |f: &dyn Fn(&Point) -> String| h.points.iter().map(f).collect::<Vec<_>>();
    let f1 = |x: f64| format!("{x:.1}");
    let idle = |m: &Mem| if m.idle { "" } else { " (busy)" };
    let mut out = table(
        "Operator memory with N finished Tasks kept (their Jobs, pods and result ConfigMaps too; all run by the operator)",
        &cols,
        &[
            (
                "fresh start: peak RSS (VmHWM), MiB".into(),
                row(&|p| format!("{}{}", f1(p.fresh.hwm_mib), idle(&p.fresh))),
                "< 64 at N=10000",
            ),
            (
                "fresh start: RSS when idle, MiB".into(),
                row(&|p| f1(p.fresh.rss_mib)),
                "",
            ),
            (
                "fresh start: start -> leading, Ready, idle, s".into(),
                row(&|p| f1(p.fresh.settle_s)),
                "",
            ),
            (
                "after the burst: RSS when idle, MiB".into(),
                row(&|p| format!("{}{}", f1(p.steady.rss_mib), idle(&p.steady))),
                "< 64 at N=10000",
            ),
            (
                "after the burst: VmHWM, MiB".into(),
                row(&|p| f1(p.steady.hwm_mib)),
                "",
            ),
            (
                "growing to N (created -> all finished), s".into(),
                row(&|p| format!("{:.0}", p.grow_s)),
                "",
            ),
            ("failed Tasks".into(), row(&|p| p.failed.to_string()), "0"),
        ],
    );
    let names: Vec<&String> = h
        .points
        .first()
        .map(|p| p.alts.iter().map(|(n, _)| n).collect())
        .unwrap_or_default();
    if !names.is_empty() {
        let alt = |p: &Point, name: &str| p.alts.iter().find(|(n, _)| n == name).map(|(_, m)| *m);
        let mut rows: Vec<(String, Vec<String>, &str)> = Vec::new();
        for name in names {
            rows.push((
                format!("fresh start of {name}: VmHWM, MiB"),
                row(&|p| {
                    alt(p, name)
                        .map_or_else(|| "-".into(), |m| format!("{}{}", f1(m.hwm_mib), idle(&m)))
                }),
                "",
            ));
            rows.push((
                format!("fresh start of {name}: RSS when idle, MiB"),
                row(&|p| alt(p, name).map_or_else(|| "-".into(), |m| f1(m.rss_mib))),
                "",
            ));
        }
        out += &table(
            "The same fresh start with other operator builds (--alt-operator), beside the same Tasks",
            &cols,
            &rows,
        );
    }
    let mut scols: Vec<String> = h
        .points
        .windows(2)
        .map(|w| format!("{}->{}", w[0].tasks, w[1].tasks))
        .collect();
    scols.push("least squares".into());
    let rows: Vec<(String, Vec<String>, &str)> = h
        .slopes
        .iter()
        .map(|s| {
            let mut cells: Vec<String> = s
                .pairwise_kib_per_task
                .iter()
                .map(|v| format!("{v:.2}"))
                .collect();
            cells.push(
                s.least_squares_kib_per_task
                    .map_or_else(|| "-".to_owned(), |v| format!("{v:.2}")),
            );
            (s.series.to_owned(), cells, "< 4")
        })
        .collect();
    out.push('\n');
    out += &table(
        "RSS per kept Task, KiB (slope between sizes)",
        &scols,
        &rows,
    );
    if let Some(why) = &h.stopped {
        out += &format!("history {why}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(tasks: usize, fresh_hwm: f64, steady_rss: f64) -> Point {
        let mem = |v: f64| Mem {
            rss_mib: v,
            hwm_mib: v,
            ..Mem::default()
        };
        Point {
            tasks,
            failed: 0,
            grow_s: 1.0,
            steady: mem(steady_rss),
            fresh: mem(fresh_hwm),
            alts: vec![("glibc".to_owned(), mem(fresh_hwm * 2.0))],
        }
    }

    #[test]
    fn slopes_are_kib_per_kept_task() {
        // 2,000 -> 10,000 -> 20,000 Tasks; fresh VmHWM grows 20 KiB a Task,
        // the steady RSS not at all.
        let mib = |tasks: f64| 40.0 + tasks * 20.0 / 1024.0;
        let pts = [
            point(2000, mib(2000.0), 30.0),
            point(10000, mib(10000.0), 30.0),
            point(20000, mib(20000.0), 30.0),
        ];
        let s = slopes(&pts);
        assert_eq!(s[0].series, "fresh start VmHWM");
        let ls = s[0].least_squares_kib_per_task.expect("a slope");
        assert!((ls - 20.0).abs() < 1e-9, "{ls}");
        assert_eq!(s[0].pairwise_kib_per_task.len(), 2);
        assert!(
            s[0].pairwise_kib_per_task
                .iter()
                .all(|v| (v - 20.0).abs() < 1e-9)
        );
        assert_eq!(s[2].least_squares_kib_per_task, Some(0.0));
    }

    #[test]
    fn one_size_has_no_slope_and_renders() {
        let h = History {
            namespace: NAMESPACE.into(),
            slopes: slopes(&[point(100, 20.0, 20.0)]),
            points: vec![point(100, 20.0, 20.0)],
            stopped: Some("stopped at N=300: test".into()),
            kept: 120,
        };
        assert_eq!(h.slopes[0].least_squares_kib_per_task, None);
        let text = render(&h);
        assert!(text.contains("N=100"), "{text}");
        assert!(text.contains("least squares"), "{text}");
        assert!(text.contains("stopped at N=300"), "{text}");
        assert!(text.contains("fresh start of glibc: VmHWM, MiB"), "{text}");
        assert!(text.contains("40.0"), "the other build's peak: {text}");
    }
}
