//! Where the operator may act: a Task in a system namespace ends Failed
//! with a clear reason (and no Job), and the namespaced install
//! (`manifests/namespaced`, Roles only) runs Tasks in its one namespace
//! with no cluster-wide rights at all.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, operator, root, sh_task, tasks, wait};

const MINUTE: Duration = Duration::from_secs(60);

/// A Task in kube-system or kube-public fails at once with reason
/// InvalidSpec and a Warning Event saying why; nothing is created there.
pub async fn system_namespace_task_refused(c: Arc<Cluster>, _ns: TestNs) -> Result<()> {
    let name = "e2e-system-namespace";
    let checks = ["kube-system", "kube-public"].map(|sys| {
        let c = c.clone();
        async move {
            let res = refused_in(&c, sys, name).await;
            let _ = c
                .kubectl
                .run(&["-n", sys, "delete", "task", name, "--wait=false"]);
            res.with_context(|| format!("a Task in {sys}"))
        }
    });
    for r in futures::future::join_all(checks).await {
        r?;
    }
    Ok(())
}

async fn refused_in(c: &Cluster, sys: &str, name: &str) -> Result<()> {
    c.kubectl
        .apply(sys, &sh_task(name, "echo 1 > \"$LONGTASK_RESULT\"", ""))?;
    let t = wait::condition(&tasks(&c.client, sys), name, "Failed", MINUTE).await?;
    let status = &t["status"];
    ensure!(
        status["phase"] == "Failed" && status["reason"] == "InvalidSpec",
        "status: {status}"
    );
    let msg = status["message"].as_str().unwrap_or_default();
    ensure!(
        msg.contains(sys) && msg.contains("Tasks may not run in system namespaces"),
        "message: {msg:?}"
    );
    ensure!(status["jobName"].is_null(), "a Job was recorded: {status}");
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), sys);
    ensure!(
        jobs.get_opt(name).await?.is_none(),
        "Job {sys}/{name} exists"
    );
    let sas: Api<ServiceAccount> = Api::namespaced(c.client.clone(), sys);
    ensure!(
        sas.get_opt("longtask-worker").await?.is_none(),
        "the worker ServiceAccount was made in {sys}"
    );
    let events: Api<Event> = Api::namespaced(c.client.clone(), sys);
    wait::until(Duration::from_secs(30), "the Failed Event", || async {
        Ok(events
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .any(|e| {
                let r = e.regarding.as_ref();
                r.and_then(|r| r.kind.as_deref()) == Some("Task")
                    && r.and_then(|r| r.name.as_deref()) == Some(name)
                    && e.reason.as_deref() == Some("Failed")
                    && e.type_.as_deref() == Some("Warning")
                    && e.note
                        .as_deref()
                        .is_some_and(|n| n.contains("system namespaces"))
            }))
    })
    .await
}

/// The namespaced install in the case's namespace, run while the
/// cluster-wide operator is scaled to zero (so the two never reconcile the
/// same Tasks), which is restored afterwards whatever happened.
pub async fn namespaced_install_roles_only(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let replicas = c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "get",
        "deployment/longtask-operator",
        "-o",
        "jsonpath={.spec.replicas}",
    ])?;
    let replicas = format!("--replicas={}", replicas.trim());
    let overlay = root().join("target").join(format!("e2e-{}", ns.name));
    let res = namespaced(&c, &ns, &overlay).await;
    // Its log, while its pods are there.
    if res.is_err() {
        let logs = ns.k(&["logs", "-l", operator::SELECTOR, "--prefix", "--tail=40"]);
        println!(
            "--- namespaced operator log\n{}",
            logs.unwrap_or_else(|e| format!("{e:#}"))
        );
    }
    // Stop the namespaced operator before the cluster-wide one returns.
    let stop = ns.k(&[
        "delete",
        "deployment/longtask-operator",
        "--cascade=foreground",
        "--ignore-not-found",
        "--timeout=60s",
    ]);
    let _ = std::fs::remove_dir_all(&overlay);
    let restore = c
        .kubectl
        .run(&[
            "-n",
            SYSTEM_NS,
            "scale",
            "deployment/longtask-operator",
            &replicas,
        ])
        .and_then(|_| c.wait_operator("120s"));
    res?;
    stop?;
    restore?;
    Ok(())
}

