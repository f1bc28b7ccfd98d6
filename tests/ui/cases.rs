//! The web page's promises, each shown in a real browser or on the wire.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use longtask_e2e::browser::Browser;
use longtask_e2e::kubectl::Streaming;
use longtask_e2e::{Cluster, TestNs, case, http, root, sh_task, wait};
use serde_json::Value;

use crate::Case;
use crate::hardening;
use crate::outputs;

pub static ALL: &[Case] = &[
    case!(ui_progress_rises_live, false, ui_progress_rises_live),
    case!(
        ui_task_page_follows_log_across_retry,
        false,
        ui_task_page_follows_log_across_retry
    ),
    case!(ui_cancel_button_cancels, false, ui_cancel_button_cancels),
    case!(
        ui_refusal_names_missing_right,
        false,
        ui_refusal_names_missing_right
    ),
    case!(
        ui_timeline_one_bar_per_task,
        false,
        ui_timeline_one_bar_per_task
    ),
    case!(
        ui_long_list_holds_only_rows_in_view,
        false,
        ui_long_list_holds_only_rows_in_view
    ),
    case!(
        ui_guard_refuses_and_listens_on_loopback_only,
        false,
        ui_guard_refuses_and_listens_on_loopback_only
    ),
    case!(
        ui_token_never_on_a_command_line,
        false,
        hardening::ui_token_never_on_a_command_line
    ),
    case!(
        ui_other_local_server_gets_no_token,
        false,
        hardening::ui_other_local_server_gets_no_token
    ),
    case!(
        ui_post_without_the_header_refused,
        false,
        hardening::ui_post_without_the_header_refused
    ),
    case!(
        ui_every_answer_says_nosniff,
        false,
        hardening::ui_every_answer_says_nosniff
    ),
    case!(ui_log_view_bounded, false, hardening::ui_log_view_bounded),
    case!(
        ui_outputs_download_checked,
        false,
        outputs::ui_outputs_download_checked
    ),
];

pub(crate) const MINUTE: Duration = Duration::from_secs(60);

/// `kubectl longtask ui` running for one case.
pub(crate) struct Served {
    pub(crate) proc: Streaming,
    /// The URL it printed, with its token (in the fragment).
    pub(crate) url: String,
    pub(crate) port: u16,
}

impl Served {
    /// `http://127.0.0.1:PORT`, for pages after the first (the tab's
    /// session storage keeps the token from then on).
    pub(crate) fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub(crate) fn token(&self) -> &str {
        self.url.split("token=").nth(1).unwrap_or_default()
    }
}

/// Starts the plugin's server in `ns` (with `extra` flags, e.g. `--as`)
/// with `--no-browser`, and waits for the URL it prints.
pub(crate) async fn serve(ns: &TestNs, extra: &[&str]) -> Result<Served> {
    let mut args = vec!["ui", "--no-browser"];
    args.extend_from_slice(extra);
    serve_with(ns, &args, None).await
}

