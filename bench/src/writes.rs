//! bench writes: what one write of each kind costs the API server and etcd,
//! each kind alone (issue 37). A devcluster (process nodes, the audit log
//! on, as `bench` runs it) with only longtask's CRDs and no operator: N
//! identical writes of one kind in a row, then the next kind, CPU seconds of
//! every control-plane process read from /proc before and after each kind,
//! less the idle rate measured before the round. Kinds: the Task status by
//! server-side apply, by merge patch, by merge patch carrying a
//! resourceVersion, by a merge patch of its message alone; a ConfigMap
//! merge patch (an update of a built-in type); a Task create against a ConfigMap create (the CRD's
//! JSON and CEL against a built-in type); an Event create. Rounds alternate
//! the order. See bench/README.md.

#[allow(dead_code)] // shared with `bench`; this binary uses up, kubectl, namespace
mod cluster;
#[allow(dead_code)] // shared with `bench`; this binary uses the CPU reads
mod procfs;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

const NS: &str = "writes";

/// N writes of each kind, the API server's and etcd's CPU per write.
#[derive(Parser, Debug)]
#[command(name = "writes")]
struct Cli {
    /// Writes of each kind in a round.
    #[arg(long, default_value_t = 300)]
    n: usize,
    /// Rounds; each alternates the order of the kinds.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Where longtask-operator and longtask-worker are (the devcluster maps
    /// them to images; neither runs here).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The CRDs to install (default manifests/crd.yaml): e.g. a copy
    /// without its CEL rules, to measure what they cost.
    #[arg(long)]
    crd: Option<PathBuf>,
    /// After the rounds, take a CPU profile of the API server (5 s) while
    /// the Task status (message only) is written, and one while a
    /// ConfigMap is patched, into DIR/<Kind>.pprof for `go tool pprof`.
    #[arg(long)]
    apiserver_profile: Option<PathBuf>,
}

/// Seconds of each API server profile.
const PROFILE_SECONDS: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    StatusApply,
    StatusMerge,
    StatusMergeRv,
    StatusMessage,
    ConfigMapPatch,
    TaskCreate,
    ConfigMapCreate,
    EventCreate,
}

const KINDS: [Kind; 8] = [
    Kind::StatusApply,
    Kind::StatusMerge,
    Kind::StatusMergeRv,
    Kind::StatusMessage,
    Kind::ConfigMapPatch,
    Kind::TaskCreate,
    Kind::ConfigMapCreate,
    Kind::EventCreate,
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::StatusApply => "status apply (SSA)",
            Kind::StatusMerge => "status merge patch",
            Kind::StatusMergeRv => "status merge + rv",
            Kind::StatusMessage => "status message only",
            Kind::ConfigMapPatch => "ConfigMap patch",
            Kind::TaskCreate => "Task create",
            Kind::ConfigMapCreate => "ConfigMap create",
            Kind::EventCreate => "Event create",
        }
    }
}

/// One kind's N writes in one round.
struct Measured {
    kind: Kind,
    bytes: usize,
    wall: Duration,
    /// Net CPU seconds per component (idle rate taken out).
    cpu: BTreeMap<String, f64>,
}

struct Bench {
    cluster: cluster::Cluster,
    tasks: Api<DynamicObject>,
    n: usize,
    ticks: f64,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench writes: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    let root = cluster::root()?;
    let bin_dir = cli
        .bin_dir
        .clone()
        .unwrap_or_else(|| root.join("target/release"));
    let dir = root.join("target/bench-writes/cluster");
    let _ = cluster::down(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("load average before: {}", load_average());
    let profiling = cli.apiserver_profile.is_some();
    let cluster = cluster::Cluster::up(&dir, &bin_dir, 1, 2, profiling).await?;
    let crd = cli
        .crd
        .clone()
        .unwrap_or_else(|| root.join("manifests/crd.yaml"));
    cluster.kubectl(&[
        "apply",
        "--server-side",
        "-f",
        crd.to_str().unwrap_or_default(),
    ])?;
    cluster.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/tasks.longtask.dev",
    ])?;
    cluster.namespace(NS).await?;
    let gvk = GroupVersionKind::gvk("longtask.dev", "v1alpha1", "Task");
    let tasks = Api::namespaced_with(cluster.client.clone(), NS, &ApiResource::from_gvk(&gvk));
    let mut bench = Bench {
        cluster,
        tasks,
        n: cli.n,
        ticks: procfs::clock_ticks(),
    };
    let result = bench.rounds(cli.rounds).await;
    let profiled = match (&result, &cli.apiserver_profile) {
        (Ok(_), Some(d)) => bench.profiles(d).await,
        _ => Ok(()),
    };
    bench.cluster.down()?;
    let all = result?;
    profiled?;
    print_table(&all, cli.n);
    println!("load average after: {}", load_average());
    Ok(())
}

