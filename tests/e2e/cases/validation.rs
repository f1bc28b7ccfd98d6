//! Bad input is refused at `kubectl apply`, naming the field; the operator
//! runs with exactly the manifests' RBAC, and the admission policy keeps it
//! out of the system namespaces.

use std::sync::Arc;

use anyhow::{Context as _, Result, bail, ensure};
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, sh_task};

/// The operator's account in the default install.
pub const OPERATOR_SA: &str = "system:serviceaccount:longtask-system:longtask-operator";

pub(super) fn refused(ns: &TestNs, what: &str, yaml: &str, must_mention: &[&str]) -> Result<()> {
    match ns.apply(yaml) {
        Ok(out) => bail!("{what}: accepted ({out}), want it refused"),
        Err(e) => {
            let msg = format!("{e:#}");
            for m in must_mention {
                ensure!(
                    msg.contains(m),
                    "{what}: the error does not mention {m:?}:\n{msg}"
                );
            }
            Ok(())
        }
    }
}

pub async fn bad_input_refused(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let empty = "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: empty\nspec:\n  command: []\n";
    refused(&ns, "empty command", empty, &["spec.command"])?;
    refused(
        &ns,
        "timeoutSeconds 0",
        &sh_task("t0", "true", "  timeoutSeconds: 0\n"),
        &["spec.timeoutSeconds"],
    )?;
    refused(
        &ns,
        "retries 11",
        &sh_task("r11", "true", "  retries: 11\n"),
        &["spec.retries"],
    )?;
    let long = "a".repeat(64);
    refused(
        &ns,
        "64-character name",
        &sh_task(&long, "true", ""),
        &["63"],
    )?;
    // A spec change on an existing Task: refused, saying how to run again.
    ns.apply(&sh_task("fixed", "sleep 1", ""))?;
    refused(
        &ns,
        "spec change",
        &sh_task("fixed", "sleep 2", ""),
        &["immutable", "delete"],
    )?;
    // Nothing bad got in.
    let names = ns.k(&["get", "tasks", "-o", "name"])?;
    ensure!(
        names.trim() == "task.longtask.dev/fixed",
        "tasks present: {names:?}"
    );
    Ok(())
}

pub async fn operator_runs_with_manifest_rbac(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let pods = c.kubectl.run(&[
        "-n",
        SYSTEM_NS,
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.spec.serviceAccountName} {.status.phase}{\"\\n\"}{end}",
    ])?;
    let line = pods
        .lines()
        .find(|l| l.ends_with("Running"))
        .context("no Running operator pod")?;
    ensure!(
        line.starts_with("longtask-operator "),
        "operator pod runs as {line:?}"
    );
    // What the manifests grant, and no more than that: no Secrets, no
    // cluster-wide writes outside its own kinds, no Lease but its own.
    let sa = OPERATOR_SA;
    let lease_ns = format!("-n {SYSTEM_NS}");
    for (args, ns, want) in [
        ("create jobs.batch", "-n default", true),
        (
            "patch tasks.longtask.dev --subresource=status",
            "-n default",
            true,
        ),
        ("update tasks.longtask.dev", "-n default", false),
        // A CronTask's runs, and Replace's cancel.
        ("create tasks.longtask.dev", "-n default", true),
        ("patch tasks.longtask.dev", "-n default", true),
        (
            "patch crontasks.longtask.dev --subresource=status",
            "-n default",
            true,
        ),
        ("update crontasks.longtask.dev", "-n default", false),
        ("delete crontasks.longtask.dev", "-n default", false),
        ("get secrets", "-n default", false),
        ("delete nodes", "", false),
        ("create pods", "-n default", false),
        // Jobs are removed by the garbage collector (owner references).
        ("delete jobs.batch", "-n default", false),
        // The worker's ServiceAccount and RoleBinding only, by name.
        ("patch serviceaccounts/longtask-worker", "-n default", true),
        ("create serviceaccounts/longtask-worker", "-n default", true),
        ("create serviceaccounts", "-n default", false),
        ("patch serviceaccounts/default", "-n default", false),
        (
            "create rolebindings.rbac.authorization.k8s.io",
            "-n default",
            false,
        ),
        // Its own Lease and no other.
        ("update leases.coordination.k8s.io", "-n kube-system", false),
        (
            "update leases.coordination.k8s.io",
            "-n kube-node-lease",
            false,
        ),
        ("create leases.coordination.k8s.io", "-n kube-system", false),
        (
            "update leases.coordination.k8s.io/longtask-operator",
            &lease_ns,
            true,
        ),
        (
            "get leases.coordination.k8s.io/longtask-operator",
            &lease_ns,
            true,
        ),
        ("update leases.coordination.k8s.io/other", &lease_ns, false),
        (
            "patch leases.coordination.k8s.io/longtask-operator",
            &lease_ns,
            false,
        ),
        ("create leases.coordination.k8s.io", &lease_ns, true),
    ] {
        let argv: Vec<&str> = args
            .split_whitespace()
            .chain(ns.split_whitespace())
            .collect();
        let got = c.kubectl.can_i(sa, &argv)?;
        ensure!(got == want, "can-i {args} {ns} as {sa}: {got}, want {want}");
    }
    // RBAC allows the operator to create Jobs in kube-system (it cannot
    // deny); the admission policy refuses it. A server-side dry run goes
    // through admission and stores nothing.
    ensure!(
        c.kubectl
            .can_i(sa, &["create", "jobs.batch", "-n", "kube-system"])?
    );
    for ns in ["kube-system", "kube-public", "kube-node-lease"] {
        let create = [
            "--as",
            sa,
            "-n",
            ns,
            "create",
            "job",
            "policy-probe",
            "--image=longtask-worker:0.1.0",
            "--dry-run=server",
        ];
        match c.kubectl.run(&create) {
            Ok(out) => bail!("Job create in {ns} as {sa} accepted: {out}"),
            Err(e) => {
                let msg = format!("{e:#}");
                ensure!(
                    msg.contains("longtask-operator-system-namespaces")
                        && msg.contains("Tasks may not run in system namespaces"),
                    "Job create in {ns} as {sa} not refused by the policy:\n{msg}"
                );
            }
        }
    }
    // Elsewhere the policy lets the same create through.
    c.kubectl.run(&[
        "--as",
        sa,
        "-n",
        &ns.name,
        "create",
        "job",
        "policy-probe",
        "--image=longtask-worker:0.1.0",
        "--dry-run=server",
    ])?;
    Ok(())
}
