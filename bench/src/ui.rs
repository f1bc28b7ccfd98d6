//! The web page with many Tasks (`--ui N`): N Tasks queued behind a
//! namespace cap of 0 (so the cluster runs nothing and each has a queue
//! position), `kubectl longtask ui` (release build) serving them, and
//! headless Chromium (tests/ui's driver) reading the page. Measured: the
//! list's first paint, a status change's way to the page (the API server's
//! answer to a status patch → the row's bar changed in the DOM), a filter's
//! repaint, the plugin's RSS and the page's JS heap.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use longtask_e2e::browser::Browser;
use serde_json::json;

use crate::batch::{self, PhaseCount, tasks_api};
use crate::cluster::Cluster;

/// Status changes timed, one Task each.
const CHANGES: usize = 20;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Ui {
    pub tasks: usize,
    /// Navigation start → the first list painted with every row (page clock).
    pub first_paint_ms: f64,
    /// The bench's goto → the page counts every row and has painted them
    /// (outside view, WebDriver's round trips included).
    pub list_shown_ms: f64,
    /// Status patch answered → the row's bar shows it, p50 and max over
    /// CHANGES (0 when the page was quicker than the bench's client).
    pub change_p50_ms: f64,
    pub change_max_ms: f64,
    /// Status patch sent → the row's bar shows it, p50 and max.
    pub sent_p50_ms: f64,
    pub sent_max_ms: f64,
    /// A name filter typed → the table repainted with the one match.
    pub filter_ms: f64,
    /// The timeline opened over every Task → its lanes painted (page
    /// clock, after the frame), and how many lanes the page holds.
    pub timeline_ms: f64,
    pub timeline_lanes: u64,
    /// The plugin process, once the changes are through.
    pub plugin_rss_mib: f64,
    pub plugin_hwm_mib: f64,
    /// The page's used JS heap (Chromium's performance.memory).
    pub page_heap_mib: f64,
}

fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// `kubectl-longtask -n NS ui --no-browser`, killed on drop.
struct Plugin(Child);

