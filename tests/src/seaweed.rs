//! SeaweedFS for the tests and the bench of results by reference: a real
//! S3 store (`weed server`, from `tools/seaweedfs/install`) on loopback
//! ports of its own, with a bucket and credentials the test makes.
//!
//! Every port is picked free by the kernel, the gRPC ones included (weed's
//! default is port + 10000) and the extras weed opens by default (Iceberg
//! 8181, Lance 9101) are off, so two instances, and other tests, never
//! collide. `stop` and `restart` keep the ports and the data directory:
//! "the store is down, then back". Drop kills the process group.

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use longtask_store::{Bucket, Client, Credentials};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The bucket every instance creates.
pub const BUCKET: &str = "longtask-outputs";
/// The admin identity's keys.
pub const ADMIN_KEY: &str = "AKLONGTASKADMIN";
pub const ADMIN_SECRET: &str = "longtask-admin-secret";

/// How long a start may take before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// An S3 identity of the store's config.
#[derive(Clone, Debug)]
pub struct Identity {
    pub name: String,
    pub access_key: String,
    pub secret_key: String,
    /// SeaweedFS actions: `Admin`, `Read`, `Write`, `List`, `Tagging`, or
    /// `Read:<bucket>` and the like.
    pub actions: Vec<String>,
}

/// The ports of one instance.
#[derive(Clone, Copy, Debug)]
struct Ports {
    master: u16,
    master_grpc: u16,
    volume: u16,
    volume_grpc: u16,
    filer: u16,
    filer_grpc: u16,
    s3: u16,
    s3_grpc: u16,
}

impl Ports {
    /// Eight ports the kernel says are free, held together while picked so
    /// they differ.
    fn pick() -> Result<Ports> {
        let held: Vec<TcpListener> = (0..8)
            .map(|_| TcpListener::bind("127.0.0.1:0"))
            .collect::<std::io::Result<_>>()?;
        let p: Vec<u16> = held
            .iter()
            .map(|l| l.local_addr().map(|a| a.port()))
            .collect::<std::io::Result<_>>()?;
        Ok(Ports {
            master: p[0],
            master_grpc: p[1],
            volume: p[2],
            volume_grpc: p[3],
            filer: p[4],
            filer_grpc: p[5],
            s3: p[6],
            s3_grpc: p[7],
        })
    }
}

/// A running (or stopped) `weed server`.
pub struct Seaweed {
    dir: PathBuf,
    ports: Ports,
    child: Option<Child>,
}

impl Seaweed {
    /// The `weed` binary: `$LONGTASK_WEED`, else the one
    /// `tools/seaweedfs/install` puts under target/.
    pub fn weed() -> PathBuf {
        std::env::var_os("LONGTASK_WEED")
            .map(PathBuf::from)
            .unwrap_or_else(|| crate::root().join("target/tools/seaweedfs/bin/weed"))
    }

    /// Whether `weed` is installed; tests skip (saying so) when it is not.
    pub fn installed() -> bool {
        Seaweed::weed().is_file()
    }

    /// Starts a store keeping its data in `dir`, with the admin identity,
    /// and creates [`BUCKET`].
    pub async fn start(dir: &Path) -> Result<Seaweed> {
        Seaweed::start_with(dir, &[]).await
    }

    /// [`Seaweed::start`] with more identities beside the admin.
    pub async fn start_with(dir: &Path, identities: &[Identity]) -> Result<Seaweed> {
        std::fs::create_dir_all(dir.join("data"))?;
        write_config(&dir.join("s3.json"), identities)?;
        let mut store = Seaweed {
            dir: dir.to_path_buf(),
            ports: Ports::pick()?,
            child: None,
        };
        // A port picked free can be taken before weed binds it (an
        // outgoing connection's ephemeral port): weed then exits at once
        // (glog's Fatal, status 255). Such a start is tried again, on new
        // ports and empty data, twice at most.
        for attempt in 1.. {
            store.spawn()?;
            let ready = store
                .until_ready(|c| async move { c.create_bucket().await })
                .await;
            match ready {
                Ok(()) => break,
                Err(e) if attempt < 3 && store.exited() => {
                    eprintln!("seaweedfs exited on start (attempt {attempt}), new ports: {e:#}");
                    store.stop();
                    std::fs::remove_dir_all(dir.join("data"))?;
                    std::fs::create_dir_all(dir.join("data"))?;
                    store.ports = Ports::pick()?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(store)
    }

    /// Whether the weed process has ended.
    fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_some())
    }

    /// `http://127.0.0.1:<s3 port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.s3)
    }

    /// The admin's keys.
    pub fn admin(&self) -> Credentials {
        Credentials {
            access_key_id: ADMIN_KEY.into(),
            secret_access_key: ADMIN_SECRET.into(),
            session_token: None,
        }
    }