/// Starts `kubectl longtask ARGS` in `ns`, `first` ahead on its PATH, and
/// waits for the URL it prints.
pub(crate) async fn serve_with(
    ns: &TestNs,
    args: &[&str],
    first: Option<&std::path::Path>,
) -> Result<Served> {
    let proc = ns.kubectl.plugin_spawn_with(&ns.name, args, first)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let url = loop {
        let found = proc.lines().into_iter().find_map(|(_, l)| {
            l.split_once("longtask ui: ")
                .map(|(_, u)| u.trim().to_owned())
        });
        if let Some(u) = found {
            break u;
        }
        ensure!(
            Instant::now() < deadline,
            "no URL printed in 30 s: {:?} {}",
            proc.lines(),
            proc.stderr()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let port = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("URL {url:?}"))?;
    Ok(Served { proc, url, port })
}

pub(crate) fn browser() -> Result<Browser> {
    Browser::start(&root().join("target/ui-browsers"))
}

pub(crate) fn screenshot(b: &Browser, name: &str) -> Result<PathBuf> {
    let path = root().join("target/ui-screenshots").join(name);
    b.screenshot(&path)?;
    println!("screenshot: {}", path.display());
    Ok(path)
}

/// Waits until Task `name`'s `status.FIELD` is `want` in the API.
pub(crate) async fn status_is(ns: &TestNs, name: &str, field: &str, want: &str) -> Result<()> {
    wait::until(MINUTE, &format!("{name} {field} {want}"), || async {
        Ok(ns.status(name).await?[field] == want)
    })
    .await
}

/// Waits until the Task page's status row FIELD reads `want`.
pub(crate) async fn page_shows(b: &Browser, field: &str, want: &str) -> Result<()> {
    let js = format!(
        "const d = document.querySelector('dd[data-field={field}]'); \
         return d && d.textContent === '{want}'"
    );
    b.until(
        Duration::from_secs(20),
        &format!("{field} {want} on the page"),
        &js,
    )
    .await
    .map(|_| ())
}

/// Opens Task `name`'s page (the token URL first: the page keeps it).
pub(crate) fn open_task(b: &Browser, ui: &Served, ns: &TestNs, name: &str) -> Result<()> {
    b.goto(&ui.url)?;
    b.goto(&format!("{}/#/task/{}/{name}", ui.base(), ns.name))
}

/// A running Task's bar on the list rises while the page stays loaded
/// (a marker set in the page survives: no reload), one value at a time as
/// the program reports, up to 100 when it completes.
async fn ui_progress_rises_live(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let script = r#"for i in 1 2 3 4 5 6 7 8 9 10; do sleep 2; echo "$i/10 step $i" >> "$LONGTASK_PROGRESS"; done; echo ok > "$LONGTASK_RESULT""#;
    // The page is open before the Task exists: started first, the program
    // was at 80% by the time a loaded CI machine showed the page.
    let ui = serve(&ns, &[]).await?;
    let b = browser()?;
    b.goto(&ui.url)?;
    ensure!(
        !b.url()?.contains("token="),
        "the token stayed in the URL: {}",
        b.url()?
    );
    b.eval("window.__stayed = 'yes'; return true")?;
    ns.apply(&sh_task("climb", script, ""))?;
    let bar = format!(
        "const b = document.querySelector('tr[data-key=\"{}/climb\"] .bar'); \
         return window.__stayed !== 'yes' ? 'reloaded' : (b ? Number(b.dataset.percent) : null)",
        ns.name
    );
    let mut seen: Vec<i64> = Vec::new();
    let mut shot = false;
    let deadline = Instant::now() + 2 * MINUTE;
    loop {
        let v = b.eval(&bar)?;
        ensure!(v != "reloaded", "the page was reloaded");
        if let Some(p) = v.as_i64()
            && seen.last() != Some(&p)
        {
            seen.push(p);
            if !shot && (30..100).contains(&p) {
                screenshot(&b, "ui-list.png")?;
                shot = true;
            }
        }
        if seen.last() == Some(&100) {
            break;
        }
        ensure!(Instant::now() < deadline, "no 100% in 2 min; seen {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("progress on the page: {seen:?}");
    ensure!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "the bar went back: {seen:?}"
    );
    let between = seen.iter().filter(|p| (1..100).contains(*p)).count();
    ensure!(
        between >= 3,
        "fewer than 3 steps between 0 and 100: {seen:?}"
    );
    status_is(&ns, "climb", "phase", "Completed").await?;
    let row = format!(
        "const r = document.querySelector('tr[data-key=\"{}/climb\"]'); \
         return r && r.dataset.phase === 'Completed'",
        ns.name
    );
    b.until(Duration::from_secs(20), "Completed on the list", &row)
        .await?;
    Ok(())
}

/// A Task's page shows its log as the program prints it, the first
/// attempt's lines and then the retry's, each once, with a heading per pod.
async fn ui_task_page_follows_log_across_retry(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    // Process nodes share the machine's files: a marker tells the attempts apart.
    let marker = root().join("target/ui-markers").join(&ns.name);
    std::fs::create_dir_all(marker.parent().context("marker dir")?)?;
    let _ = std::fs::remove_file(&marker);
    // And the program prints nothing before the page is open (at most
    // 2 minutes): under load the browser took long enough to start that
    // the retry had printed most of its lines by then, which then came
    // together in the page's first read (a CI run: 1.5 s then 3.6 s).
    let open = marker.with_extension("open");
    let _ = std::fs::remove_file(&open);
    let script = format!(
        r#"w=0; while [ ! -e {o} ] && [ $w -lt 600 ]; do sleep 0.2; w=$((w + 1)); done
if [ -e {m} ]; then n=2; else n=1; touch {m}; fi
for i in 1 2 3 4; do echo "attempt $n line $i"; sleep $((n * 2)); done
[ $n = 2 ] || exit 1
echo ok > "$LONGTASK_RESULT""#,
        m = marker.display(),
        o = open.display()
    );
    ns.apply(&sh_task("flaky", &script, "  retries: 1\n"))?;
    let ui = serve(&ns, &[]).await?;
    let b = browser()?;
    open_task(&b, &ui, &ns, "flaky")?;
    std::fs::write(&open, b"")?;
    let lines: Vec<String> = (1..=2)
        .flat_map(|n| (1..=4).map(move |i| format!("attempt {n} line {i}")))
        .collect();
    let mut first: BTreeMap<usize, Instant> = BTreeMap::new();
    let start = Instant::now();
    let deadline = start + 2 * MINUTE;
    let mut text = String::new();
    while first.len() < lines.len() {
        ensure!(
            Instant::now() < deadline,
            "lines seen {:?} of {lines:?}; the log: {text}",
            first.keys().collect::<Vec<_>>()
        );
        text = b
            .eval("return document.querySelector('#log').textContent")?
            .as_str()
            .unwrap_or_default()
            .to_owned();
        for (i, l) in lines.iter().enumerate() {
            if text.contains(l.as_str()) {
                first.entry(i).or_insert_with(Instant::now);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let at = |i: usize| first[&i].duration_since(start).as_secs_f64();
    println!(
        "log lines on the page at (s): {:?}",
        (0..lines.len()).map(at).collect::<Vec<_>>()
    );
    for l in &lines {
        ensure!(
            text.matches(l.as_str()).count() == 1,
            "{l:?} not shown exactly once: {text}"
        );
    }
    let order: Vec<usize> = lines
        .iter()
        .map(|l| text.find(l.as_str()).unwrap_or(usize::MAX))
        .collect();
    ensure!(
        order.windows(2).all(|w| w[0] < w[1]),
        "out of order: {text}"
    );
    // Live, not all at the end: the retry's first line was on the page
    // well before its last was printed (they are 12 s apart). The page
    // finds the retry's pod and opens its log a few seconds late under
    // load, so its first lines may come together: with the lines 4.5 s
    // apart a CI run saw 3.9 s then 4.9 s, beside the images' build.
    ensure!(
        at(7) - at(4) >= 6.0,
        "the retry's lines arrived together: {:.1}s then {:.1}s",
        at(4),
        at(7)
    );
    let pods = b.eval("return document.querySelectorAll('#log .pod').length")?;
    ensure!(pods.as_i64() >= Some(2), "pod headings: {pods}\n{text}");
    status_is(&ns, "flaky", "phase", "Completed").await?;
    page_shows(&b, "Phase", "Completed").await?;
    screenshot(&b, "ui-task.png")?;
    Ok(())
}

/// The Cancel button ends a running Task Cancelled, and the page says so.
async fn ui_cancel_button_cancels(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task("long", "sleep 300", ""))?;
    status_is(&ns, "long", "phase", "Running").await?;
    let ui = serve(&ns, &[]).await?;
    let b = browser()?;
    open_task(&b, &ui, &ns, "long")?;
    b.until(
        Duration::from_secs(20),
        "Running on the page, Cancel enabled",
        "const p = document.querySelector('dd[data-field=Phase]'); \
         return p && p.textContent === 'Running' && !document.querySelector('#cancel').disabled",
    )
    .await?;
    b.click("#cancel")?;
    let said = b
        .until(
            Duration::from_secs(20),
            "the answer to Cancel",
            "const t = document.querySelector('#action-result').textContent; \
             return t.endsWith('…') ? null : t",
        )
        .await?;
    ensure!(
        said.as_str().is_some_and(|t| t.contains("cancelled")),
        "the page said {said}"
    );
    status_is(&ns, "long", "reason", "Cancelled").await?;
    page_shows(&b, "Reason", "Cancelled").await?;
    Ok(())
}

/// A user who may read Tasks but not patch them clicks Cancel: the page
/// says which right is missing, and the Task runs on.
async fn ui_refusal_names_missing_right(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: ui-viewer\n\
         rules:\n- apiGroups: [longtask.dev]\n  resources: [tasks]\n  verbs: [get, list, watch]\n\
         - apiGroups: [\"\"]\n  resources: [events, pods, pods/log]\n  verbs: [get, list, watch]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: ui-viewer\n\
         roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: ui-viewer\n\
         subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: ui-viewer\n",
    )?;
    ns.apply(&sh_task("kept", "sleep 300", ""))?;
    let ui = serve(&ns, &["--as", "ui-viewer"]).await?;
    let b = browser()?;
    open_task(&b, &ui, &ns, "kept")?;
    b.until(
        Duration::from_secs(30),
        "the Task on the page, Cancel enabled",
        "const p = document.querySelector('dd[data-field=Phase]'); \
         return p && !document.querySelector('#cancel').disabled",
    )
    .await?;
    b.click("#cancel")?;
    let said = b
        .until(
            Duration::from_secs(20),
            "the refusal",
            "const o = document.querySelector('#action-result'); \
             return o.className === 'error' ? o.textContent : null",
        )
        .await?;
    let said = said.as_str().unwrap_or_default();
    println!("the page said: {said}");
    for want in ["forbidden", "patch tasks", &ns.name] {
        ensure!(said.contains(want), "{want:?} missing from {said:?}");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let t = ns.k(&["get", "task", "kept", "-o", "jsonpath={.spec.cancel}"])?;
    ensure!(
        t.trim().is_empty() || t.trim() == "false",
        "cancelled anyway: {t}"
    );
    Ok(())
}

/// The timeline has one bar per Task, each with its segments.
async fn ui_timeline_one_bar_per_task(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let names = ["first", "second", "third"];
    for (i, n) in names.iter().enumerate() {
        let script = format!("sleep {}; echo ok > \"$LONGTASK_RESULT\"", 2 + 2 * i);
        ns.apply(&sh_task(n, &script, ""))?;
    }
    ns.all_complete(names.len(), 2 * MINUTE).await?;
    let ui = serve(&ns, &[]).await?;
    let b = browser()?;
    b.goto(&ui.url)?;
    b.goto(&format!("{}/#/timeline", ui.base()))?;
    let rows = b
        .until(
            Duration::from_secs(20),
            "three rows on the timeline",
            "const rs = [...document.querySelectorAll('#timeline .row')]; \
             return rs.length === 3 ? rs.map(r => [r.dataset.key, r.querySelectorAll('.lane > *').length]) : null",
        )
        .await?;
    let rows = rows.as_array().context("rows")?;
    let mut keys: Vec<String> = rows
        .iter()
        .map(|r| r[0].as_str().unwrap_or_default().to_owned())
        .collect();
    keys.sort();
    let mut want: Vec<String> = names.iter().map(|n| format!("{}/{n}", ns.name)).collect();
    want.sort();
    ensure!(keys == want, "timeline rows {keys:?}, want {want:?}");
    for r in rows {
        ensure!(r[1].as_i64() >= Some(1), "a row without a bar: {r}");
    }
    screenshot(&b, "ui-timeline.png")?;
    Ok(())
}

/// 300 Tasks queued behind a cap of 0: the page counts all of them but
/// holds only the rows in view (and a margin); scrolled to the end, the
/// last Task's row is there, in order, and a filter finds a Task that was
/// out of view. The timeline likewise.
async fn ui_long_list_holds_only_rows_in_view(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    const N: usize = 300;
    ns.cap_active(0)?;
    let many: Vec<String> = (0..N)
        .map(|i| sh_task(&format!("t-{i:03}"), "true", ""))
        .collect();
    ns.apply(&many.join("---\n"))?;
    let ui = serve(&ns, &[]).await?;
    let b = browser()?;
    b.goto(&ui.url)?;
    b.until(
        MINUTE,
        "300 Tasks counted",
        &format!("return document.querySelector('#count').textContent.startsWith('{N} of {N} ')"),
    )
    .await?;
    screenshot(&b, "ui-list-queued.png")?;
    let held = b.eval("return document.querySelectorAll('#tasks tbody tr[data-key]').length")?;
    let held = held.as_u64().context("rows")? as usize;
    ensure!(
        held > 10 && held < N,
        "{held} rows in the table for {N} Tasks"
    );
    b.eval("window.scrollTo(0, document.body.scrollHeight); return true")?;
    let last = format!("{}/t-{:03}", ns.name, N - 1);
    let keys = b
        .until(
            Duration::from_secs(10),
            "the last row after scrolling",
            &format!(
                "const ks = [...document.querySelectorAll('#tasks tbody tr[data-key]')].map(t => t.dataset.key); \
                 return ks.includes('{last}') ? ks : null"
            ),
        )
        .await?;
    let keys: Vec<&str> = keys
        .as_array()
        .context("keys")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    ensure!(
        keys.len() < N && keys.last() == Some(&last.as_str()),
        "rows at the end: {} ending {:?}",
        keys.len(),
        keys.last()
    );
    let mut sorted = keys.clone();
    sorted.sort();
    ensure!(sorted == keys, "rows out of order at the end");
    // Still scrolled to the end: the filtered list is shown, not an empty
    // window past its end (the count and the rows are painted together).
    b.goto(&format!("{}/#/?name=t-150", ui.base()))?;
    b.until(
        Duration::from_secs(10),
        "the filter's count",
        &format!("return document.querySelector('#count').textContent.startsWith('1 of {N} ')"),
    )
    .await?;
    let ks = b.eval(
        "return [...document.querySelectorAll('#tasks tbody tr[data-key]')].map(t => t.dataset.key)",
    )?;
    ensure!(
        ks == serde_json::json!([format!("{}/t-150", ns.name)]),
        "rows for the filter, scrolled down: {ks}"
    );
    // The timeline holds only the lanes in view too, and the last one
    // once scrolled to the end.
    b.goto(&format!("{}/#/timeline", ui.base()))?;
    b.eval("window.scrollTo(0, 0); return true")?;
    let lanes = "[...document.querySelectorAll('#timeline .row')].map(r => r.dataset.key)";
    let held = b
        .until(
            Duration::from_secs(10),
            "the timeline's first lanes",
            &format!("const ks = {lanes}; return ks.length > 0 ? ks.length : null"),
        )
        .await?;
    let held = held.as_u64().context("lanes")? as usize;
    ensure!(
        held > 10 && held < N,
        "{held} lanes on the timeline for {N} Tasks"
    );
    b.eval("window.scrollTo(0, document.body.scrollHeight); return true")?;
    b.until(
        Duration::from_secs(10),
        "the last lane after scrolling",
        &format!("return {lanes}.includes('{last}')"),
    )
    .await?;
    Ok(())
}

/// On the wire: the page itself (no data) is served without the token
/// but to this Host only; every API call without the token's header, or
/// with a foreign Host or Origin even with it, is refused; no answer sets
/// a cookie; the only listening socket on the port is bound to 127.0.0.1.
async fn ui_guard_refuses_and_listens_on_loopback_only(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let ui = serve(&ns, &[]).await?;
    let host = format!("127.0.0.1:{}", ui.port);
    let token = ("X-Longtask-Token", ui.token());
    let t = Duration::from_secs(10);
    let get = |path: &str, headers: &[(&str, &str)]| {
        http::request(ui.addr(), "GET", path, headers, b"", t)
    };
    let r = get("/", &[("Host", &host)])?;
    ensure!(
        r.status == 200 && r.text().contains("/app.js"),
        "the page without a token: {} {}",
        r.status,
        r.text()
    );
    let r = get("/", &[("Host", "evil.example")])?;
    ensure!(r.status == 403, "the page, foreign Host: {}", r.status);
    let r = get("/api/tasks/stream", &[("Host", &host)])?;
    ensure!(r.status == 403, "no token, the stream: {}", r.status);
    let r = get("/api/config", &[("Host", "evil.example"), token])?;
    ensure!(r.status == 403, "foreign Host: {} {}", r.status, r.text());
    let r = get(
        "/api/config",
        &[("Host", &host), ("Origin", "http://evil.example"), token],
    )?;
    ensure!(r.status == 403, "foreign Origin: {} {}", r.status, r.text());
    let r = http::request(
        ui.addr(),
        "POST",
        &format!("/api/tasks/{}/x/cancel", ns.name),
        &[("Host", &host), ("Origin", "http://evil.example"), token],
        b"",
        t,
    )?;
    ensure!(
        r.status == 403,
        "cross-site POST: {} {}",
        r.status,
        r.text()
    );
    let r = get("/api/config", &[("Host", &host), token])?;
    ensure!(
        r.status == 200,
        "with the token's header: {} {}",
        r.status,
        r.text()
    );
    ensure!(
        r.header("set-cookie").is_none(),
        "a cookie was set: {:?}",
        r.header("set-cookie")
    );
    let listening = listeners(ui.port)?;
    println!("listening on port {}: {listening:?}", ui.port);
    ensure!(
        listening == ["127.0.0.1"],
        "listening on {listening:?}, want 127.0.0.1 only"
    );
    Ok(())
}

/// The local addresses of the sockets listening on `port` (IPv4 and
/// IPv6), from /proc/net/tcp{,6}.
fn listeners(port: u16) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(file)?;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (f.get(1), f.get(3)) else {
                continue;
            };
            let Some((ip, p)) = local.split_once(':') else {
                continue;
            };
            // 0A: LISTEN.
            if *state != "0A" || u16::from_str_radix(p, 16).ok() != Some(port) {
                continue;
            }
            found.push(hex_ip(ip)?);
        }
    }
    Ok(found)
}

/// /proc/net's address text: IPv4 as one little-endian word, IPv6 as four.
fn hex_ip(hex: &str) -> Result<String> {
    let words: Vec<u32> = (0..hex.len() / 8)
        .map(|i| u32::from_str_radix(&hex[i * 8..i * 8 + 8], 16))
        .collect::<Result<_, _>>()?;
    Ok(match words.as_slice() {
        [w] => std::net::Ipv4Addr::from(w.to_le_bytes()).to_string(),
        [a, b, c, d] => {
            let mut bytes = [0u8; 16];
            for (i, w) in [a, b, c, d].iter().enumerate() {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
            }
            std::net::Ipv6Addr::from(bytes).to_string()
        }
        _ => bail!("address {hex:?}"),
    })
}
