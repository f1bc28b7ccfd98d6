//! The network on container nodes (issue 25): the leader's pod cut off
//! from the API server for longer than its lease, and a Task's program
//! calling a Service by its DNS name (CoreDNS as the kubelets'
//! clusterDNS).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{Cluster, PYTHON_IMAGE, SYSTEM_NS, TestNs, operator, sh_task, tasks, wait};

const MINUTE: Duration = Duration::from_secs(60);

/// How long the leader's pod is cut off: well past the Lease's 10 s and
/// the renew deadline's 8 s.
const CUT_SECONDS: u64 = 40;

/// The Lease's holder and acquireTime.
async fn lease(c: &Cluster) -> Result<(Option<String>, Option<Timestamp>)> {
    let api: Api<Lease> = Api::namespaced(c.client.clone(), SYSTEM_NS);
    let spec = api.get(operator::LEASE).await?.spec.unwrap_or_default();
    Ok((
        spec.holder_identity.filter(|h| !h.is_empty()),
        spec.acquire_time.map(|t| t.0),
    ))
}

/// The timestamp of the first log line of `pod`'s operator container (its
/// previous run when `previous`) whose message contains `needle`.
fn logged_at(c: &Cluster, pod: &str, previous: bool, needle: &str) -> Result<Option<Timestamp>> {
    let mut args = vec!["-n", SYSTEM_NS, "logs", pod];
    if previous {
        args.push("--previous");
    }
    let out = c.kubectl.run(&args)?;
    Ok(out.lines().filter(|l| l.contains(needle)).find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        v["timestamp"].as_str()?.parse().ok()
    }))
}