    /// A bucket of this store (path style), [`BUCKET`] or another name.
    pub fn bucket_named(&self, name: &str) -> Bucket {
        Bucket::from_parts(&self.endpoint(), name, "us-east-1", true)
            .expect("a loopback endpoint is valid")
    }

    /// [`BUCKET`] of this store.
    pub fn bucket(&self) -> Bucket {
        self.bucket_named(BUCKET)
    }

    /// An admin client of [`BUCKET`], 30 s per call.
    pub fn client(&self) -> Client {
        Client::new(self.bucket(), self.admin(), Duration::from_secs(30))
            .expect("an HTTP client without TLS builds")
    }

    /// Stops the store at once (SIGKILL to its process group): clients see
    /// connections refused.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // killpg(2) itself: procps-ng 4.0.2's kill(1) reads
            // `kill -KILL -<pgid>` (without `--`) as kill(-1), every
            // process the caller may signal.
            if let Ok(pgid) = i32::try_from(child.id()) {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.remove_sockets();
    }

    /// weed's gRPC Unix sockets, named by our ports under /tmp. A killed
    /// weed leaves them; one of a port picked again would stop the next.
    fn remove_sockets(&self) {
        for (kind, port) in [
            ("master", self.ports.master_grpc),
            ("volume", self.ports.volume_grpc),
            ("filer", self.ports.filer_grpc),
            ("s3", self.ports.s3_grpc),
        ] {
            let _ = std::fs::remove_file(format!("/tmp/seaweedfs-{kind}-grpc-{port}.sock"));
        }
    }

    /// Starts the store again, on the same ports and data, and waits until
    /// the bucket answers.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop();
        self.spawn()?;
        self.until_ready(|c| async move { c.head_bucket().await })
            .await
    }

    /// The last lines of weed's log, for a failing test's message.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("weed.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    fn spawn(&mut self) -> Result<()> {
        // Our ports are free, so no live weed owns these sockets.
        self.remove_sockets();
        let p = self.ports;
        let d = &self.dir;
        let log = File::options()
            .create(true)
            .append(true)
            .open(d.join("weed.log"))?;
        let args = [
            "server".to_string(),
            "-ip=127.0.0.1".into(),
            "-ip.bind=127.0.0.1".into(),
            format!("-dir={}", d.join("data").display()),
            format!("-master.port={}", p.master),
            format!("-master.port.grpc={}", p.master_grpc),
            "-master.telemetry=false".into(),
            // Small volumes: with the default 30 GB and -volume.max=0, a
            // disk with less free space than that gets no volume at all.
            "-master.volumeSizeLimitMB=512".into(),
            format!("-volume.port={}", p.volume),
            format!("-volume.port.grpc={}", p.volume_grpc),
            "-volume.max=0".into(),
            format!("-filer.port={}", p.filer),
            format!("-filer.port.grpc={}", p.filer_grpc),
            format!("-filer.localSocket={}", d.join("filer.sock").display()),
            "-s3".into(),
            format!("-s3.port={}", p.s3),
            format!("-s3.port.grpc={}", p.s3_grpc),
            format!("-s3.localSocket={}", d.join("s3.sock").display()),
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            // A missing bucket must stay missing (the admin's uploads
            // would create it otherwise).
            "-s3.autoCreateBucket=false".into(),
            format!("-s3.config={}", d.join("s3.json").display()),
        ];
        let child = Command::new(Seaweed::weed())
            .args(&args)
            .current_dir(d)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {}", Seaweed::weed().display()))?;
        self.child = Some(child);
        Ok(())
    }

    /// Calls `check` with an admin client until it succeeds (the S3 port
    /// opens before the filer behind it is ready).
    async fn until_ready<F, Fut>(&mut self, check: F) -> Result<()>
    where
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = Result<(), longtask_store::StoreError>>,
    {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let Some(child) = self.child.as_mut() else {
                bail!("seaweedfs is stopped");
            };
            if let Some(status) = child.try_wait()? {
                bail!("weed server exited ({status}):\n{}", self.log_tail());
            }
            let last = match check(self.client()).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() > deadline {
                bail!(
                    "seaweedfs not ready after {START_TIMEOUT:?}: {last:#}\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The S3 identities file: the admin, then `more`.
fn write_config(path: &Path, more: &[Identity]) -> Result<()> {
    let admin = Identity {
        name: "admin".into(),
        access_key: ADMIN_KEY.into(),
        secret_key: ADMIN_SECRET.into(),
        actions: ["Admin", "Read", "Write", "List", "Tagging"]
            .map(String::from)
            .to_vec(),
    };
    let identities: Vec<serde_json::Value> = std::iter::once(&admin)
        .chain(more)
        .map(|i| {
            serde_json::json!({
                "name": i.name,
                "credentials": [{ "accessKey": i.access_key, "secretKey": i.secret_key }],
                "actions": i.actions,
            })
        })
        .collect();
    let config = serde_json::json!({ "identities": identities });
    std::fs::write(path, serde_json::to_vec_pretty(&config)?)?;
    Ok(())
}
