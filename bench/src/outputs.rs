//! bench outputs: results by reference against plain HTTP, in one run, on
//! one SeaweedFS started here (tools/seaweedfs/install). The same bytes go
//! up and come down twice: through longtask_store (`upload_file` with a
//! POST-policy grant: hashed, then streamed as a form and hashed again;
//! `download` from a presigned GET: streamed, size and digest checked) and
//! as a plain PUT to a presigned URL and a plain GET, streamed from and to
//! disk without hashing. Then the real worker uploads the large file, for
//! its peak RSS. See bench/README.md.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use clap::Parser;
use futures::{StreamExt as _, TryStreamExt as _};
use jiff::{Timestamp, ToSpan as _};
use longtask_e2e::seaweed::Seaweed;
use longtask_store::{
    UploadOptions, download, presign_get, presign_put, upload_file, upload_grant,
};
use tokio::io::AsyncWriteExt as _;

/// Results by reference against plain PUT/GET of the same bytes.
#[derive(Parser, Debug)]
#[command(name = "outputs")]
struct Cli {
    /// Size of the large file, MiB.
    #[arg(long, default_value_t = 512)]
    large_mib: u64,
    /// Number of small files.
    #[arg(long, default_value_t = 1000)]
    small_files: usize,
    /// Size of each small file, KiB.
    #[arg(long, default_value_t = 16)]
    small_kib: usize,
    /// Transfers at once for the small files (the worker's 8).
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Rounds of each pair, alternating which goes first.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// The worker binary whose peak RSS is measured on the large file
    /// (default target/release/longtask-worker; skipped if absent).
    #[arg(long)]
    worker: Option<PathBuf>,
}

/// One measured transfer.
struct Rate {
    bytes: u64,
    took: Duration,
}

impl Rate {
    fn mb_s(&self) -> f64 {
        self.bytes as f64 / self.took.as_secs_f64().max(1e-9) / 1e6
    }
}

