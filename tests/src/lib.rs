//! Test harness for longtask's end-to-end tests: starts a devcluster with our
//! binaries mapped to their images, installs the operator with
//! `kubectl apply -k manifests/` (so it runs under exactly the manifests'
//! RBAC) or, for tests/helm, from the Helm chart, and gives each case a
//! throwaway namespace.

#![allow(clippy::unwrap_used)]

pub mod browser;
pub mod chaos;
pub mod http;
pub mod jobs;
pub mod kubectl;
pub mod objects;
pub mod openmetrics;
pub mod operator;
pub mod procs;
pub mod runner;
pub mod samples;
pub mod seaweed;
pub mod tracks;
pub mod wait;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Config, config::KubeConfigOptions, config::Kubeconfig};

pub use kubectl::Kubectl;
pub use runner::Runtime;

/// Images the manifests name, mapped by the devcluster to `target/` binaries.
pub const OPERATOR_IMAGE: &str = "longtask-operator:0.1.0";
pub const WORKER_IMAGE: &str = "longtask-worker:0.1.0";
pub const SYSTEM_NS: &str = "longtask-system";
/// The Helm release the chart is installed as (tests/helm).
pub const HELM_RELEASE: &str = "longtask";

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A running devcluster; `down` runs on drop as well.
pub struct Cluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub client: Client,
    pub kubectl: Kubectl,
    /// How the nodes run pods.
    pub runtime: Runtime,
    stopped: bool,
}

fn devcluster() -> PathBuf {
    root().join("devcluster/devcluster")
}

/// Image archives `tests/images` writes to `target/images`, loaded into
/// container nodes: both images of longtask and the test images.
pub const IMAGE_ARCHIVES: &[&str] = &[
    "longtask-operator.tar",
    "longtask-worker.tar",
    "longtask-base-slim.tar",
    "longtask-test-python.tar",
    "longtask-test-scratch.tar",
    "longtask-test-kubectl.tar",
];

/// Debian slim with a shell, user root.
pub const ROOT_IMAGE: &str = "longtask-base-slim:bookworm";
/// Debian slim with Python 3 from Debian's packages, user root.
pub const PYTHON_IMAGE: &str = "longtask-test-python:bookworm";
/// FROM scratch: only `/report N` (tests/programs/report), no shell, no libc.
pub const SCRATCH_IMAGE: &str = "longtask-test-scratch:1";
/// The slim base plus this machine's kubectl: programs that call the API.
pub const KUBECTL_IMAGE: &str = "longtask-test-kubectl:1";

fn cluster_dir(dir: &str) -> PathBuf {
    root()
        .join("target")
        .join(format!("{dir}-{}", std::process::id()))
}

/// `devcluster SUB --dir DIR ARGS...` (up, load); on failure, `down` and
/// an error, so that a half-made cluster never stays behind.
fn devcluster_or_down<A: AsRef<std::ffi::OsStr>>(sub: &str, dir: &Path, args: &[A]) -> Result<()> {
    let status = Command::new(devcluster())
        .args([sub, "--dir"])
        .arg(dir)
        .args(args)
        .status()
        .with_context(|| format!("run devcluster {sub}"))?;
    if !status.success() {
        let _ = Command::new(devcluster())
            .args(["down", "--dir"])
            .arg(dir)
            .status();
        bail!("devcluster {sub} failed: {status}");
    }
    Ok(())
}

impl Cluster {
    /// Starts a fresh cluster in `target/e2e-cluster-PID` (nodes, CPU per node).
    pub async fn up(nodes: u32, cpu: u32) -> Result<Cluster> {
        Cluster::up_in("e2e-cluster", nodes, cpu).await
    }