impl Drop for Plugin {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_plugin(cluster: &Cluster, bin: &Path, ns: &str) -> Result<(Plugin, String)> {
    use std::io::BufRead;
    let mut child = Command::new(bin)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .args(["-n", ns, "ui", "--no-browser"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("start {}", bin.display()))?;
    let out = child.stdout.take().context("plugin stdout")?;
    let plugin = Plugin(child);
    let mut lines = std::io::BufReader::new(out).lines();
    let url = loop {
        let line = lines.next().context("the plugin printed no URL")??;
        if let Some((_, u)) = line.split_once("longtask ui: ") {
            break u.trim().to_owned();
        }
    };
    // Keep reading (and dropping) what it prints, so it never blocks.
    std::thread::spawn(move || lines.for_each(drop));
    Ok((plugin, url))
}

/// Creates `n` queued Tasks in `ns` and measures the page over them.
pub async fn measure(cluster: &Cluster, ns: &str, n: usize, inflight: usize) -> Result<Ui> {
    let root = crate::cluster::root()?;
    let bin = root.join("target/release/kubectl-longtask");
    ensure!(
        bin.exists(),
        "{} missing: cargo build --release -p kubectl-longtask",
        bin.display()
    );
    let nss: Api<Namespace> = Api::all(cluster.client.clone());
    let cap = json!({"metadata": {"annotations": {"longtask.dev/max-active-tasks": "0"}}});
    nss.patch(ns, &PatchParams::default(), &Patch::Merge(&cap))
        .await?;
    let api = tasks_api(&cluster.client, ns);
    let mut queued = PhaseCount::start(&api, "Queued").await?;
    let t = Instant::now();
    batch::create_tasks(&api, 0..n, inflight, batch::task, None).await?;
    queued.reach(n, Duration::from_secs(900)).await?;
    eprintln!(
        "bench: ui: {n} Tasks queued in {:.0}s",
        t.elapsed().as_secs_f64()
    );
    // Positions settle within one look after the last Task appeared.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let (plugin, url) = start_plugin(cluster, &bin, ns)?;
    let browser = Browser::start(&root.join("target/bench-browser"))?;
    let started = Instant::now();
    browser.goto(&url)?;
    let rows = format!(
        "return window.longtaskFirstPaint !== undefined && \
         document.querySelector('#count').textContent.startsWith('{n} of {n} ')"
    );
    browser
        .until(Duration::from_secs(60), "every row painted", &rows)
        .await?;
    let list_shown_ms = started.elapsed().as_secs_f64() * 1000.0;
    let first_paint_ms = browser
        .eval("return window.longtaskFirstPaint - performance.timeOrigin")?
        .as_f64()
        .context("first paint")?;
    eprintln!(
        "bench: ui: first paint {first_paint_ms:.0} ms, rows in the DOM {list_shown_ms:.0} ms"
    );

    let ((change_p50_ms, change_max_ms), (sent_p50_ms, sent_max_ms)) =
        changes(&browser, &api, ns, n).await?;
    let filter_ms = filter(&browser, n).await?;
    let (timeline_ms, timeline_lanes) = timeline(&browser).await?;
    let mem = crate::procfs::sample(plugin.0.id(), crate::procfs::clock_ticks())?;
    let plugin_rss_mib = mem.rss_kib as f64 / 1024.0;
    let plugin_hwm_mib = mem.hwm_kib as f64 / 1024.0;
    let page_heap_mib = browser
        .eval("return performance.memory ? performance.memory.usedJSHeapSize : null")?
        .as_f64()
        .map_or(0.0, |b| b / 1024.0 / 1024.0);
    Ok(Ui {
        tasks: n,
        first_paint_ms,
        list_shown_ms,
        change_p50_ms,
        change_max_ms,
        sent_p50_ms,
        sent_max_ms,
        filter_ms,
        timeline_ms,
        timeline_lanes,
        plugin_rss_mib,
        plugin_hwm_mib,
        page_heap_mib,
    })
}

/// Patches the status progress of CHANGES Tasks spread over the list, one
/// at a time, each scrolled into view first; a MutationObserver in the
/// page stamps when the row's bar shows the new percent. p50 and max of
/// (stamp - the patch's answer).
async fn changes(
    browser: &Browser,
    api: &Api<kube::api::DynamicObject>,
    ns: &str,
    n: usize,
) -> Result<((f64, f64), (f64, f64))> {
    browser.eval(
        "window.__seen = {}; \
         const check = () => { const w = window.__want; if (!w || window.__seen[w.id]) return; \
           const b = document.querySelector(`tr[data-key=\"${w.key}\"] .bar`); \
           if (b && b.dataset.percent === String(w.pct)) window.__seen[w.id] = Date.now(); }; \
         new MutationObserver(check).observe(document.querySelector('#tasks tbody'), \
           {subtree: true, childList: true, attributes: true}); return true",
    )?;
    let mut took = Vec::new();
    let mut from_sent = Vec::new();
    for i in 0..CHANGES {
        let name = batch::name(i * n / CHANGES);
        let pct = 11 + i;
        let key = format!("{ns}/{name}");
        // Only rows in view are in the table: scroll the row into view
        // first, as a user looking at it would have.
        browser.eval(&format!(
            "const i = shownKeys.indexOf({k}); \
             const top = document.querySelector('#tasks tbody').getBoundingClientRect().top; \
             window.scrollTo(0, window.scrollY + top + i * rowHeight - 200); return i",
            k = json!(key)
        ))?;
        browser
            .until(
                Duration::from_secs(10),
                "the row in view",
                &format!("return document.querySelector('tr[data-key=\"{key}\"]') !== null"),
            )
            .await?;
        let want = json!({"id": i, "key": key, "pct": pct});
        browser.eval(&format!("window.__want = {want}; return true"))?;
        let sent = epoch_ms();
        let patch = json!({"status": {"progress": {
            "percent": pct, "display": format!("{pct}%"), "message": "bench"}}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("patch status of {name}"))?;
        let answered = epoch_ms();
        let seen = browser
            .until(
                Duration::from_secs(10),
                "the change on the page",
                &format!("return window.__seen[{i}] || null"),
            )
            .await?;
        let seen = seen.as_f64().context("stamp")?;
        took.push((seen - answered).max(0.0));
        from_sent.push(seen - sent);
    }
    eprintln!("bench: ui: status patch answered → row changed (ms): {took:.0?}");
    eprintln!("bench: ui: status patch sent → row changed (ms): {from_sent:.0?}");
    let p50_max = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() - 1])
    };
    Ok((p50_max(took), p50_max(from_sent)))
}

