//! A Task's output files on its page (issue 35): listed, downloaded by
//! the browser itself through a one-time link, byte-exact; wrong bytes
//! leave no file under the output's name; a refusal is shown on the page.
//! The Task really runs; its `status.outputs` and download Secret are
//! written by the case, as the operator writes them, with links to a
//! loopback object server ([`longtask_e2e::objects`]).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use longtask_e2e::browser::Browser;
use longtask_e2e::objects::{Objects, give_outputs};
use longtask_e2e::{Cluster, TestNs, http, sh_task, tasks, wait};
use serde_json::Value;

use crate::cases::{MINUTE, Served, browser, open_task, screenshot, serve};

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[2] ^ seed)
        .collect()
}

async fn finished(ns: &TestNs, name: &str) -> Result<()> {
    ns.apply(&sh_task(name, "true", ""))?;
    wait::condition(&tasks(&ns.client, &ns.name), name, "Complete", MINUTE).await?;
    Ok(())
}

/// Clicks the Download button of output `file` and waits for what the
/// page says next to it.
async fn click_download(b: &Browser, file: &str) -> Result<String> {
    b.click(&format!("#outputs tr[data-name=\"{file}\"] button"))?;
    let said = b
        .until(
            Duration::from_secs(20),
            &format!("the page's word on downloading {file}"),
            &format!(
                "const s = document.querySelector('#outputs tr[data-name=\"{file}\"] .state').textContent; \
                 return s && !s.endsWith('…') ? s : null"
            ),
        )
        .await?;
    Ok(said.as_str().unwrap_or_default().to_owned())
}

/// Waits until the browser has saved `name` whole (no `.crdownload` of
/// it left), up to a minute.
async fn saved(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let path = dir.join(name);
    wait::until(MINUTE, &format!("{name} saved by the browser"), || {
        let partial = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().ends_with(".crdownload"))
            })
            .unwrap_or(false);
        let done = path.exists() && !partial;
        async move { Ok(done) }
    })
    .await?;
    Ok(std::fs::read(&path)?)
}

/// The page lists the outputs and the list their size; Download saves
/// the exact bytes through the browser's own download; an object whose
/// bytes are not the listed ones fails in the browser (no file under its
/// name) and the server says why; an expired grant is shown on the page.
pub async fn ui_outputs_download_checked(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let store = Objects::start()?;
    let model = bytes(2 * 1024 * 1024 + 5, 1);
    let evil = bytes(2 * 1024 * 1024, 2);
    store.put("model.bin", model.clone());
    store.put("evil.bin", evil.clone());
    finished(&ns, "train").await?;
    let listed: [(&str, &[u8]); 2] = [
        ("model.bin", &model),
        ("evil.bin", &bytes(2 * 1024 * 1024, 3)),
    ];
    give_outputs(
        &ns,
        "train",
        &listed,
        &|n| store.url(n),
        "2099-01-01T00:00:00Z",
    )?;
    finished(&ns, "stale").await?;
    give_outputs(
        &ns,
        "stale",
        &[("model.bin", &model)],
        &|n| store.url(n),
        "2001-01-01T00:00:00Z",
    )?;

    let ui = serve(&ns, &[]).await?;
    let b = browser()?;
    listed_and_saved(&b, &ui, &ns, &model).await?;
    wrong_bytes_fail(&b, &ui).await?;
    expired_told(&b, &ui, &ns).await?;
    one_time_links(&ui, &ns, &model)
}

/// The list's Outputs column, the page's outputs, and Download saving
/// the exact bytes.
async fn listed_and_saved(b: &Browser, ui: &Served, ns: &TestNs, model: &[u8]) -> Result<()> {
    b.goto(&ui.url)?;
    let cell = format!(
        "const c = document.querySelector('tr[data-key=\"{}/train\"] td.outputs'); return c && c.textContent",
        ns.name
    );
    let size = b
        .until(Duration::from_secs(30), "the Outputs column", &cell)
        .await?;
    ensure!(size == "2 files, 4.0Mi", "the list shows {size}");
    open_task(b, ui, ns, "train")?;
    b.until(
        Duration::from_secs(30),
        "two outputs listed",
        "return document.querySelectorAll('#outputs tbody tr').length === 2",
    )
    .await?;
    let said = click_download(b, "model.bin").await?;
    ensure!(said.starts_with("started"), "the page said {said:?}");
    screenshot(b, "ui-outputs.png")?;
    let got = saved(&b.downloads(), "model.bin").await?;
    ensure!(
        got == model,
        "saved {} bytes, not the model's {}",
        got.len(),
        model.len()
    );
    Ok(())
}