impl Bench {
    async fn rounds(&mut self, rounds: usize) -> Result<Vec<Measured>> {
        self.tasks
            .create(&PostParams::default(), &task("target")?)
            .await
            .context("create the target Task")?;
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "target"}}))?;
        Api::<ConfigMap>::namespaced(self.cluster.client.clone(), NS)
            .create(&PostParams::default(), &cm)
            .await
            .context("create the target ConfigMap")?;
        let mut all = Vec::new();
        for round in 0..rounds {
            let idle = self.idle_rate().await?;
            let mut order = KINDS.to_vec();
            if round % 2 == 1 {
                order.reverse();
            }
            for kind in order {
                all.push(self.measure(kind, round, &idle).await?);
                self.clean(kind).await?;
            }
        }
        Ok(all)
    }

    /// CPU seconds a second of each component while nothing is written.
    async fn idle_rate(&self) -> Result<BTreeMap<String, f64>> {
        let window = Duration::from_secs(5);
        let before = procfs::cluster_cpu(&self.cluster.dir, self.ticks)?;
        tokio::time::sleep(window).await;
        let after = procfs::cluster_cpu(&self.cluster.dir, self.ticks)?;
        Ok(procfs::cpu_spent(&before, &after)
            .into_iter()
            .map(|(k, v)| (k, v / window.as_secs_f64()))
            .collect())
    }

    async fn measure(
        &self,
        kind: Kind,
        round: usize,
        idle: &BTreeMap<String, f64>,
    ) -> Result<Measured> {
        let before = procfs::cluster_cpu(&self.cluster.dir, self.ticks)?;
        let started = Instant::now();
        let mut bytes = 0;
        let mut rv = self.target_rv().await?;
        for i in 0..self.n {
            let (sent, new_rv) = self.write(kind, round, i, &rv).await?;
            bytes += sent;
            rv = new_rv;
        }
        let wall = started.elapsed();
        let after = procfs::cluster_cpu(&self.cluster.dir, self.ticks)?;
        let cpu = procfs::cpu_spent(&before, &after)
            .into_iter()
            .map(|(k, v)| {
                let rest = idle.get(&k).copied().unwrap_or(0.0) * wall.as_secs_f64();
                (k, v - rest)
            })
            .collect();
        Ok(Measured {
            kind,
            bytes,
            wall,
            cpu,
        })
    }

    /// An API server profile while each of two kinds is written, back to
    /// back, for as long as the profile takes.
    async fn profiles(&self, dir: &std::path::Path) -> Result<()> {
        for kind in [Kind::StatusMessage, Kind::ConfigMapPatch] {
            let out = dir.join(format!("{kind:?}.pprof"));
            let profile = tokio::spawn(self.cluster.cpu_profile(&out, PROFILE_SECONDS)?);
            let mut rv = self.target_rv().await?;
            let mut i = 0;
            while !profile.is_finished() {
                rv = self.write(kind, 99, i, &rv).await?.1;
                i += 1;
            }
            profile.await??;
            println!(
                "{}: {i} writes profiled into {}",
                kind.name(),
                out.display()
            );
        }
        Ok(())
    }

    async fn target_rv(&self) -> Result<String> {
        let t = self.tasks.get("target").await?;
        Ok(t.metadata.resource_version.unwrap_or_default())
    }

    /// One write; the bytes sent and the target's resourceVersion after it.
    async fn write(&self, kind: Kind, round: usize, i: usize, rv: &str) -> Result<(usize, String)> {
        let status = || status(round * self.n + i);
        let client = &self.cluster.client;
        let (body, new_rv) = match kind {
            Kind::StatusApply => {
                let body = json!({"apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
                    "metadata": {"name": "target"}, "status": status()});
                let pp = PatchParams::apply("bench-writes").force();
                let t = self
                    .tasks
                    .patch_status("target", &pp, &Patch::Apply(&body))
                    .await?;
                (body, t.metadata.resource_version)
            }
            Kind::StatusMerge | Kind::StatusMergeRv => {
                let mut body = json!({"status": status()});
                if kind == Kind::StatusMergeRv {
                    body["metadata"] = json!({"resourceVersion": rv});
                }
                let pp = PatchParams::default();
                let t = self
                    .tasks
                    .patch_status("target", &pp, &Patch::Merge(&body))
                    .await?;
                (body, t.metadata.resource_version)
            }
            Kind::StatusMessage => {
                let body = json!({"status": {"message": format!("write {round} {i}")}});
                let pp = PatchParams::default();
                let t = self
                    .tasks
                    .patch_status("target", &pp, &Patch::Merge(&body))
                    .await?;
                (body, t.metadata.resource_version)
            }
            Kind::ConfigMapPatch => {
                let body = json!({"data": {"message": format!("write {round} {i}")}});
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
                api.patch("target", &PatchParams::default(), &Patch::Merge(&body))
                    .await?;
                (body, None)
            }
            Kind::TaskCreate => {
                let t = task(&format!("c-{round}-{i}"))?;
                self.tasks.create(&PostParams::default(), &t).await?;
                (serde_json::to_value(&t)?, None)
            }
            Kind::ConfigMapCreate => {
                let cm: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": format!("c-{round}-{i}")},
                    "data": {"result": "42\n"}}))?;
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
                api.create(&PostParams::default(), &cm).await?;
                (serde_json::to_value(&cm)?, None)
            }
            Kind::EventCreate => {
                let ev = event(round * self.n + i);
                let api: Api<k8s_openapi::api::events::v1::Event> =
                    Api::namespaced(client.clone(), NS);
                let ev: k8s_openapi::api::events::v1::Event = serde_json::from_value(ev)?;
                api.create(&PostParams::default(), &ev).await?;
                (serde_json::to_value(&ev)?, None)
            }
        };
        let sent = serde_json::to_vec(&body)?.len();
        Ok((sent, new_rv.unwrap_or_else(|| rv.to_owned())))
    }

    /// Deletes what a create kind made (outside the measurement).
    async fn clean(&self, kind: Kind) -> Result<()> {
        let lp = ListParams::default();
        let dp = DeleteParams::default();
        match kind {
            Kind::TaskCreate => {
                for t in self.tasks.list(&lp).await? {
                    let name = t.metadata.name.unwrap_or_default();
                    if name != "target" {
                        self.tasks.delete(&name, &dp).await?;
                    }
                }
            }
            Kind::ConfigMapCreate => {
                let api: Api<ConfigMap> = Api::namespaced(self.cluster.client.clone(), NS);
                let made = lp.clone().fields("metadata.name!=target");
                api.delete_collection(&dp, &made).await?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A Task as `kubectl apply` makes one (no operator runs: it stays new).
fn task(name: &str) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
        "metadata": {"name": name},
        "spec": {"command": ["sh", "-c", "echo 42 > \"$LONGTASK_RESULT\""], "timeoutSeconds": 60}
    }))?)
}