/// Types a Task's name into the name filter; the time until the table
/// holds that one row (in the page's clock, no WebDriver round trip).
async fn filter(browser: &Browser, n: usize) -> Result<f64> {
    let name = batch::name(n - 1);
    browser.eval(&format!(
        "window.__filterAt = performance.now(); window.__filtered = null; \
         const done = () => {{ if (document.querySelectorAll('#tasks tbody tr[data-key]').length === 1) \
           window.__filtered = performance.now() - window.__filterAt; else requestAnimationFrame(done); }}; \
         const i = document.querySelector('#filters input[name=name]'); \
         i.value = '{name}'; i.dispatchEvent(new Event('input', {{bubbles: true}})); \
         requestAnimationFrame(done); return true"
    ))?;
    let v = browser
        .until(
            Duration::from_secs(20),
            "the filtered table",
            "return window.__filtered",
        )
        .await?;
    let ms = v.as_f64().context("filter time")?;
    if ms <= 0.0 {
        bail!("filter time {ms}");
    }
    Ok(ms)
}

/// Opens the timeline over every Task (no filter): the time until its
/// lanes are painted (the frame after they are written, page clock), and
/// the number of lanes in the page.
async fn timeline(browser: &Browser) -> Result<(f64, u64)> {
    browser.eval(
        "window.__tlAt = performance.now(); window.__tl = null; \
         const done = () => { if (document.querySelector('#timeline .row')) \
           requestAnimationFrame(() => { window.__tl = [performance.now() - window.__tlAt, \
             document.querySelectorAll('#timeline .row').length]; }); \
           else requestAnimationFrame(done); }; \
         location.hash = '#/timeline'; requestAnimationFrame(done); return true",
    )?;
    let v = browser
        .until(
            Duration::from_secs(20),
            "the timeline's lanes",
            "return window.__tl",
        )
        .await?;
    let ms = v[0].as_f64().context("timeline time")?;
    let lanes = v[1].as_u64().context("timeline lanes")?;
    if ms <= 0.0 || lanes == 0 {
        bail!("timeline {v}");
    }
    eprintln!("bench: ui: timeline painted in {ms:.0} ms, {lanes} lanes in the page");
    Ok((ms, lanes))
}

pub fn render(u: &Ui) -> String {
    format!(
        "kubectl longtask ui with {} Tasks (goals: first paint < 2000 ms, change → page < 1000 ms)\n\
         | first paint | list shown (bench) | change → page p50 / max (from the patch's answer) | (from its send) | filter repaint | timeline painted (lanes held) | plugin RSS / peak | page JS heap |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n\
         | {:.0} ms | {:.0} ms | {:.0} / {:.0} ms | {:.0} / {:.0} ms | {:.0} ms | {:.0} ms ({}) | {:.1} / {:.1} MiB | {:.1} MiB |\n",
        u.tasks,
        u.first_paint_ms,
        u.list_shown_ms,
        u.change_p50_ms,
        u.change_max_ms,
        u.sent_p50_ms,
        u.sent_max_ms,
        u.filter_ms,
        u.timeline_ms,
        u.timeline_lanes,
        u.plugin_rss_mib,
        u.plugin_hwm_mib,
        u.page_heap_mib
    )
}