    /// Starts a fresh cluster in `target/DIR-PID` (nodes, CPU per node):
    /// the pid keeps two runs in one checkout from sharing (and stopping)
    /// one cluster. `down` removes the directory unless
    /// `LONGTASK_E2E_KEEP` is set (its `logs/` hold every component's log).
    pub async fn up_in(dir: &str, nodes: u32, cpu: u32) -> Result<Cluster> {
        let root = root();
        let bin = |n: &str| root.join("target/debug").join(n);
        for b in ["longtask-operator", "longtask-worker"] {
            if !bin(b).exists() {
                bail!(
                    "{} is missing: run `cargo build --workspace` first",
                    bin(b).display()
                );
            }
        }
        let dir = cluster_dir(dir);
        devcluster_or_down(
            "up",
            &dir,
            &[
                "--nodes",
                &nodes.to_string(),
                "--node-cpu",
                &cpu.to_string(),
                "--node-memory",
                "16Gi",
                &format!(
                    "--image={OPERATOR_IMAGE}={}",
                    bin("longtask-operator").display()
                ),
                &format!(
                    "--image={WORKER_IMAGE}={}",
                    bin("longtask-worker").display()
                ),
            ],
        )?;
        Cluster::connect(dir, Runtime::Process).await
    }

    /// Starts a fresh cluster of `nodes` container nodes in
    /// `target/DIR-PID` and loads the images `tests/images` built
    /// (`target/images/*.tar`) into every node.
    pub async fn up_containers(dir: &str, nodes: u32) -> Result<Cluster> {
        let images = root().join("target/images");
        let archives: Vec<PathBuf> = IMAGE_ARCHIVES.iter().map(|a| images.join(a)).collect();
        if let Some(missing) = archives.iter().find(|a| !a.exists()) {
            bail!(
                "{} is missing: build the images first (tests/images)",
                missing.display()
            );
        }
        let dir = cluster_dir(dir);
        devcluster_or_down(
            "up",
            &dir,
            &["--runtime", "containerd", "--nodes", &nodes.to_string()],
        )?;
        devcluster_or_down("load", &dir, &archives)?;
        Cluster::connect(dir, Runtime::Containerd).await
    }

    async fn connect(dir: PathBuf, runtime: Runtime) -> Result<Cluster> {
        let kubeconfig = dir.join("kubeconfig");
        let kc = Kubeconfig::read_from(&kubeconfig)?;
        let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
        let client = Client::try_from(config)?;
        let kubectl = Kubectl::new(&kubeconfig);
        Ok(Cluster {
            dir,
            kubeconfig,
            client,
            kubectl,
            runtime,
            stopped: false,
        })
    }

