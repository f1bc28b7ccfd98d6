//! Prometheus as a child process of the test: loopback only, its own data
//! directory under target/, stopped and removed by `stop` (or on drop).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use longtask_e2e::{root, wait};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct Prometheus {
    child: Option<Child>,
    dir: PathBuf,
    addr: String,
}

/// Scrapes every pod of the operator in `namespace` found through the
/// Kubernetes API (`kubeconfig`), on its `metrics` port, every 2 s.
fn config(kubeconfig: &Path, namespace: &str) -> String {
    format!(
        r#"global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 2s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: longtask-operator
    kubernetes_sd_configs:
      - role: pod
        kubeconfig_file: {kubeconfig}
        namespaces:
          names: [{namespace}]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name]
        regex: longtask-operator
        action: keep
      - source_labels: [__meta_kubernetes_pod_container_port_name]
        regex: metrics
        action: keep
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
"#,
        kubeconfig = kubeconfig.display()
    )
}

/// A free port on 127.0.0.1.
fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

impl Prometheus {
    /// Starts Prometheus with `rules` and waits until it is ready.
    pub async fn start(kubeconfig: &Path, namespace: &str, rules: &str) -> Result<Prometheus> {
        let bin = root().join("tools/prometheus/bin/prometheus");
        ensure!(
            bin.exists(),
            "{} is missing: run tools/prometheus/build",
            bin.display()
        );
        let dir = root()
            .join("target")
            .join(format!("e2e-prometheus-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("prometheus.yml"), config(kubeconfig, namespace))?;
        std::fs::write(dir.join("rules.yaml"), rules)?;
        let addr = format!("127.0.0.1:{}", free_port()?);
        let log = std::fs::File::create(dir.join("prometheus.log"))?;
        let child = Command::new(&bin)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("start prometheus")?;
        let p = Prometheus {
            child: Some(child),
            dir,
            addr,
        };
        let ready = wait::until(Duration::from_secs(60), "Prometheus ready", || {
            let fut = p.get("/-/ready");
            async move { Ok(fut.await.is_ok()) }
        })
        .await;
        if let Err(e) = ready {
            bail!("{e:#}\n{}", p.log());
        }
        Ok(p)
    }

    /// The body of a 200 answer to `GET path` (HTTP/1.0: no chunking).
    async fn get(&self, path: &str) -> Result<String> {
        let mut sock = tokio::net::TcpStream::connect(&self.addr).await?;
        let req = format!("GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr);
        sock.write_all(req.as_bytes()).await?;
        let mut buf = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), sock.read_to_end(&mut buf)).await??;
        let text = String::from_utf8(buf)?;
        let (head, body) = text.split_once("\r\n\r\n").context("no HTTP header end")?;
        ensure!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "GET {path}: {head}"
        );
        Ok(body.to_owned())
    }

    /// The JSON answer of an API path, e.g. `/api/v1/alerts`.
    pub async fn api(&self, path: &str) -> Result<Value> {
        let body = self.get(path).await?;
        let v: Value = serde_json::from_str(&body).with_context(|| format!("{path}: {body}"))?;
        ensure!(v["status"] == "success", "{path}: {body}");
        Ok(v)
    }

    /// The last lines of Prometheus' log.
    pub fn log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Stops Prometheus and removes its directory (kept, with the log,
    /// when LONGTASK_E2E_KEEP is set).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            if std::env::var_os("LONGTASK_E2E_KEEP").is_none() {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.shutdown();
    }
}
