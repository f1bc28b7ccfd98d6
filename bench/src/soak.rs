//! Soak: a steady stream of Tasks at a fixed rate, with retention on
//! (each Task sets `deleteAfterSeconds`, so finished Tasks and their Jobs,
//! pods and results go), the operator's RSS sampled every 10 s. Memory
//! that follows the running work stays flat: the slope after the warm-up
//! is the measure, and the curve is drawn as an SVG chart.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{DynamicObject, PostParams};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};

use crate::batch::{SCRIPT, tasks_api};
use crate::chart::{self, Chart};
use crate::cluster::Cluster;
use crate::fit::{self, Fit};
use crate::procfs;
use crate::report::table;

pub const NAMESPACE: &str = "bench-soak";
/// How often the operator's memory is read.
pub const EVERY: Duration = Duration::from_secs(10);
/// Creates in flight at most; a tick that finds this many is skipped.
const MAX_INFLIGHT: usize = 64;

#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub minutes: f64,
    /// Tasks created per second.
    pub rate: f64,
    /// Minutes left out of the slope (default: the first third).
    pub warmup_min: Option<f64>,
    /// Each Task's `spec.deleteAfterSeconds`.
    pub delete_after_s: i64,
}

#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Sample {
    /// Since the soak began, s.
    pub t_s: f64,
    pub rss_mib: f64,
    pub hwm_mib: f64,
    pub cpu_s: f64,
    pub pid: u32,
    /// Tasks created so far.
    pub created: usize,
    /// Tasks that exist now (the bench's watch): retention keeps this flat.
    pub present: usize,
    /// Tasks seen finished so far.
    pub finished: usize,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Soak {
    pub minutes: f64,
    pub rate_per_s: f64,
    pub delete_after_s: i64,
    pub warmup_min: f64,
    /// Least squares of RSS over the samples after the warm-up, MiB per 10 minutes.
    pub slope_mib_per_10min: Option<f64>,
    pub fit: Option<Fit>,
    pub created: usize,
    pub create_errors: usize,
    /// Ticks skipped because `MAX_INFLIGHT` creates were still waiting.
    pub skipped: usize,
    pub finished: usize,
    pub failed: usize,
    /// Operator processes seen beyond the first (restarts during the soak).
    pub operator_restarts: usize,
    pub chart: String,
    pub samples: Vec<Sample>,
}

#[derive(Default)]
struct Seen {
    present: HashSet<String>,
    finished: HashSet<String>,
    failed: usize,
}

fn soak_task(name: &str, delete_after_s: i64) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "longtask.dev/v1alpha1",
        "kind": "Task",
        "metadata": { "name": name },
        "spec": { "command": ["sh", "-c", SCRIPT], "deleteAfterSeconds": delete_after_s }
    }))?)
}

/// The slope in MiB per 10 minutes of the samples after `warmup_min` (pure).
pub fn slope(samples: &[Sample], warmup_min: f64) -> Option<Fit> {
    let pts: Vec<(f64, f64)> = samples.iter().map(|s| (s.t_s / 60.0, s.rss_mib)).collect();
    fit::least_squares(&fit::after(&pts, warmup_min)).map(|f| Fit {
        slope: f.slope * 10.0,
        intercept: f.intercept,
    })
}

/// The RSS curve as an SVG chart (pure).
pub fn svg(s: &Soak) -> String {
    let pts: Vec<(f64, f64)> = s
        .samples
        .iter()
        .map(|x| (x.t_s / 60.0, x.rss_mib))
        .collect();
    let note = match s.slope_mib_per_10min {
        Some(v) => format!("after warm-up: {v:+.2} MiB per 10 min (least squares)"),
        None => "too few samples after warm-up for a slope".to_owned(),
    };
    let title = format!(
        "longtask operator RSS, {} min soak at {}/s, Tasks deleted {} s after finishing",
        s.minutes, s.rate_per_s, s.delete_after_s
    );
    chart::svg(&Chart {
        title: &title,
        x_label: "minutes since the soak began",
        y_label: "operator VmRSS, MiB",
        points: &pts,
        // Back to MiB per minute for the drawn line.
        fit: s.fit.map(|f| {
            (
                Fit {
                    slope: f.slope / 10.0,
                    intercept: f.intercept,
                },
                s.warmup_min,
            )
        }),
        marker: Some((s.warmup_min, "warm-up ends")),
        note: &note,
    })
}