/// The bench's context: the store, an HTTP client, the scratch directory.
struct Bench {
    store: Seaweed,
    http: reqwest::Client,
    dir: PathBuf,
    concurrency: usize,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench outputs: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    ensure!(
        Seaweed::installed(),
        "{} is missing: run tools/seaweedfs/install",
        Seaweed::weed().display()
    );
    longtask_store::install_crypto_provider();
    let dir = longtask_e2e::root().join("target/bench-outputs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src/small"))?;
    println!("load average before: {}", load_average());
    let store = Seaweed::start(&dir.join("seaweed")).await?;
    let http = longtask_store::upload_client(Duration::from_secs(60))?;
    let bench = Bench {
        store,
        http,
        dir: dir.clone(),
        concurrency: cli.concurrency,
    };
    let large = write_file(&dir.join("src/large.bin"), cli.large_mib << 20)?;
    let small = (0..cli.small_files)
        .map(|i| {
            write_file(
                &dir.join(format!("src/small/f{i:04}")),
                (cli.small_kib as u64) << 10,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let mut rows = Vec::new();
    for round in 0..cli.rounds {
        rows.extend(bench.round(round, &large, &small).await?);
    }
    print_rows(&rows, &cli);
    let worker = cli
        .worker
        .unwrap_or_else(|| longtask_e2e::root().join("target/release/longtask-worker"));
    match worker.is_file() {
        true => println!(
            "worker peak RSS uploading {} MiB: {}",
            cli.large_mib,
            bench.worker_rss(&worker, &large).await?
        ),
        false => println!(
            "worker peak RSS: skipped, {} is missing (cargo build --release -p longtask-worker)",
            worker.display()
        ),
    }
    println!("load average after: {}", load_average());
    drop(bench);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A file of `len` bytes that are not all alike; returns its path.
fn write_file(path: &Path, len: u64) -> Result<PathBuf> {
    use std::io::Write as _;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let block: Vec<u8> = (0..1 << 20)
        .map(|i: u32| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let mut left = len;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])?;
        left -= n as u64;
    }
    f.flush()?;
    Ok(path.to_owned())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// (case, longtask rate, plain rate).
type Row = (String, Rate, Rate);

impl Bench {
    /// One round: the large file and the small files, up then down, each
    /// both ways; which way goes first alternates by round.
    async fn round(&self, round: usize, large: &Path, small: &[PathBuf]) -> Result<Vec<Row>> {
        let ours_first = round.is_multiple_of(2);
        let mut rows = Vec::new();
        for (case, files) in [
            ("large", std::slice::from_ref(&large.to_path_buf())),
            ("small", small),
        ] {
            let prefix = format!("bench/r{round}/{case}/");
            let (up_ours, up_plain) = self
                .pair(
                    ours_first,
                    || self.upload_ours(&prefix, files),
                    || self.upload_plain(&prefix, files),
                )
                .await?;
            let (down_ours, down_plain) = self
                .pair(
                    ours_first,
                    || self.download_ours(&prefix, files),
                    || self.download_plain(&prefix, files),
                )
                .await?;
            rows.push((format!("{case} up"), up_ours, up_plain));
            rows.push((format!("{case} down"), down_ours, down_plain));
        }
        Ok(rows)
    }

    async fn pair<A, B, FA, FB>(&self, ours_first: bool, ours: A, plain: B) -> Result<(Rate, Rate)>
    where
        A: FnOnce() -> FA,
        B: FnOnce() -> FB,
        FA: Future<Output = Result<Rate>>,
        FB: Future<Output = Result<Rate>>,
    {
        // Each side starts with no dirty pages left by the one before (the
        // store's writes, the last download): without this, whichever side
        // went first paid for the flush, by up to half its rate.
        if ours_first {
            settle().await?;
            let o = ours().await?;
            settle().await?;
            Ok((o, plain().await?))
        } else {
            settle().await?;
            let p = plain().await?;
            settle().await?;
            Ok((ours().await?, p))
        }
    }

    /// `upload_file` with a grant, `concurrency` files at once.
    async fn upload_ours(&self, prefix: &str, files: &[PathBuf]) -> Result<Rate> {
        let now = Timestamp::now();
        let grant = upload_grant(
            &self.store.bucket(),
            &self.store.admin(),
            &format!("{prefix}ours/"),
            5 << 30,
            100_000,
            now,
            now + 1.hour(),
        );
        let opts = UploadOptions::default();
        let started = Instant::now();
        let sizes: Vec<u64> = futures::stream::iter(files)
            .map(|f| {
                let key = format!("{prefix}ours/{}", name(f));
                let (grant, opts) = (&grant, &opts);
                async move {
                    upload_file(&self.http, grant, &key, f, opts)
                        .await
                        .map(|u| u.size)
                }
            })
            .buffer_unordered(self.concurrency)
            .try_collect()
            .await?;
        Ok(Rate {
            bytes: sizes.iter().sum(),
            took: started.elapsed(),
        })
    }

    /// A PUT of each file to a presigned URL, streamed from disk.
    async fn upload_plain(&self, prefix: &str, files: &[PathBuf]) -> Result<Rate> {
        let started = Instant::now();
        let sizes: Vec<u64> = futures::stream::iter(files)
            .map(|f| async move {
                let key = format!("{prefix}plain/{}", name(f));
                let url = presign_put(
                    &self.store.bucket(),
                    &self.store.admin(),
                    &key,
                    Timestamp::now(),
                    Duration::from_secs(3600),
                );
                let file = tokio::fs::File::open(f).await?;
                let len = file.metadata().await?.len();
                let resp = self
                    .http
                    .put(url)
                    .header("content-length", len)
                    .body(reqwest::Body::from(file))
                    .send()
                    .await?;
                ensure!(resp.status().is_success(), "PUT {key}: {}", resp.status());
                Ok(len)
            })
            .buffer_unordered(self.concurrency)
            .try_collect()
            .await?;
        Ok(Rate {
            bytes: sizes.iter().sum(),
            took: started.elapsed(),
        })
    }

    /// `download` of each object from a presigned GET, digest checked.
    async fn download_ours(&self, prefix: &str, files: &[PathBuf]) -> Result<Rate> {
        let expected: Vec<(PathBuf, u64, String)> =
            files.iter().map(digest_of).collect::<Result<_>>()?;
        let out = self.dir.join("down-ours");
        std::fs::create_dir_all(&out)?;
        let started = Instant::now();
        let sizes: Vec<u64> = futures::stream::iter(&expected)
            .map(|(f, size, sha)| {
                let key = format!("{prefix}ours/{}", name(f));
                let url = presign_get(
                    &self.store.bucket(),
                    &self.store.admin(),
                    &key,
                    Timestamp::now(),
                    Duration::from_secs(3600),
                );
                let dest = out.join(name(f));
                async move {
                    download(&self.http, &url, &dest, *size, sha, &mut |_| {}).await?;
                    Ok::<u64, anyhow::Error>(*size)
                }
            })
            .buffer_unordered(self.concurrency)
            .try_collect()
            .await?;
        let rate = Rate {
            bytes: sizes.iter().sum(),
            took: started.elapsed(),
        };
        std::fs::remove_dir_all(&out)?;
        Ok(rate)
    }

    /// A plain GET of each object, streamed to disk, nothing checked.
    async fn download_plain(&self, prefix: &str, files: &[PathBuf]) -> Result<Rate> {
        let out = self.dir.join("down-plain");
        std::fs::create_dir_all(&out)?;
        let started = Instant::now();
        let sizes: Vec<u64> = futures::stream::iter(files)
            .map(|f| {
                let key = format!("{prefix}plain/{}", name(f));
                let url = presign_get(
                    &self.store.bucket(),
                    &self.store.admin(),
                    &key,
                    Timestamp::now(),
                    Duration::from_secs(3600),
                );
                let dest = out.join(name(f));
                async move {
                    let mut resp = self.http.get(url).send().await?;
                    ensure!(resp.status().is_success(), "GET {key}: {}", resp.status());
                    let mut file = tokio::fs::File::create(&dest).await?;
                    let mut n = 0u64;
                    while let Some(chunk) = resp.chunk().await? {
                        n += chunk.len() as u64;
                        file.write_all(&chunk).await?;
                    }
                    file.sync_all().await?;
                    Ok(n)
                }
            })
            .buffer_unordered(self.concurrency)
            .try_collect()
            .await?;
        let rate = Rate {
            bytes: sizes.iter().sum(),
            took: started.elapsed(),
        };
        std::fs::remove_dir_all(&out)?;
        Ok(rate)
    }

    /// The worker binary uploading `large` from `$LONGTASK_OUTPUTS`: the
    /// peak RSS its summary line reports.
    async fn worker_rss(&self, worker: &Path, large: &Path) -> Result<String> {
        let now = Timestamp::now();
        let grant = upload_grant(
            &self.store.bucket(),
            &self.store.admin(),
            "bench/worker/",
            5 << 30,
            10,
            now,
            now + 1.hour(),
        );
        let work = self.dir.join("work");
        std::fs::create_dir_all(&work)?;
        let script = format!(
            "ln {0} \"$LONGTASK_OUTPUTS/\" || cp {0} \"$LONGTASK_OUTPUTS/\"",
            large.display()
        );
        let out = tokio::process::Command::new(worker)
            .args(["run", "--", "sh", "-c", &script])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("LONGTASK_WORK_DIR", &work)
            .env("LONGTASK_UPLOAD_GRANT", serde_json::to_string(&grant)?)
            .output()
            .await
            .context("running the worker")?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        match stderr.lines().find(|l| l.contains("outputs uploaded")) {
            Some(line) => Ok(line.trim_start_matches("longtask-worker: ").to_owned()),
            None => bail!("the worker did not upload:\n{stderr}"),
        }
    }
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// (path, size, sha256 hex) of a source file, recorded before the timing.
fn digest_of(path: &PathBuf) -> Result<(PathBuf, u64, String)> {
    let bytes = std::fs::read(path)?;
    let d = ring::digest::digest(&ring::digest::SHA256, &bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Ok((path.clone(), bytes.len() as u64, hex))
}

fn print_rows(rows: &[Row], cli: &Cli) {
    println!(
        "\n{} MiB file, {} x {} KiB files, {} at once, {} round(s); MB/s (10^6 bytes/s)",
        cli.large_mib, cli.small_files, cli.small_kib, cli.concurrency, cli.rounds
    );
    println!(
        "{:<12} {:>12} {:>12} {:>8}",
        "case", "longtask", "plain HTTP", "ratio"
    );
    for (case, ours, plain) in rows {
        println!(
            "{case:<12} {:>12.1} {:>12.1} {:>7.0}%",
            ours.mb_s(),
            plain.mb_s(),
            100.0 * ours.mb_s() / plain.mb_s().max(1e-9)
        );
    }
    println!("median over the rounds (rounds vary by up to 2x on 2 shared cores):");
    let mut cases: Vec<&str> = rows.iter().map(|(c, _, _)| c.as_str()).collect();
    cases.dedup();
    cases.truncate(4);
    for case in cases {
        let of =
            |pick: fn(&Row) -> f64| median(rows.iter().filter(|r| r.0 == case).map(pick).collect());
        let (ours, plain) = (of(|r| r.1.mb_s()), of(|r| r.2.mb_s()));
        let ratio = of(|r| 100.0 * r.1.mb_s() / r.2.mb_s().max(1e-9));
        println!("{case:<12} {ours:>12.1} {plain:>12.1} {ratio:>7.0}%");
    }
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Flushes every dirty page to disk (sync(1)), outside any timing.
async fn settle() -> Result<()> {
    let status =
        tokio::task::spawn_blocking(|| std::process::Command::new("sync").status()).await??;
    ensure!(status.success(), "sync: {status}");
    Ok(())
}