/// A running Task's status as the operator writes it, `i` in its message
/// and progress so that every write changes the object.
fn status(i: usize) -> Value {
    let t = "2026-12-07T10:00:00Z";
    let cond = |ty: &str, st: &str, reason: &str| {
        json!({"type": ty, "status": st, "reason": reason, "message": "",
            "lastTransitionTime": t, "observedGeneration": 1})
    };
    json!({
        "phase": "Running", "reason": "Running", "message": format!("write {i}"),
        "jobName": "target", "jobUid": "0b5c6f4e-3c1f-4c1e-9d7a-2a1b3c4d5e6f",
        "podName": "target-x7k2p", "startedAt": t, "attempts": 1,
        "progress": {"percent": (i % 100) as i64, "message": format!("step {i}"),
            "display": format!("{}%", i % 100), "updatedAt": t},
        "conditions": [cond("Running", "True", "Running"), cond("Waiting", "False", "Started"),
            cond("Complete", "False", "Running"), cond("Failed", "False", "Running"),
            cond("Finished", "False", "Running")]
    })
}

/// An events.k8s.io/v1 Event about the target, as the operator records one.
fn event(i: usize) -> Value {
    json!({
        "metadata": {"name": format!("target.{i:08x}")},
        "eventTime": "2026-12-07T10:00:00.000000Z",
        "reportingController": "longtask.dev/operator", "reportingInstance": "bench",
        "action": "Reconcile", "reason": "Running", "type": "Normal",
        "note": format!("write {i}: Job target created"),
        "regarding": {"apiVersion": "longtask.dev/v1alpha1", "kind": "Task",
            "name": "target", "namespace": NS}
    })
}

fn print_table(all: &[Measured], n: usize) {
    println!("\n{n} writes of each kind a round; CPU ms a write, idle rate taken out");
    println!(
        "{:<20} {:>7} {:>10} {:>8} {:>8} {:>8} {:>9}",
        "kind", "round", "bytes/wr", "apisrv", "etcd", "others", "wall ms"
    );
    for (i, m) in all.iter().enumerate() {
        let per = |v: f64| 1000.0 * v / n as f64;
        let api = m.cpu.get("apiserver").copied().unwrap_or(0.0);
        let etcd = m.cpu.get("etcd").copied().unwrap_or(0.0);
        let others: f64 = m
            .cpu
            .iter()
            .filter(|(k, _)| !["apiserver", "etcd", "machine"].contains(&k.as_str()))
            .map(|(_, v)| v)
            .sum();
        println!(
            "{:<20} {:>7} {:>10} {:>8.2} {:>8.2} {:>8.2} {:>9.2}",
            m.kind.name(),
            i / KINDS.len() + 1,
            m.bytes / n,
            per(api),
            per(etcd),
            per(others),
            m.wall.as_secs_f64() * 1000.0 / n as f64
        );
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
