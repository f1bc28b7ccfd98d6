//! Bad input is refused at `kubectl apply`, naming the field; the operator
//! runs with exactly the manifests' RBAC.

use std::sync::Arc;

use anyhow::{Context as _, Result, bail, ensure};
use longtask_e2e::{Cluster, SYSTEM_NS, TestNs, sh_task};

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

pub async fn operator_runs_with_manifest_rbac(c: Arc<Cluster>, _ns: TestNs) -> Result<()> {
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
    // cluster-wide writes outside its own kinds.
    let sa = "system:serviceaccount:longtask-system:longtask-operator";
    for (verb, resource, sub, want) in [
        ("create", "jobs.batch", "", "yes"),
        ("patch", "tasks.longtask.dev", "status", "yes"),
        ("update", "tasks.longtask.dev", "", "no"),
        ("get", "secrets", "", "no"),
        ("delete", "nodes", "", "no"),
        ("create", "pods", "", "no"),
    ] {
        let sub = format!("--subresource={sub}");
        let mut args = vec!["auth", "can-i", verb, resource, "--as", sa, "-n", "default"];
        if sub.len() > "--subresource=".len() {
            args.push(&sub);
        }
        let out = c
            .kubectl
            .run(&args)
            .or_else(|e| Ok::<_, anyhow::Error>(format!("{e:#}")))?;
        ensure!(
            out.trim().ends_with(want),
            "can-i {verb} {resource} as {sa}: {out:?}, want {want}"
        );
    }
    Ok(())
}