async fn namespaced(c: &Cluster, ns: &TestNs, overlay: &std::path::Path) -> Result<()> {
    // What a user writes: an overlay naming the namespace, next to the repo's
    // manifests (kustomize wants relative paths).
    std::fs::create_dir_all(overlay)?;
    std::fs::write(
        overlay.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: {}\nresources: [../../manifests]\ncomponents: [../../manifests/namespaced]\n",
            ns.name
        ),
    )?;
    let overlay_arg = overlay.to_str().context("non-UTF-8 path")?;
    // The cluster admin's part (already there from the default install;
    // applying it again proves the documented command).
    let m = |f: &str| root().join("manifests").join(f);
    let files = [
        "crd.yaml",
        "worker-role.yaml",
        "worker-policy.yaml",
        "operator-policy.yaml",
        "cron-run-policy.yaml",
    ]
    .map(|f| m(f).to_string_lossy().into_owned());
    let mut admin = vec!["apply", "--server-side"];
    for f in &files {
        admin.extend(["-f", f.as_str()]);
    }
    c.kubectl.run(&admin)?;

    c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "scale",
        "deployment/longtask-operator",
        "--replicas=0",
    ])?;
    let sys_pods: Api<Pod> = Api::namespaced(c.client.clone(), SYSTEM_NS);
    wait::until(
        MINUTE,
        "the cluster-wide operator's pods to be gone",
        || async {
            let lp = ListParams::default().labels(operator::SELECTOR);
            Ok(sys_pods.list(&lp).await?.items.is_empty())
        },
    )
    .await?;

    // The namespace owner's part: namespaced objects only, all in `ns`.
    let applied = c.kubectl.run(&[
        "apply",
        "--server-side",
        "-k",
        overlay_arg,
        "-o",
        "jsonpath={range .items[*]}{.kind} {.metadata.namespace}{\"\\n\"}{end}",
    ])?;
    let mut kinds: Vec<&str> = Vec::new();
    for line in applied.lines().filter(|l| !l.is_empty()) {
        let (kind, in_ns) = line.split_once(' ').unwrap_or((line, ""));
        ensure!(
            ["ServiceAccount", "Role", "RoleBinding", "Deployment"].contains(&kind)
                && in_ns == ns.name,
            "the namespaced install holds {line:?}:\n{applied}"
        );
        kinds.push(kind);
    }
    ensure!(kinds.len() == 6, "applied: {applied}");
    ns.k(&[
        "rollout",
        "status",
        "deployment/longtask-operator",
        "--timeout=120s",
    ])?;
    let args = ns.k(&[
        "get",
        "deployment/longtask-operator",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].args}",
    ])?;
    ensure!(
        args.contains("--namespace=$(POD_NAMESPACE)"),
        "args: {args}"
    );

    // It leads through its own Lease and runs a Task to completion.
    ns.apply(&sh_task("ns-hello", "echo 7 > \"$LONGTASK_RESULT\"", ""))?;
    let t = wait::condition(&tasks(&ns.client, &ns.name), "ns-hello", "Complete", MINUTE).await?;
    ensure!(
        t["status"]["result"].as_str().map(str::trim) == Some("7"),
        "status: {}",
        t["status"]
    );
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), &ns.name);
    let holder = leases
        .get(operator::LEASE)
        .await?
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    ensure!(
        holder.starts_with("longtask-operator-"),
        "Lease {}/{} holder {holder:?}",
        ns.name,
        operator::LEASE
    );

    // Its account: rights in its namespace, none elsewhere, none cluster-wide.
    let sa = format!("system:serviceaccount:{}:longtask-operator", ns.name);
    let here = ns.name.as_str();
    let own_namespace = format!("get namespaces/{here}");
    let here_ns = format!("-n {here}");
    for (args, ns, want) in [
        ("list tasks.longtask.dev", here_ns.as_str(), true),
        (
            "patch tasks.longtask.dev --subresource=status",
            &here_ns,
            true,
        ),
        ("create jobs.batch", &here_ns, true),
        ("bind clusterroles/longtask-worker", &here_ns, true),
        (
            "update leases.coordination.k8s.io/longtask-operator",
            &here_ns,
            true,
        ),
        ("update leases.coordination.k8s.io/other", &here_ns, false),
        ("list tasks.longtask.dev", "-n default", false),
        ("list tasks.longtask.dev", "--all-namespaces", false),
        ("create jobs.batch", "-n default", false),
        ("create jobs.batch", "-n kube-system", false),
        ("update leases.coordination.k8s.io", "-n kube-system", false),
        ("bind clusterroles/longtask-worker", "-n default", false),
        ("list namespaces", "", false),
        (own_namespace.as_str(), "", false),
        ("list configmaps", "--all-namespaces", false),
    ] {
        let argv: Vec<&str> = args
            .split_whitespace()
            .chain(ns.split_whitespace())
            .collect();
        let got = c.kubectl.can_i(&sa, &argv)?;
        ensure!(got == want, "can-i {args} {ns} as {sa}: {got}, want {want}");
    }
    // Outside its namespace it may do what any account may (review its own
    // access, read public cluster facts), no more: the same list as an
    // account nothing is bound to.
    let list = |user: &str, namespace: &str| -> Result<Vec<String>> {
        let out = c
            .kubectl
            .run(&["auth", "can-i", "--list", "-n", namespace, "--as", user])?;
        let mut lines: Vec<String> = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        lines.sort();
        Ok(lines)
    };
    let nobody = format!("system:serviceaccount:{here}:nobody");
    let elsewhere = list(&sa, "default")?;
    let baseline = list(&nobody, "default")?;
    ensure!(
        elsewhere == baseline,
        "{sa} may act outside {here}:\n{}\nwhile an account without bindings may:\n{}",
        elsewhere.join("\n"),
        baseline.join("\n")
    );
    let own = list(&sa, here)?;
    ensure!(
        own.iter().any(|l| l.starts_with("tasks.longtask.dev ")),
        "can-i --list -n {here}:\n{}",
        own.join("\n")
    );
    let bound = c.kubectl.run(&[
        "get",
        "clusterrolebindings",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.subjects}{\"\\n\"}{end}",
    ])?;
    if let Some(l) = bound
        .lines()
        .find(|l| l.contains(&format!("\"namespace\":\"{here}\"")))
    {
        bail!("a ClusterRoleBinding names an account of {here}: {l}");
    }
    // It made only calls its Roles allow.
    let logs = ns.k(&["logs", "-l", operator::SELECTOR, "--prefix", "--tail=-1"])?;
    if let Some(l) = logs
        .lines()
        .find(|l| l.contains("forbidden") || l.contains("Forbidden"))
    {
        bail!("the namespaced operator was refused a call: {l}");
    }
    Ok(())
}