/// An object whose bytes are not the listed ones: the server stops the
/// answer and says why, and the browser keeps no file under its name.
async fn wrong_bytes_fail(b: &Browser, ui: &Served) -> Result<()> {
    let said = click_download(b, "evil.bin").await?;
    ensure!(said.starts_with("started"), "the page said {said:?}");
    wait::until(MINUTE, "the server to stop the wrong download", || {
        let told = ui.proc.stderr().contains("download of output \"evil.bin\"");
        async move { Ok(told) }
    })
    .await?;
    let stderr = ui.proc.stderr();
    ensure!(
        stderr.contains("is not what the Task uploaded"),
        "the server said: {stderr}"
    );
    // The browser's download has failed by now or does so shortly: for
    // 5 s, no file may appear under the output's own name.
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        ensure!(
            !b.downloads().join("evil.bin").exists(),
            "a complete-looking evil.bin was saved"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// An expired grant is told on the page, naming the Secret.
async fn expired_told(b: &Browser, ui: &Served, ns: &TestNs) -> Result<()> {
    open_task(b, ui, ns, "stale")?;
    b.until(
        Duration::from_secs(30),
        "the stale Task's output listed",
        "return document.querySelectorAll('#outputs tbody tr').length === 1",
    )
    .await?;
    let said = click_download(b, "model.bin").await?;
    let secret = format!("{}/stale-outputs", ns.name);
    ensure!(
        said.contains(&format!(
            "the download links in the Secret {secret} expired at"
        )),
        "the page said {said:?}"
    );
    Ok(())
}

/// On the wire: a ticket needs the token's header; its link works once,
/// needs no header, and answers an attachment with the exact bytes.
fn one_time_links(ui: &Served, ns: &TestNs, model: &[u8]) -> Result<()> {
    let host = format!("127.0.0.1:{}", ui.port);
    let t = Duration::from_secs(30);
    let path = format!("/api/tasks/{}/train/download", ns.name);
    let body = br#"{"file":"model.bin"}"#;
    let json = ("Content-Type", "application/json");
    let r = http::request(ui.addr(), "POST", &path, &[("Host", &host), json], body, t)?;
    ensure!(
        r.status == 403,
        "a ticket without the token: {} {}",
        r.status,
        r.text()
    );
    let token = ("X-Longtask-Token", ui.token());
    let r = http::request(
        ui.addr(),
        "POST",
        &path,
        &[("Host", &host), json, token],
        body,
        t,
    )?;
    ensure!(r.status == 200, "a ticket: {} {}", r.status, r.text());
    let v: Value = serde_json::from_slice(&r.body)?;
    let link = v["path"].as_str().context("no path")?.to_owned();
    ensure!(v["filename"] == "model.bin", "{v}");
    let r = http::request(ui.addr(), "GET", &link, &[("Host", &host)], b"", t)?;
    ensure!(
        r.status == 200 && r.body == model,
        "the link: {} with {} bytes",
        r.status,
        r.body.len()
    );
    let disposition = r.header("content-disposition").unwrap_or_default();
    ensure!(
        disposition.starts_with("attachment; filename=\"model.bin\""),
        "{disposition}"
    );
    ensure!(
        r.header("x-content-type-options") == Some("nosniff"),
        "{:?}",
        r.headers
    );
    let again = http::request(ui.addr(), "GET", &link, &[("Host", &host)], b"", t)?;
    ensure!(
        again.status == 404,
        "the link a second time: {} {}",
        again.status,
        again.text()
    );
    let forged = format!("/download/{}", "0".repeat(64));
    let r = http::request(ui.addr(), "GET", &forged, &[("Host", &host)], b"", t)?;
    ensure!(r.status == 404, "a made-up ticket: {}", r.status);
    Ok(())
}
