//! The page against a hostile local user (issue 40): the token on no
//! command line, in no cookie another local server receives, no API call
//! without the token's header, `nosniff` on every answer, and a log view
//! that stays bounded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use longtask_e2e::{Cluster, TestNs, http, procs, root, sh_task, wait};

use crate::cases::{MINUTE, browser, open_task, page_shows, serve, serve_with, status_is};

/// Header names and values for one request.
type Headers<'a> = Vec<(&'a str, &'a str)>;

/// A stand-in for xdg-open, first on the plugin's PATH: it writes its
/// arguments to `argv` and stays alive (as a real opener and the browser
/// it starts do) until `done` exists, two minutes at most.
struct Opener {
    dir: PathBuf,
}

impl Opener {
    fn new(ns: &TestNs) -> Result<Opener> {
        let dir = root().join("target/ui-opener").join(&ns.name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let d = dir.display();
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{d}/argv.tmp' && mv '{d}/argv.tmp' '{d}/argv'\n\
             i=0\nwhile [ ! -e '{d}/done' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
        );
        let path = dir.join("xdg-open");
        std::fs::write(&path, script)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(Opener { dir })
    }

    /// Its arguments, once it ran.
    async fn argv(&self) -> Result<Vec<String>> {
        let file = self.dir.join("argv");
        wait::until(
            Duration::from_secs(30),
            "the plugin ran xdg-open",
            || async { Ok(file.exists()) },
        )
        .await?;
        Ok(std::fs::read_to_string(&file)?
            .lines()
            .map(str::to_owned)
            .collect())
    }

    /// Whether it is still running (its command line names its path).
    fn running(&self) -> bool {
        !procs::with_cmdline(&self.dir.join("xdg-open").display().to_string()).is_empty()
    }
}

impl Drop for Opener {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("done"), "");
    }
}

/// The command lines of every process on the machine holding `needle`.
fn cmdlines_with(needle: &str) -> Vec<String> {
    procs::with_cmdline(needle)
        .into_iter()
        .map(|pid| {
            let b = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!("{pid}: {}", String::from_utf8_lossy(&b).replace('\0', " "))
        })
        .collect()
}

