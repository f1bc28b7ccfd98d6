//! The bench's own devcluster: `up` with the audit log and our binaries
//! mapped to their images, the manifests installed, and `down` guaranteed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, PostParams};
use kube::{Client, Config, config::KubeConfigOptions, config::Kubeconfig};

pub const OPERATOR_IMAGE: &str = "longtask-operator:0.1.0";
pub const WORKER_IMAGE: &str = "longtask-worker:0.1.0";
pub const SYSTEM_NS: &str = "longtask-system";
pub const OPERATOR_USER: &str = "system:serviceaccount:longtask-system:longtask-operator";

/// The repository root (the bench crate's parent).
pub fn root() -> Result<PathBuf> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .context("bench crate has no parent directory")
}

/// A running devcluster. `down` runs on drop too, so an error or a panic
/// never leaves processes behind.
pub struct Cluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub client: Client,
    /// The operator binary the cluster runs (a private copy, so a rebuild
    /// elsewhere never changes what is measured); its /proc exe.
    pub operator_bin: PathBuf,
    down: bool,
}

fn devcluster() -> Result<PathBuf> {
    Ok(root()?.join("devcluster/devcluster"))
}

/// Stops the cluster in `dir` (idempotent; also after a failed `up`).
pub fn down(dir: &Path) -> Result<()> {
    let status = Command::new(devcluster()?)
        .args(["down", "--dir"])
        .arg(dir)
        .status()
        .context("run devcluster down")?;
    if !status.success() {
        bail!("devcluster down failed: {status}");
    }
    Ok(())
}

impl Cluster {
    /// Starts a fresh cluster in `dir` with copies of the binaries in `bin_dir`.
    pub async fn up(
        dir: &Path,
        bin_dir: &Path,
        nodes: u32,
        cpu: u32,
        profiling: bool,
    ) -> Result<Cluster> {
        let stage = dir.with_file_name("bench-bin");
        std::fs::create_dir_all(&stage)?;
        for b in ["longtask-operator", "longtask-worker"] {
            let p = bin_dir.join(b);
            if !p.exists() {
                bail!(
                    "{} is missing: run `cargo build --release --bins -p longtask-operator -p longtask-worker` first",
                    p.display()
                );
            }
            std::fs::copy(&p, stage.join(b)).with_context(|| format!("copy {}", p.display()))?;
        }
        let bin_dir = stage.canonicalize()?;
        let status = Command::new(devcluster()?)
            .args(["up", "--audit", "--dir"])
            .arg(dir)
            .args([
                "--nodes",
                &nodes.to_string(),
                "--node-cpu",
                &cpu.to_string(),
            ])
            .args(["--node-memory", "64Gi"])
            .args(profiling.then_some("--profiling"))
            .arg(format!(
                "--image={OPERATOR_IMAGE}={}",
                bin_dir.join("longtask-operator").display()
            ))
            .arg(format!(
                "--image={WORKER_IMAGE}={}",
                bin_dir.join("longtask-worker").display()
            ))
            .status()
            .context("run devcluster up")?;
        if !status.success() {
            let _ = down(dir);
            bail!("devcluster up failed: {status}");
        }
        let kubeconfig = dir.join("kubeconfig");
        let made = async {
            let kc = Kubeconfig::read_from(&kubeconfig)?;
            let mut config =
                Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
            // Thousands of creates in flight must not trip client timeouts.
            config.read_timeout = Some(Duration::from_secs(120));
            anyhow::Ok(Client::try_from(config)?)
        };
        match made.await {
            Ok(client) => Ok(Cluster {
                dir: dir.to_path_buf(),
                kubeconfig,
                client,
                operator_bin: bin_dir.join("longtask-operator"),
                down: false,
            }),
            Err(e) => {
                let _ = down(dir);
                Err(e)
            }
        }
    }

    pub fn down(&mut self) -> Result<()> {
        if self.down {
            return Ok(());
        }
        self.down = true;
        down(&self.dir)
    }

    /// `kubectl ARGS...` against this cluster; its stdout.
    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        let out = Command::new("kubectl")
            .env("KUBECONFIG", &self.kubeconfig)
            .args(args)
            .output()
            .context("run kubectl (is it on PATH?)")?;
        if !out.status.success() {
            bail!(
                "kubectl {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Installs longtask the way a user does (`kubectl apply -k DIR`),
    /// scales the operator to one replica (one process to measure) and
    /// waits until exactly that one runs.
    /// Starts taking a CPU profile of the API server for `seconds` into
    /// `out` (kubectl, cluster-admin; needs `up --profiling`); the future
    /// ends when the profile is written.
    pub fn cpu_profile(
        &self,
        out: &Path,
        seconds: u32,
    ) -> Result<impl std::future::Future<Output = Result<()>> + use<>> {
        if let Some(d) = out.parent() {
            std::fs::create_dir_all(d)?;
        }
        let file =
            std::fs::File::create(out).with_context(|| format!("create {}", out.display()))?;
        let mut child = tokio::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["get", "--raw"])
            .arg(format!("/debug/pprof/profile?seconds={seconds}"))
            .stdout(file)
            .kill_on_drop(true)
            .spawn()
            .context("run kubectl get --raw /debug/pprof/profile")?;
        let out = out.to_owned();
        Ok(async move {
            let status = child.wait().await?;
            if !status.success() {
                bail!("profile {}: kubectl {status}", out.display());
            }
            eprintln!("bench: API server CPU profile in {}", out.display());
            Ok(())
        })
    }

    pub async fn install(&self, manifests: &Path) -> Result<()> {
        let m = manifests.to_str().context("non-UTF-8 path")?;
        self.kubectl(&["apply", "--server-side", "-k", m])?;
        self.wait_operator()?;
        self.scale_operator(1)?;
        self.wait_operator()?;
        for _ in 0..900 {
            if crate::procfs::operator_pid(&self.operator_bin).is_some() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("no single longtask-operator process after scaling to 1")
    }

    /// Waits until the operator Deployment is rolled out and Ready.
    pub fn wait_operator(&self) -> Result<()> {
        self.kubectl(&[
            "-n",
            SYSTEM_NS,
            "rollout",
            "status",
            "deployment/longtask-operator",
            "--timeout=180s",
        ])?;
        Ok(())
    }

    pub fn scale_operator(&self, replicas: u32) -> Result<()> {
        self.kubectl(&[
            "-n",
            SYSTEM_NS,
            "scale",
            "deployment/longtask-operator",
            &format!("--replicas={replicas}"),
        ])?;
        Ok(())
    }

    /// A fresh namespace whose default service account exists (pods are
    /// refused before it does).
    pub async fn namespace(&self, name: &str) -> Result<()> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": { "longtask-bench": "true" } }
        }))?;
        api.create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("create namespace {name}"))?;
        let sas: Api<ServiceAccount> = Api::namespaced(self.client.clone(), name);
        for _ in 0..300 {
            if sas.get_opt("default").await?.is_some() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("namespace {name}: default service account never appeared")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Err(e) = self.down() {
            eprintln!("bench: {e:#}");
        }
    }
}