/// Runs the soak and writes its chart to `chart_path`.
pub async fn run(cluster: &Cluster, plan: Plan, chart_path: &Path) -> Result<Soak> {
    cluster.namespace(NAMESPACE).await?;
    let api = tasks_api(&cluster.client, NAMESPACE);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let watch = {
        let (api, seen) = (api.clone(), seen.clone());
        tokio::spawn(async move {
            let mut s = watcher::watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = s.next().await {
                // A poisoned lock only means a task panicked; the sets are still usable.
                let mut g = seen
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match ev {
                    Ok(Event::Apply(t) | Event::InitApply(t)) => {
                        let name = t.name_any();
                        let phase = t.data.pointer("/status/phase").and_then(Value::as_str);
                        if let Some(p @ ("Completed" | "Failed")) = phase
                            && g.finished.insert(name.clone())
                        {
                            g.failed += usize::from(p == "Failed");
                        }
                        g.present.insert(name);
                    }
                    Ok(Event::Delete(t)) => {
                        g.present.remove(&t.name_any());
                    }
                    Ok(Event::Init) => g.present.clear(),
                    Ok(Event::InitDone) => {}
                    Err(e) => eprintln!("bench: soak task watch: {e}"),
                }
            }
        })
    };
    let created = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let inflight = Arc::new(AtomicUsize::new(0));
    let skipped = Arc::new(AtomicUsize::new(0));
    let creator = {
        let (api, created, errors, inflight, skipped) = (
            api.clone(),
            created.clone(),
            errors.clone(),
            inflight.clone(),
            skipped.clone(),
        );
        let delete_after = plan.delete_after_s;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / plan.rate));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut i = 0usize;
            loop {
                tick.tick().await;
                if inflight.load(Ordering::SeqCst) >= MAX_INFLIGHT {
                    skipped.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                let name = format!("s-{i:06}");
                i += 1;
                inflight.fetch_add(1, Ordering::SeqCst);
                let (api, created, errors, inflight) = (
                    api.clone(),
                    created.clone(),
                    errors.clone(),
                    inflight.clone(),
                );
                tokio::spawn(async move {
                    let made = match soak_task(&name, delete_after) {
                        Ok(t) => api
                            .create(&PostParams::default(), &t)
                            .await
                            .map_err(anyhow::Error::from),
                        Err(e) => Err(e),
                    };
                    match made {
                        Ok(_) => drop(created.fetch_add(1, Ordering::SeqCst)),
                        Err(e) => {
                            if errors.fetch_add(1, Ordering::SeqCst) < 5 {
                                eprintln!("bench: soak: create {name}: {e:#}");
                            }
                        }
                    }
                    inflight.fetch_sub(1, Ordering::SeqCst);
                });
            }
        })
    };
    let ticks = procfs::clock_ticks();
    let t0 = Instant::now();
    let end = Duration::from_secs_f64(plan.minutes * 60.0);
    let mut samples = Vec::new();
    let mut pids = HashSet::new();
    let mut every = tokio::time::interval(EVERY);
    let sampled: Result<()> = async {
        loop {
            every.tick().await;
            let t_s = t0.elapsed().as_secs_f64();
            match procfs::operator_pid(&cluster.operator_bin) {
                Some(pid) => {
                    let s = procfs::sample(pid, ticks)?;
                    pids.insert(pid);
                    let (present, finished) = {
                        let g = seen
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        (g.present.len(), g.finished.len())
                    };
                    samples.push(Sample {
                        t_s,
                        rss_mib: s.rss_kib as f64 / 1024.0,
                        hwm_mib: s.hwm_kib as f64 / 1024.0,
                        cpu_s: s.cpu_s,
                        pid,
                        created: created.load(Ordering::SeqCst),
                        present,
                        finished,
                    });
                    if samples.len() % 6 == 1 {
                        eprintln!(
                            "bench: soak: {:.1} min: RSS {:.1} MiB, {} created, {} present",
                            t_s / 60.0,
                            s.rss_kib as f64 / 1024.0,
                            created.load(Ordering::SeqCst),
                            present
                        );
                    }
                }
                None => eprintln!("bench: soak: no single operator process at {t_s:.0}s"),
            }
            if t0.elapsed() >= end {
                return Ok(());
            }
        }
    }
    .await;
    creator.abort();
    // Let the creates in flight return before the counts are read.
    let t = Instant::now();
    while inflight.load(Ordering::SeqCst) > 0 && t.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    watch.abort();
    sampled?;
    let (finished, failed) = {
        let g = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (g.finished.len(), g.failed)
    };
    let warmup_min = plan.warmup_min.unwrap_or(plan.minutes / 3.0);
    let fit = slope(&samples, warmup_min);
    let mut s = Soak {
        minutes: plan.minutes,
        rate_per_s: plan.rate,
        delete_after_s: plan.delete_after_s,
        warmup_min,
        slope_mib_per_10min: fit.map(|f| f.slope),
        fit,
        created: created.load(Ordering::SeqCst),
        create_errors: errors.load(Ordering::SeqCst),
        skipped: skipped.load(Ordering::SeqCst),
        finished,
        failed,
        operator_restarts: pids.len().saturating_sub(1),
        chart: chart_path.display().to_string(),
        samples,
    };
    std::fs::write(chart_path, svg(&s))
        .with_context(|| format!("write {}", chart_path.display()))?;
    s.chart = chart_path.display().to_string();
    Ok(s)
}