/// A `file://` URL's path, percent-decoded.
fn file_path(url: &str) -> Result<PathBuf> {
    let rest = url
        .strip_prefix("file://")
        .with_context(|| format!("not a file URL: {url:?}"))?;
    let mut bytes = Vec::new();
    let mut it = rest.bytes();
    while let Some(b) = it.next() {
        if b == b'%' {
            let hex: String = it.by_ref().take(2).map(char::from).collect();
            bytes.push(u8::from_str_radix(&hex, 16).with_context(|| format!("{url:?}"))?);
        } else {
            bytes.push(b);
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

fn mode(p: &Path) -> Result<u32> {
    Ok(std::fs::metadata(p)
        .with_context(|| p.display().to_string())?
        .permissions()
        .mode()
        & 0o777)
}

/// `ui` with the browser opened (xdg-open replaced by a recorder that
/// stays alive): while the opener and then the browser run, no process
/// on the machine has the token in its command line; the opener got a
/// private file's URL, which the headless browser opens to a page that
/// shows the Tasks; the file is gone once the server stops.
pub async fn ui_token_never_on_a_command_line(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task("shown", "sleep 300", ""))?;
    let opener = Opener::new(&ns)?;
    let mut ui = serve_with(&ns, &["ui"], Some(&opener.dir)).await?;
    let token = ui.token().to_owned();
    ensure!(
        token.len() == 64,
        "no token in the printed URL {:?}",
        ui.url
    );
    let argv = opener.argv().await?;
    println!("xdg-open was given {argv:?}");
    ensure!(opener.running(), "the stand-in opener is not running");
    let holders = cmdlines_with(&token);
    ensure!(
        holders.is_empty(),
        "the token is on command lines while the opener runs: {holders:?}"
    );
    ensure!(
        argv.iter().all(|a| !a.contains(&token)),
        "xdg-open's arguments hold the token: {argv:?}"
    );
    ensure!(argv.len() == 1, "xdg-open's arguments: {argv:?}");
    let file = file_path(&argv[0])?;
    let dir = file.parent().context("the file's directory")?.to_owned();
    ensure!(
        mode(&file)? == 0o600 && mode(&dir)? == 0o700,
        "{} is {:o} in a directory {:o}, want 600 in 700",
        file.display(),
        mode(&file)?,
        mode(&dir)?
    );
    let b = browser()?;
    b.goto(&argv[0])?;
    let row = format!(
        "return !!document.querySelector('tr[data-key=\"{}/shown\"]')",
        ns.name
    );
    b.until(MINUTE, "the Task's row on the opened page", &row)
        .await?;
    let at = b.url()?;
    ensure!(
        at.starts_with(&ui.base()) && !at.contains(&token),
        "the page is at {at:?}"
    );
    let holders = cmdlines_with(&token);
    ensure!(
        holders.is_empty(),
        "the token is on command lines with the browser open: {holders:?}"
    );
    // Ctrl-C: the server stops and takes the file with it.
    procs::signal(i32::try_from(ui.proc.pid())?, "INT")?;
    let code = ui.proc.exit(Duration::from_secs(20)).await?;
    ensure!(code == Some(0), "the plugin exited {code:?} on Ctrl-C");
    ensure!(
        !file.exists() && !dir.exists(),
        "{} left behind after the server stopped",
        file.display()
    );
    Ok(())
}

/// A local HTTP server on another port that answers every request with a
/// small page and keeps the head of each request.
struct Recorder {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Recorder {
    fn start() -> Result<Recorder> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let heads = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (kept, stopped) = (Arc::clone(&heads), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        if let Some(head) = answer(s) {
                            kept.lock().unwrap().push(head);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Ok(Recorder {
            addr,
            heads,
            stop,
            thread: Some(thread),
        })
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// Reads one request's head and answers it with the other server's page.
fn answer(mut s: TcpStream) -> Option<String> {
    s.set_nonblocking(false).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let body = "<!doctype html><title>other</title><p id=\"other\">another local server</p>\
                <img src=\"/pixel.png\" alt=\"\">";
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    Some(String::from_utf8_lossy(&raw).into_owned())
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// After the page was opened and used, the same browser opens a page of
/// another server on another port of 127.0.0.1: no request it receives
/// carries the token in any header (Cookie included), and that page's
/// script finds it in no storage it can read.
pub async fn ui_other_local_server_gets_no_token(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task("used", "sleep 300", ""))?;
    status_is(&ns, "used", "phase", "Running").await?;
    let ui = serve(&ns, &[]).await?;
    let token = ui.token().to_owned();
    let b = browser()?;
    open_task(&b, &ui, &ns, "used")?;
    page_shows(&b, "Phase", "Running").await?;
    // The page's own storage, read before leaving it.
    let kept = b.eval("return sessionStorage.getItem('longtask-ui-token')")?;
    let other = Recorder::start()?;
    b.goto(&format!("http://{}/page", other.addr))?;
    let seen = b
        .until(
            Duration::from_secs(20),
            "the other server's page",
            "return document.querySelector('#other') ? \
             [document.cookie, JSON.stringify(sessionStorage), JSON.stringify(localStorage)] : null",
        )
        .await?;
    ensure!(
        !seen.to_string().contains(&token),
        "the other page's script reads the token: {seen}"
    );
    // The image too, or time for it: the requests are all in.
    wait::until(
        Duration::from_secs(10),
        "the other page's image",
        || async { Ok(other.heads().iter().any(|h| h.contains("/pixel.png"))) },
    )
    .await?;
    let heads = other.heads();
    println!("the other server received: {heads:#?}");
    ensure!(
        heads.iter().any(|h| h.starts_with("GET /page ")),
        "the page's request never came: {heads:?}"
    );
    for h in &heads {
        ensure!(
            !h.to_ascii_lowercase().contains(&token),
            "another local server received the token: {h}"
        );
        ensure!(
            !h.to_ascii_lowercase().contains("\ncookie:"),
            "another local server received a cookie: {h}"
        );
    }
    ensure!(
        kept.as_str() == Some(token.as_str()),
        "the page kept {kept} in its session storage, not the token"
    );
    Ok(())
}

/// What a form, or any request that cannot set a header, sends to cancel:
/// the old cookie, the token in the query, from this very origin. Each is
/// refused with 403 and the Task runs on; the same request with the
/// token's header cancels it (so the refusals are not a broken route).
pub async fn ui_post_without_the_header_refused(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task("kept", "sleep 300", ""))?;
    status_is(&ns, "kept", "phase", "Running").await?;
    let ui = serve(&ns, &[]).await?;
    let host = format!("127.0.0.1:{}", ui.port);
    let origin = format!("http://{host}");
    let cookie = format!("longtask_ui_{}={}", ui.port, ui.token());
    let path = format!("/api/tasks/{}/kept/cancel", ns.name);
    let with_query = format!("{path}?token={}", ui.token());
    let form = ("Content-Type", "application/x-www-form-urlencoded");
    let tries: [(&str, &str, Headers); 4] = [
        ("the cookie", &path, vec![("Cookie", &cookie)]),
        ("the query", &with_query, vec![]),
        (
            "the query and the cookie",
            &with_query,
            vec![("Cookie", &cookie)],
        ),
        ("the token as the body", &path, vec![]),
    ];
    for (what, target, extra) in &tries {
        let mut headers = vec![("Host", host.as_str()), ("Origin", origin.as_str()), form];
        headers.extend(extra.iter().copied());
        let body = format!("token={}", ui.token());
        let r = http::request(
            ui.addr(),
            "POST",
            target,
            &headers,
            body.as_bytes(),
            Duration::from_secs(10),
        )?;
        ensure!(
            r.status == 403,
            "a POST with {what} but no header: {} {}",
            r.status,
            r.text()
        );
        // The handler patches before it answers: a refusal that let the
        // patch through would show now.
        let cancel = ns.k(&["get", "task", "kept", "-o", "jsonpath={.spec.cancel}"])?;
        ensure!(
            cancel.trim().is_empty() || cancel.trim() == "false",
            "cancelled by a POST with {what}: spec.cancel={cancel}"
        );
    }
    let r = http::request(
        ui.addr(),
        "POST",
        &path,
        &[
            ("Host", &host),
            ("Origin", &origin),
            ("X-Longtask-Token", ui.token()),
        ],
        b"",
        Duration::from_secs(10),
    )?;
    ensure!(
        r.status == 200,
        "with the header: {} {}",
        r.status,
        r.text()
    );
    status_is(&ns, "kept", "reason", "Cancelled").await?;
    Ok(())
}

/// Status and headers of one answer, read up to the end of its head (a
/// stream's body never ends).
fn head(
    ui: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&ui, Duration::from_secs(10))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = s
            .read(&mut buf)
            .with_context(|| format!("{method} {path}"))?;
        if n == 0 {
            bail!("{method} {path}: closed before the end of the head");
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let text = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("{method} {path}: {text}"))?;
    Ok((status, text))
}

/// Every answer says `X-Content-Type-Options: nosniff` and `no-store`:
/// the page, its assets, JSON, streams, refusals, missing Tasks, unknown
/// paths, a wrong method; none sets a cookie.
pub async fn ui_every_answer_says_nosniff(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let ui = serve(&ns, &[]).await?;
    let host = format!("127.0.0.1:{}", ui.port);
    let h: &str = &host;
    let tok = ("X-Longtask-Token", ui.token());
    let missing = format!("/api/tasks/{}/missing", ns.name);
    let (result, stream, cancel) = (
        format!("{missing}/result"),
        format!("{missing}/stream"),
        format!("{missing}/cancel"),
    );
    let asks: Vec<(&str, &str, Headers, u16)> = vec![
        ("GET", "/", vec![("Host", h)], 200),
        ("GET", "/app.js", vec![("Host", h)], 200),
        ("GET", "/app.css", vec![("Host", h)], 200),
        ("GET", "/", vec![("Host", "evil.example")], 403),
        ("GET", "/api/config", vec![("Host", h), tok], 200),
        ("GET", "/api/config", vec![("Host", h)], 403),
        ("GET", "/api/tasks/stream", vec![("Host", h), tok], 200),
        ("GET", &stream, vec![("Host", h), tok], 200),
        ("GET", &result, vec![("Host", h), tok], 404),
        ("POST", &cancel, vec![("Host", h), tok], 404),
        ("GET", &cancel, vec![("Host", h), tok], 405),
        ("GET", "/nothing/here", vec![("Host", h), tok], 404),
    ];
    for (method, path, headers, want) in &asks {
        let (status, text) = head(ui.addr(), method, path, headers)?;
        let says = |line: &str| text.lines().any(|l| l.trim() == line);
        ensure!(
            says("x-content-type-options: nosniff") && says("cache-control: no-store"),
            "{method} {path} ({status}) lacks nosniff or no-store:\n{text}"
        );
        ensure!(
            status == *want,
            "{method} {path}: {status}, want {want}\n{text}"
        );
        ensure!(
            !text.contains("\nset-cookie:"),
            "{method} {path} sets a cookie:\n{text}"
        );
    }
    Ok(())
}

/// A Task that prints 6,000 lines: its page keeps the last 5,000 (the
/// last line included, none missing between) and says how many earlier
/// ones it dropped.
pub async fn ui_log_view_bounded(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task(
        "chatty",
        "seq 1 6000; echo ok > \"$LONGTASK_RESULT\"",
        "",
    ))?;
    let ui = serve(&ns, &[]).await?;
    let b = browser()?;
    open_task(&b, &ui, &ns, "chatty")?;
    let start = Instant::now();
    b.until(
        2 * MINUTE,
        "the last line on the page",
        "return [...document.querySelectorAll('#log span')].some(s => s.textContent === '6000\\n')",
    )
    .await?;
    println!("6,000 lines on the page in {:?}", start.elapsed());
    let shown = b.eval(
        "const all = [...document.querySelectorAll('#log > span')]; \
         const m = document.querySelector('#log > span.dropped'); \
         return {entries: all.filter(s => !s.classList.contains('dropped')).length, \
                 numbers: all.map(s => s.textContent).filter(t => /^\\d+\\n$/.test(t)).map(Number), \
                 marker: m && !m.hidden ? m.textContent : null, first: all[0] === m}",
    )?;
    let entries = shown["entries"].as_u64().context("entries")?;
    let numbers: Vec<u64> = shown["numbers"]
        .as_array()
        .context("numbers")?
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    let marker = shown["marker"].as_str().unwrap_or_default();
    println!(
        "log view: {entries} entries, lines {:?}..{:?}, marker {marker:?}",
        numbers.first(),
        numbers.last()
    );
    ensure!(
        entries == 5000,
        "{entries} entries in the log view, want 5000"
    );
    ensure!(
        numbers.last() == Some(&6000) && numbers.windows(2).all(|w| w[1] == w[0] + 1),
        "the lines shown are not the last ones in order: {:?}..{:?} ({})",
        numbers.first(),
        numbers.last(),
        numbers.len()
    );
    let first = numbers.first().copied().unwrap_or_default();
    let dropped: u64 = marker
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("marker {marker:?}"))?;
    ensure!(
        shown["first"] == true
            && marker.trim_end().ends_with("earlier lines not shown")
            && (first.saturating_sub(1)..first + 5).contains(&dropped),
        "marker {marker:?} (first in the log: {}) for a view starting at line {first}",
        shown["first"]
    );
    Ok(())
}