/// The leader's pod loses the API server (`devcluster net cut --pod`, its
/// node stays Ready) for 40 s while Tasks run and more are created. The
/// other replica takes the Lease only after the old leader's renew
/// deadline passed and the old leader said it no longer leads (fencing:
/// its own clock stops it before the Lease can be taken), runs the new
/// Tasks, and once the cut heals nothing is undone: every Task completed
/// once, each with one Job.
pub async fn leader_cut_off_hands_over(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    c.wait_operator("120s")?;
    let old = operator::leader_pod(&c).await?;
    let log = JobLog::start(&ns.client, &ns.name);
    ns.apply(&sh_task(
        "across",
        r#"sleep 30; echo across > "$LONGTASK_RESULT""#,
        "",
    ))?;
    let api = tasks(&ns.client, &ns.name);
    wait::condition(&api, "across", "Running", MINUTE).await?;
    let cut = Instant::now();
    c.devcluster(&[
        "net",
        "cut",
        "--pod",
        &format!("{SYSTEM_NS}/{old}"),
        "--seconds",
        &CUT_SECONDS.to_string(),
    ])?;
    let names: Vec<String> = (0..5).map(|i| format!("during-{i}")).collect();
    let docs: Vec<String> = names
        .iter()
        .map(|n| sh_task(n, &format!("echo {n} > \"$LONGTASK_RESULT\""), ""))
        .collect();
    ns.apply(&docs.join("---\n"))?;
    let new = loop {
        if let Some(h) = lease(&c).await?.0.filter(|h| *h != old) {
            break h;
        }
        ensure!(
            cut.elapsed() < MINUTE,
            "no other replica took the Lease within a minute of the cut"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let took = cut.elapsed();
    for n in &names {
        let t = wait::condition(&api, n, "Complete", 2 * MINUTE).await?;
        ensure!(
            t["status"]["result"].as_str().map(str::trim) == Some(n.as_str()),
            "{n}: {}",
            t["status"]
        );
    }
    let ran = cut.elapsed();
    // Fencing: the old leader gave up on its own clock before the new
    // one acquired (both stamps from this machine's clock).
    let acquired = lease(&c).await?.1.context("the Lease's acquireTime")?;
    let gave_up = wait_for_log(&c, &old, "no longer leads").await?;
    ensure!(
        gave_up < acquired,
        "the old leader {old} gave up at {gave_up}, after {new} acquired the Lease at {acquired}"
    );
    // The cut heals; the old leader comes back as a standby and undoes
    // nothing.
    let healed = Duration::from_secs(CUT_SECONDS + 5).saturating_sub(cut.elapsed());
    tokio::time::sleep(healed).await;
    c.wait_operator("120s")?;
    let t = wait::condition(&api, "across", "Complete", 2 * MINUTE).await?;
    ensure!(
        t["status"]["result"].as_str().map(str::trim) == Some("across"),
        "across: {}",
        t["status"]
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    for n in names.iter().map(String::as_str).chain(["across"]) {
        let st = &api.get(n).await?.data["status"];
        ensure!(
            st["phase"] == "Completed" && st["attempts"] == 1,
            "{n} after the heal: {st}"
        );
    }
    ensure!(
        lease(&c).await?.0.as_deref() == Some(new.as_str()),
        "the healed old leader took the Lease back"
    );
    log.one_each(names.iter().map(String::as_str).chain(["across"]))?;
    eprintln!(
        "leader {old} cut off: {new} led {took:.1?} after the cut (old gave up {gave_up}, \
         acquired {acquired}), new Tasks Completed {ran:.1?} after the cut"
    );
    Ok(())
}

/// The old leader's "no longer leads" line: from its previous container
/// (it exits on losing the Lease) or, while it has not exited yet, the
/// current one. The kubelet serves the logs, so this works during the cut.
async fn wait_for_log(c: &Cluster, pod: &str, needle: &str) -> Result<Timestamp> {
    let mut found = None;
    wait::until(MINUTE, &format!("{pod} logging {needle:?}"), || {
        found = logged_at(c, pod, true, needle)
            .ok()
            .flatten()
            .or_else(|| logged_at(c, pod, false, needle).ok().flatten());
        std::future::ready(Ok(found.is_some()))
    })
    .await?;
    found.context("log line")
}

/// A Task's program reaches a Service by its DNS name, short and fully
/// qualified: the pod's resolver is CoreDNS (the kubelets' clusterDNS)
/// with the namespace's search path.
pub async fn task_calls_a_service_by_name(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    // The test image's Python is Debian's minimal one (no http module):
    // a plain socket server, and a plain socket client below.
    let server = r#"import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('', 8080))
s.listen(16)
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b'HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\npong')
    c.close()
"#;
    ns.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: echo\n  labels: {{app: echo}}\nspec:\n  \
         securityContext: {{runAsNonRoot: true, runAsUser: 65532, seccompProfile: {{type: RuntimeDefault}}}}\n  \
         containers:\n  - name: echo\n    image: {PYTHON_IMAGE}\n    imagePullPolicy: Never\n    \
         command: [python3, -c, {server:?}]\n    ports: [{{containerPort: 8080}}]\n    \
         readinessProbe: {{tcpSocket: {{port: 8080}}, periodSeconds: 1}}\n    \
         securityContext: {{allowPrivilegeEscalation: false, capabilities: {{drop: [ALL]}}}}\n\
         ---\napiVersion: v1\nkind: Service\nmetadata:\n  name: echo\nspec:\n  selector: {{app: echo}}\n  \
         ports: [{{port: 80, targetPort: 8080}}]\n"
    ))?;
    ns.k(&[
        "wait",
        "--for=condition=Ready",
        "pod/echo",
        "--timeout=120s",
    ])?;
    let fqdn = format!("echo.{}.svc.cluster.local", ns.name);
    let client = format!(
        r#"import os, socket
def get(host):
    c = socket.create_connection((host, 80), timeout=10)
    c.sendall(b'GET / HTTP/1.0\r\nHost: ' + host.encode() + b'\r\n\r\n')
    data = b''
    while True:
        b = c.recv(4096)
        if not b:
            break
        data += b
    return data.split(b'\r\n\r\n', 1)[1].decode()
got = [get(h) for h in ('echo', '{fqdn}')]
open(os.environ['LONGTASK_RESULT'], 'w').write(' '.join(got))
"#
    );
    ns.apply(&format!(
        "apiVersion: longtask.dev/v1alpha1\nkind: Task\nmetadata:\n  name: caller\nspec:\n  \
         image: {PYTHON_IMAGE}\n  imagePullPolicy: Never\n  command: [python3, -c, {client:?}]\n"
    ))?;
    let t = wait::condition(
        &tasks(&ns.client, &ns.name),
        "caller",
        "Finished",
        2 * MINUTE,
    )
    .await?;
    ensure!(
        t["status"]["phase"] == "Completed"
            && t["status"]["result"].as_str().map(str::trim) == Some("pong pong"),
        "caller: {}\n{}",
        t["status"],
        ns.dump()
    );
    Ok(())
}