    /// An image with a shell and kubectl, for pods the cases make
    /// themselves: on process nodes the image is not read (the command
    /// runs on this machine, with its kubectl).
    pub fn kubectl_image(&self) -> &'static str {
        match self.runtime {
            Runtime::Process => "busybox:1.36",
            Runtime::Containerd => KUBECTL_IMAGE,
        }
    }

    /// Spec lines (for [`sh_task`]) that give a Task's program kubectl: none
    /// on process nodes (the program runs on this machine); the kubectl
    /// test image on container nodes, where the worker image has none.
    pub fn kubectl_spec(&self) -> &'static str {
        match self.runtime {
            Runtime::Process => "",
            Runtime::Containerd => "  image: longtask-test-kubectl:1\n",
        }
    }

    /// Starts Kueue on the cluster (`devcluster kueue`: its CRDs, RBAC and
    /// webhooks, its manager as a host process) and waits until it admits.
    pub fn kueue(&self) -> Result<()> {
        let status = Command::new(devcluster())
            .args(["kueue", "--dir"])
            .arg(&self.dir)
            .status()
            .context("run devcluster kueue")?;
        if !status.success() {
            bail!("devcluster kueue failed: {status}");
        }
        Ok(())
    }

    /// Installs longtask the way a user does and waits for the operator:
    /// `manifests/` through an overlay that sets the two flags the cases
    /// need (as env vars): `--cron-min-interval=1` (the CronTask cases use
    /// schedules with a seconds field, which the default of 60 refuses) and
    /// `--output-gc-interval=5` (the outputs suite waits for the sweep of a
    /// store that was down; with no OutputStore a sweep does nothing).
    pub async fn install(&self) -> Result<()> {
        let manifests = root().join("manifests");
        let overlay = self.dir.join("install");
        std::fs::create_dir_all(&overlay)?;
        std::fs::write(
            overlay.join("kustomization.yaml"),
            format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
                 resources: [{}]\npatches:\n  - target: {{kind: Deployment, name: longtask-operator}}\n    \
                 patch: |-\n      - op: add\n        path: /spec/template/spec/containers/0/env/-\n        \
                 value: {{name: LONGTASK_CRON_MIN_INTERVAL, value: \"1\"}}\n      \
                 - op: add\n        path: /spec/template/spec/containers/0/env/-\n        \
                 value: {{name: LONGTASK_OUTPUT_GC_INTERVAL, value: \"5\"}}\n",
                // kustomize takes no absolute path: up to / and down again.
                Path::new(&"../".repeat(overlay.components().count().saturating_sub(1)))
                    .join(manifests.strip_prefix("/").unwrap_or(&manifests))
                    .display()
            ),
        )?;
        self.kubectl
            .run(&["apply", "--server-side", "-k", overlay.to_str().unwrap()])?;
        self.wait_operator("120s")
    }

    /// `devcluster ARGS... --dir DIR` on this cluster (a fault verb such
    /// as `node stop NODE`); its output, or an error with it.
    pub fn devcluster(&self, args: &[&str]) -> Result<String> {
        let dir = self.dir.to_string_lossy();
        self.run_devcluster(&[args, &["--dir", &dir]].concat())
    }

    /// `devcluster restart --dir DIR [--kill] COMPONENT` (etcd, apiserver,
    /// …): stops the component (SIGTERM, or SIGKILL with `kill`) and starts
    /// it again with the same flags.
    pub fn restart(&self, component: &str, kill: bool) -> Result<String> {
        let dir = self.dir.to_string_lossy();
        let mut args = vec!["restart", "--dir", &dir];
        if kill {
            args.push("--kill");
        }
        args.push(component);
        self.run_devcluster(&args)
    }

    fn run_devcluster(&self, args: &[&str]) -> Result<String> {
        let out = kubectl::blocking(|| Command::new(devcluster()).args(args).output())
            .with_context(|| format!("run devcluster {args:?}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ensure!(
            out.status.success(),
            "devcluster {args:?}: {}: {text}",
            out.status
        );
        Ok(text)
    }

    /// Installs longtask from its Helm chart the way docs/helm.md says:
    /// the namespace made first (restricted, as manifests/namespace.yaml
    /// makes it), then `helm install` with the default values; waits until
    /// the release is ready (Helm's watcher) and the operator rolled out.
    pub fn install_chart(&self) -> Result<()> {
        self.kubectl.run(&["create", "namespace", SYSTEM_NS])?;
        self.kubectl.run(&[
            "label",
            "namespace",
            SYSTEM_NS,
            "pod-security.kubernetes.io/enforce=restricted",
        ])?;
        self.helm_install()?;
        self.wait_crd_established()?;
        self.wait_operator("120s")
    }

    /// `helm install` of charts/longtask as release [`HELM_RELEASE`] in
    /// `longtask-system`, waiting for its objects (up to 3 minutes).
    pub fn helm_install(&self) -> Result<String> {
        let chart = root().join("charts/longtask");
        self.helm(&[
            "install",
            HELM_RELEASE,
            chart.to_str().unwrap(),
            "--namespace",
            SYSTEM_NS,
            "--wait=watcher",
            "--timeout=3m",
        ])
    }

    /// `helm ARGS...` (tools/helm/bin/helm) against this cluster:
    /// Ok(stdout), or Err(stderr and stdout).
    pub fn helm(&self, args: &[&str]) -> Result<String> {
        let helm = root().join("tools/helm/bin/helm");
        if !helm.exists() {
            bail!("{} is missing: run tools/helm/build first", helm.display());
        }
        // Helm keeps its cache and config in the cluster's directory, not
        // in the home directory.
        let mut cmd = Command::new(&helm);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("HELM_CACHE_HOME", self.dir.join("helm/cache"))
            .env("HELM_CONFIG_HOME", self.dir.join("helm/config"))
            .env("HELM_DATA_HOME", self.dir.join("helm/data"));
        let out = kubectl::blocking(|| cmd.output()).context("run helm")?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            bail!(
                "helm {} failed ({}):\n{}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr),
                stdout
            );
        }
        Ok(stdout)
    }

    /// Installs only the CRD and the worker's ClusterRole, and waits until
    /// the Task API is served.
    pub fn install_crd(&self) -> Result<()> {
        let manifests = root().join("manifests");
        for f in ["crd.yaml", "worker-role.yaml"] {
            let path = manifests.join(f);
            self.kubectl
                .run(&["apply", "--server-side", "-f", path.to_str().unwrap()])?;
        }
        self.wait_crd_established()
    }

    /// Waits up to 60 s until the Task CRD is Established. Polled, not
    /// `kubectl wait`: that fails at once (".status.conditions accessor
    /// error") when it reads a just-created CRD before any condition.
    pub fn wait_crd_established(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let status = self.kubectl.run(&[
                "get",
                "crd",
                "tasks.longtask.dev",
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Established")].status}"#,
            ]);
            if status.as_deref().is_ok_and(|s| s.trim() == "True") {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                bail!("CRD tasks.longtask.dev not Established after 60 s: {status:?}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits (`kubectl rollout status`, up to `timeout`, e.g. "60s") until
    /// the operator Deployment has rolled out.
    pub fn wait_operator(&self, timeout: &str) -> Result<()> {
        let timeout = format!("--timeout={timeout}");
        self.kubectl.run(&[
            "-n",
            SYSTEM_NS,
            "rollout",
            "status",
            "deployment/longtask-operator",
            &timeout,
        ])?;
        Ok(())
    }

    pub fn down(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let status = Command::new(devcluster())
            .args(["down", "--dir"])
            .arg(&self.dir)
            .status()?;
        if !status.success() {
            bail!("devcluster down failed: {status}");
        }
        if std::env::var_os("LONGTASK_E2E_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
        Ok(())
    }

    /// A throwaway namespace for one case, labelled for cleanup.
    pub async fn namespace(&self, prefix: &str) -> Result<TestNs> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "generateName": format!("{prefix}-"), "labels": {
                "longtask-e2e": "true",
                // The API server refuses any pod below the restricted standard.
                "pod-security.kubernetes.io/enforce": "restricted",
            } }
        }))?;
        // A pooled connection the API server closed fails the request
        // before it is answered ("connection closed before message
        // completed"); a second try on a new connection is safe here (a
        // generated name: at worst one more labelled namespace).
        let mut tries = 0;
        let ns = loop {
            tries += 1;
            match api.create(&PostParams::default(), &ns).await {
                Err(kube::Error::Service(e)) if tries < 3 => {
                    eprintln!("namespace {prefix}: try {tries} failed ({e}); again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                created => break created?,
            }
        };
        let name = ns.metadata.name.context("namespace without name")?;
        // Pods are refused until the namespace's default service account exists.
        wait::until(Duration::from_secs(30), "default service account", || {
            let kubectl = self.kubectl.clone();
            let name = name.clone();
            async move {
                Ok(kubectl
                    .run(&["-n", &name, "get", "serviceaccount", "default"])
                    .is_ok())
            }
        })
        .await?;
        Ok(TestNs {
            name,
            client: self.client.clone(),
            kubectl: self.kubectl.clone(),
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.down();
    }
}

/// One case's namespace.
pub struct TestNs {
    pub name: String,
    pub client: Client,
    pub kubectl: Kubectl,
}

impl TestNs {
    /// `kubectl -n NS ARGS...`
    pub fn k(&self, args: &[&str]) -> Result<String> {
        let mut full = vec!["-n", self.name.as_str()];
        full.extend_from_slice(args);
        self.kubectl.run(&full)
    }

    /// `kubectl wait ARGS...` in this namespace, as a script runs it right
    /// after creating what it waits on. kubectl GETs the object, then lists
    /// it with resourceVersion=0, which the API server answers from its
    /// watch cache; when that cache has not caught up with a create yet
    /// (a busy server, e.g. 53 cases at once), kubectl fails at once with
    /// NotFound although the object exists. Asked again, as a script
    /// would, for up to 5 s.
    pub fn kubectl_wait(&self, args: &[&str]) -> Result<String> {
        let mut full = vec!["wait"];
        full.extend_from_slice(args);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            match self.k(&full) {
                Err(e)
                    if format!("{e:#}").contains("(NotFound)")
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(200));
                }
                done => return done,
            }
        }
    }

    /// `kubectl apply` of a YAML document in this namespace.
    /// Caps the namespace at `n` active Tasks (0: every Task queues).
    pub fn cap_active(&self, n: u32) -> Result<String> {
        let cap = format!("longtask.dev/max-active-tasks={n}");
        self.kubectl
            .run(&["annotate", "namespace", &self.name, &cap])
    }

    pub fn apply(&self, yaml: &str) -> Result<String> {
        self.kubectl.apply(&self.name, yaml)
    }

    /// `status` of Task `name`, as JSON.
    pub async fn status(&self, name: &str) -> Result<serde_json::Value> {
        let t = tasks(&self.client, &self.name).get(name).await?;
        Ok(t.data["status"].clone())
    }

    /// Sets `spec.cancel: true` on Task `name`.
    pub fn cancel(&self, name: &str) -> Result<String> {
        self.k(&[
            "patch",
            "task",
            name,
            "--type=merge",
            "-p",
            r#"{"spec":{"cancel":true}}"#,
        ])
    }

    /// Waits until every Task in the namespace is Completed (and there are `n`).
    pub async fn all_complete(&self, n: usize, timeout: Duration) -> Result<()> {
        let api = tasks(&self.client, &self.name);
        wait::until(timeout, &format!("all {n} Tasks Completed"), || {
            let api = api.clone();
            async move {
                let list = api.list(&kube::api::ListParams::default()).await?;
                let done = list
                    .items
                    .iter()
                    .filter(|t| t.data["status"]["phase"] == "Completed")
                    .count();
                Ok(list.items.len() == n && done == n)
            }
        })
        .await
    }

    /// What a person would look at when a case fails.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for args in [
            vec!["get", "tasks,jobs,pods,configmaps", "-o", "wide"],
            vec!["get", "tasks", "-o", "yaml"],
            vec!["get", "events", "--sort-by=.lastTimestamp"],
        ] {
            out.push_str(&format!("$ kubectl -n {} {}\n", self.name, args.join(" ")));
            match self.k(&args) {
                Ok(s) => out.push_str(&format!("{s}\n")),
                Err(e) => out.push_str(&format!("{e:#}\n")),
            }
        }
        out
    }

    pub async fn delete(self) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let _ = api.delete(&self.name, &DeleteParams::default()).await;
    }
}

/// The Task API, read as JSON so the tests hold the operator to the
/// documented field names rather than sharing its Rust types.
pub fn tasks(client: &Client, ns: &str) -> Api<kube::api::DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk("longtask.dev", "v1alpha1", "Task");
    let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, "tasks");
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// How many of `items` (Tasks, as `tasks` reads them) have ended: phase
/// Completed or Failed.
pub fn finished(items: &[kube::api::DynamicObject]) -> usize {
    items
        .iter()
        .filter(|t| {
            matches!(
                t.data["status"]["phase"].as_str(),
                Some("Completed" | "Failed")
            )
        })
        .count()
}

/// A Task manifest running `sh -c SCRIPT`, with extra spec lines (YAML,
/// indented by four spaces) appended.
pub fn sh_task(name: &str, script: &str, extra_spec: &str) -> String {
    let script = serde_json::to_string(script).unwrap();
    format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: {name}\nspec:\n  command: [sh, -c, {script}]\n{extra_spec}"
    )
}
