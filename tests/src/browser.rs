//! A real browser for the web page's tests: Debian's Chromium, headless,
//! driven over WebDriver by Debian's chromedriver (both installed by
//! `tests/run`). Both listen on loopback only, and the browser is kept off
//! every other address: a proxy on a closed loopback port for anything not
//! on 127.0.0.1, no name resolution, no background fetches. Stopped with
//! every process it started on drop.

use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
use serde_json::{Value, json};

use crate::http;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CALL: Duration = Duration::from_secs(60);

/// One headless Chromium with one WebDriver session.
pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    profile: PathBuf,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and a session in a fresh
    /// profile under `dir`.
    pub fn start(dir: &Path) -> Result<Browser> {
        ensure!(
            Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists(),
            "{CHROMIUM} or {CHROMEDRIVER} missing: tests/run installs them \
             (apt-get install chromium chromium-driver)"
        );
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let profile = dir.join(format!("chromium-{port}"));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile)?;
        let log = std::fs::File::create(profile.with_extension("log"))?;
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(log)
            // Its own process group: the drop stops the browser with it.
            .process_group(0)
            .spawn()
            .context("start chromedriver")?;
        let mut b = Browser {
            driver,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            session: String::new(),
            profile,
        };
        b.wait_ready()?;
        b.session = b.new_session()?;
        Ok(b)
    }

    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let host = self.addr.to_string();
            let r = http::request(
                self.addr,
                "GET",
                "/status",
                &[("Host", &host)],
                b"",
                Duration::from_secs(5),
            );
            if let Ok(r) = r
                && r.status == 200
            {
                return Ok(());
            }
            if let Some(st) = self.driver.try_wait()? {
                bail!("chromedriver exited: {st}");
            }
            ensure!(Instant::now() < deadline, "chromedriver not ready in 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn new_session(&self) -> Result<String> {
        let args = [
            "--headless=new".to_owned(),
            // Run as root in CI: Chromium's sandbox needs an unprivileged user.
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--window-size=1400,900".to_owned(),
            // A page measured as a user in front of it sees it: no timer or
            // frame throttling of a window headless Chromium deems hidden.
            "--disable-background-timer-throttling".to_owned(),
            "--disable-renderer-backgrounding".to_owned(),
            "--disable-backgrounding-occluded-windows".to_owned(),
            format!("--user-data-dir={}", self.profile.display()),
            "--no-first-run".to_owned(),
            "--no-default-browser-check".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-domain-reliability".to_owned(),
            "--disable-features=Translate,OptimizationHints,MediaRouter".to_owned(),
            // Nothing leaves loopback: other hosts go to a closed port and
            // resolve to nothing.
            "--proxy-server=http://127.0.0.1:9".to_owned(),
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1".to_owned(),
        ];
        // Downloads go to the profile's own directory, without asking.
        let prefs = json!({
            "download.default_directory": self.downloads(),
            "download.prompt_for_download": false,
        });
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args, "prefs": prefs},
        }}});
        let v = self.call("POST", "/session", Some(&caps))?;
        v["sessionId"]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("no sessionId in {v}"))
    }

    /// One WebDriver command; its `value`, or the driver's error.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let host = self.addr.to_string();
        let mut headers = vec![("Host", host.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        let r = http::request(self.addr, method, path, &headers, bytes.as_bytes(), CALL)?;
        let v: Value = serde_json::from_slice(&r.body)
            .with_context(|| format!("{method} {path}: {}", r.text()))?;
        if r.status != 200 {
            bail!(
                "{method} {path}: {} {}: {}",
                r.status,
                v["value"]["error"],
                v["value"]["message"]
            );
        }
        Ok(v["value"].clone())
    }

    fn session_call(&self, method: &str, what: &str, body: Option<&Value>) -> Result<Value> {
        self.call(method, &format!("/session/{}/{what}", self.session), body)
    }

    /// Where the browser saves downloads (files under their final name once
    /// whole; `.crdownload` while under way).
    pub fn downloads(&self) -> PathBuf {
        self.profile.join("downloads")
    }

    /// Loads `url` (waits for the page's load event, as WebDriver does).
    pub fn goto(&self, url: &str) -> Result<()> {
        self.session_call("POST", "url", Some(&json!({"url": url})))
            .map(|_| ())
    }

    /// The page's URL now.
    pub fn url(&self) -> Result<String> {
        let v = self.session_call("GET", "url", None)?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// Runs `body` (a function body: `return ...`) in the page; its result.
    pub fn eval(&self, body: &str) -> Result<Value> {
        self.session_call(
            "POST",
            "execute/sync",
            Some(&json!({"script": body, "args": []})),
        )
    }

    /// Polls `body` every 100 ms until it returns something other than
    /// null or false; that value, or an error naming `what` after `timeout`.
    pub async fn until(&self, timeout: Duration, what: &str, body: &str) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match self.eval(body) {
                Ok(v) if !v.is_null() && v != Value::Bool(false) => return Ok(v),
                Ok(v) => v,
                Err(e) => Value::String(format!("{e:#}")),
            };
            if Instant::now() > deadline {
                bail!("{what}: not seen in {timeout:?} (last: {last})");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the element `css` selects, as a user does (WebDriver's click:
    /// scrolled into view, refused if something covers it).
    pub fn click(&self, css: &str) -> Result<()> {
        let el = self.session_call(
            "POST",
            "element",
            Some(&json!({"using": "css selector", "value": css})),
        )?;
        let id = el
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .with_context(|| format!("no element {css}: {el}"))?;
        self.session_call("POST", &format!("element/{id}/click"), Some(&json!({})))
            .map(|_| ())
    }

    /// Saves a PNG of the window to `path`.
    pub fn screenshot(&self, path: &Path) -> Result<()> {
        let v = self.session_call("GET", "screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().context("screenshot is not a string")?)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png).with_context(|| format!("{}", path.display()))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.call("DELETE", &format!("/session/{}", self.session), None);
        }
        // The whole group (driver and the browser it started), then any
        // browser process that left it, found by its profile directory.
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &group])
            .status();
        let _ = self.driver.wait();
        let profile = self.profile.display().to_string();
        for pid in crate::procs::with_cmdline(&profile) {
            let _ = crate::procs::signal(pid, "KILL");
        }
    }
}