pub fn render(s: &Soak) -> String {
    let max = |f: fn(&Sample) -> f64| s.samples.iter().map(f).fold(f64::NAN, f64::max);
    let first = s.samples.first();
    let last = s.samples.last();
    let f1 = |x: Option<f64>| x.map_or("-".to_owned(), |v| format!("{v:.1}"));
    let mut out = table(
        &format!(
            "Soak: {} min, {}/s, deleteAfterSeconds {}; operator RSS every {} s; slope after the first {:.1} min",
            s.minutes,
            s.rate_per_s,
            s.delete_after_s,
            EVERY.as_secs(),
            s.warmup_min
        ),
        &["value".to_owned()],
        &[
            (
                "RSS slope after warm-up, MiB per 10 min".into(),
                vec![
                    s.slope_mib_per_10min
                        .map_or("-".to_owned(), |v| format!("{v:+.2}")),
                ],
                "< 1",
            ),
            (
                "RSS first / last sample, MiB".into(),
                vec![format!(
                    "{} / {}",
                    f1(first.map(|x| x.rss_mib)),
                    f1(last.map(|x| x.rss_mib))
                )],
                "",
            ),
            (
                "VmHWM at the end, MiB".into(),
                vec![f1(last.map(|x| x.hwm_mib))],
                "",
            ),
            (
                "Tasks created / finished / failed".into(),
                vec![format!("{} / {} / {}", s.created, s.finished, s.failed)],
                "",
            ),
            (
                "most Tasks present at a sample".into(),
                vec![format!("{:.0}", max(|x| x.present as f64))],
                "flat",
            ),
            (
                "create errors / skipped ticks / operator restarts".into(),
                vec![format!(
                    "{} / {} / {}",
                    s.create_errors, s.skipped, s.operator_restarts
                )],
                "0 / 0 / 0",
            ),
        ],
    );
    out += &format!("chart: {}\n", s.chart);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_s: f64, rss_mib: f64) -> Sample {
        Sample {
            t_s,
            rss_mib,
            hwm_mib: rss_mib,
            cpu_s: 0.0,
            pid: 1,
            created: 0,
            present: 0,
            finished: 0,
        }
    }

    #[test]
    fn slope_leaves_out_the_warm_up_and_is_per_ten_minutes() {
        // Steep for the first 10 minutes, then 0.05 MiB a minute.
        let samples: Vec<Sample> = (0..=180)
            .map(|i| {
                let m = i as f64 / 6.0;
                let rss = if m < 10.0 {
                    20.0 + 2.0 * m
                } else {
                    40.0 + 0.05 * (m - 10.0)
                };
                sample(i as f64 * 10.0, rss)
            })
            .collect();
        let f = slope(&samples, 10.0).expect("a slope");
        assert!((f.slope - 0.5).abs() < 1e-9, "{f:?}");
        assert!(slope(&samples[..3], 10.0).is_none());
    }

    #[test]
    fn chart_is_written_from_the_samples() {
        let samples: Vec<Sample> = (0..12).map(|i| sample(i as f64 * 10.0, 30.0)).collect();
        let fit = slope(&samples, 0.5);
        let s = Soak {
            minutes: 2.0,
            rate_per_s: 2.0,
            delete_after_s: 10,
            warmup_min: 0.5,
            slope_mib_per_10min: fit.map(|f| f.slope),
            fit,
            created: 240,
            create_errors: 0,
            skipped: 0,
            finished: 230,
            failed: 0,
            operator_restarts: 0,
            chart: "target/bench-soak.svg".into(),
            samples,
        };
        let svg = svg(&s);
        assert_eq!(svg.matches("<circle").count(), 12);
        assert!(svg.contains("+0.00 MiB per 10 min"), "{svg}");
        assert!(svg.contains("warm-up ends"));
        let text = render(&s);
        assert!(
            text.contains("+0.00") && text.contains("240 / 230 / 0"),
            "{text}"
        );
    }
}
