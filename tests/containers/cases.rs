//! The cases of the `containers` target: each names the behaviour of a real
//! node it proves.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use longtask_e2e::jobs::JobLog;
use longtask_e2e::{
    Cluster, ROOT_IMAGE, SYSTEM_NS, TestNs, WORKER_IMAGE, openmetrics, operator, procs, sh_task,
    tasks, wait,
};
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);

/// The pods of a Task's Job (`job-name` label), oldest first.
async fn job_pods(ns: &TestNs, job: &str) -> Result<Vec<Pod>> {
    let api: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let mut pods = api
        .list(&ListParams::default().labels(&format!("job-name={job}")))
        .await?
        .items;
    pods.sort_by_key(|p| p.metadata.creation_timestamp.clone().map(|t| t.0));
    Ok(pods)
}

/// The pod's first container status, as JSON.
fn container_status(pod: &Pod) -> Value {
    serde_json::to_value(pod)
        .ok()
        .and_then(|v| v["status"]["containerStatuses"].get(0).cloned())
        .unwrap_or(Value::Null)
}

/// Waits until pod `name`'s first container status satisfies `done` and
/// returns it; on timeout the error quotes the last status seen.
async fn container_until(
    ns: &TestNs,
    name: &str,
    what: &str,
    done: fn(&Value) -> bool,
) -> Result<Value> {
    let api: Api<Pod> = Api::namespaced(ns.client.clone(), &ns.name);
    let last = std::sync::Mutex::new(Value::Null);
    let found = wait::until(MINUTE, what, || async {
        let cs = container_status(&api.get(name).await?);
        let ok = done(&cs);
        *last.lock().unwrap() = cs;
        Ok(ok)
    })
    .await;
    let last = last.into_inner().unwrap();
    found.with_context(|| format!("container status of {name}: {last}"))?;
    Ok(last)
}

/// Waits for the first pod of a Task's Job and returns its name.
async fn wait_pod(ns: &TestNs, job: &str) -> Result<String> {
    let name = std::sync::Mutex::new(None);
    wait::until(MINUTE, "the Job's pod", || async {
        let first = job_pods(ns, job).await?.into_iter().next();
        *name.lock().unwrap() = first.and_then(|p| p.metadata.name);
        Ok(name.lock().unwrap().is_some())
    })
    .await?;
    name.into_inner().unwrap().context("no pod")
}

/// A Task completes with its result, `kubectl logs -f job/NAME` streams the
/// program's lines and ends with it, and the pod ran on a container node
/// at a pod-network address.
pub async fn completes_with_result_and_logs(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task(
        "hello",
        r#"for i in 1 2 3; do echo "line $i"; sleep 1; done; printf 'the answer is 42' > "$LONGTASK_RESULT""#,
        "",
    ))?;
    let pod = wait_pod(&ns, "hello").await?;
    container_until(&ns, &pod, "the container to start", |cs| {
        cs["state"]["running"].is_object() || cs["state"]["terminated"].is_object()
    })
    .await?;
    let follow = tokio::process::Command::new("kubectl")
        .arg(format!("--kubeconfig={}", c.kubeconfig.display()))
        .args(["-n", &ns.name, "logs", "-f", "job/hello"])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(MINUTE, follow)
        .await
        .context("kubectl logs -f did not end with the program")??;
    let streamed = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success() && streamed.contains("line 1") && streamed.contains("line 3"),
        "kubectl logs -f job/hello ({}): {streamed:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let task = wait::condition(&tasks(&ns.client, &ns.name), "hello", "Complete", MINUTE).await?;
    ensure!(
        task["status"]["result"] == "the answer is 42",
        "result: {}",
        task["status"]
    );
    let pods = job_pods(&ns, "hello").await?;
    let pod = pods.first().context("no pod of job/hello")?;
    let status = pod.status.clone().unwrap_or_default();
    let ip = status.pod_ip.unwrap_or_default();
    ensure!(
        ip.starts_with("10.") && !ip.starts_with("127."),
        "pod IP {ip:?} is not on the pod network"
    );
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .context("pod without node")?;
    let node = Api::<Node>::all(ns.client.clone()).get(&node_name).await?;
    let runtime = node
        .status
        .and_then(|s| s.node_info)
        .map(|i| i.container_runtime_version)
        .unwrap_or_default();
    ensure!(
        runtime.starts_with("containerd://"),
        "node {node_name} runs {runtime:?}"
    );
    Ok(())
}

/// The program runs as uid and gid 65532, with no capabilities, no new
/// privileges and the runtime's default seccomp filter: it reports what
/// its own process sees.
pub async fn program_runs_unprivileged(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let script = r#"{ echo "uid=$(id -u) gid=$(id -g)"; grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status | tr -d ' \t'; } > "$LONGTASK_RESULT""#;
    ns.apply(&sh_task("whoami", script, ""))?;
    let task = wait::condition(&tasks(&ns.client, &ns.name), "whoami", "Complete", MINUTE).await?;
    let result = task["status"]["result"].as_str().unwrap_or_default();
    for want in [
        "uid=65532 gid=65532",
        "CapPrm:0000000000000000",
        "CapEff:0000000000000000",
        "NoNewPrivs:1",
        "Seccomp:2",
    ] {
        ensure!(
            result.lines().any(|l| l == want),
            "result lacks {want:?}: {result:?}"
        );
    }
    Ok(())
}

/// A failing program's exit code reaches the Task through the kubelet's
/// container status, and each retry is a new container.
pub async fn exit_code_and_retries(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&sh_task(
        "three",
        "echo failing >&2; exit 3",
        "  retries: 1\n",
    ))?;
    let task = wait::condition(&tasks(&ns.client, &ns.name), "three", "Failed", MINUTE).await?;
    let st = &task["status"];
    ensure!(st["attempts"] == 2, "attempts: {st}");
    ensure!(st["exitCode"] == 3, "exitCode: {st}");
    ensure!(st["reason"] == "BackoffLimitExceeded", "reason: {st}");
    let pods = job_pods(&ns, "three").await?;
    ensure!(pods.len() == 2, "{} pods, want 2", pods.len());
    for p in &pods {
        let cs = container_status(p);
        ensure!(
            cs["state"]["terminated"]["exitCode"] == 3,
            "container status: {cs}"
        );
    }
    Ok(())
}

/// Deleting a running Task stops its container: the program's process is
/// gone from this machine.
pub async fn deleting_a_task_kills_its_container(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    // A duration no other case uses: it names the program's process.
    let marker = "sleep 3607";
    ns.apply(&sh_task(
        "doomed",
        &format!("echo started; exec {marker}"),
        "",
    ))?;
    wait::until(MINUTE, "the program's process", || async {
        Ok(!procs::with_cmdline(marker).is_empty())
    })
    .await?;
    ns.k(&["delete", "task", "doomed", "--timeout=60s"])?;
    wait::until(MINUTE, "the program's process to be gone", || async {
        Ok(procs::with_cmdline(marker).is_empty())
    })
    .await?;
    wait::until(MINUTE, "the Job and its pod to be gone", || async {
        Ok(job_pods(&ns, "doomed").await?.is_empty()
            && ns.k(&["get", "jobs", "-o", "name"])?.trim().is_empty())
    })
    .await?;
    Ok(())
}

/// Test namespaces enforce `restricted`: a privileged pod is refused there,
/// while a Task completes.
pub async fn restricted_is_enforced(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let level = ns.k(&[
        "get",
        "namespace",
        &ns.name,
        "-o",
        r"jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}",
    ])?;
    ensure!(level.trim() == "restricted", "enforce label: {level:?}");
    let privileged = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: privileged\nspec:\n  containers:\n  - name: c\n    image: {WORKER_IMAGE}\n    securityContext:\n      privileged: true\n"
    );
    match ns.apply(&privileged) {
        Ok(out) => bail!("a privileged pod was admitted: {out}"),
        Err(e) => ensure!(
            format!("{e:#}").contains("violates PodSecurity"),
            "refused, but not by Pod Security: {e:#}"
        ),
    }
    ns.apply(&sh_task("fine", "true", ""))?;
    wait::condition(&tasks(&ns.client, &ns.name), "fine", "Complete", MINUTE).await?;
    Ok(())
}

/// A pod whose image would run as root, under `runAsNonRoot` with no uid of
/// its own, is refused by the kubelet with a named Waiting reason.
pub async fn root_image_refused_by_the_runtime(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: rooty
spec:
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
    seccompProfile: {{type: RuntimeDefault}}
  containers:
  - name: c
    image: {ROOT_IMAGE}
    imagePullPolicy: Never
    command: [sh, -c, "id -u"]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {{drop: [ALL]}}
"#
    ))?;
    let last = container_until(&ns, "rooty", "a Waiting reason", |cs| {
        let reason = &cs["state"]["waiting"]["reason"];
        reason.is_string() && reason != "ContainerCreating"
    })
    .await?;
    let waiting = &last["state"]["waiting"];
    ensure!(
        waiting["reason"] == "CreateContainerConfigError"
            && waiting["message"]
                .as_str()
                .is_some_and(|m| m.contains("image will run as root")),
        "waiting: {waiting}"
    );
    Ok(())
}

/// What a kubelet sets up for a pod: ConfigMap, Secret, projected
/// service-account token and emptyDir volumes, cgroup memory and CPU
/// limits, the exit code and the termination message.
pub async fn kubelet_pod_features(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    ns.k(&[
        "create",
        "configmap",
        "cfg",
        "--from-literal=greeting=hello",
    ])?;
    ns.k(&[
        "create",
        "secret",
        "generic",
        "sec",
        "--from-literal=token=s3cret",
    ])?;
    let script = [
        "echo config=$(cat /cfg/greeting)",
        "echo secret=$(cat /sec/token)",
        "test -s /tok/token && echo token=present",
        "echo scratch > /scratch/f && echo emptydir=$(cat /scratch/f)",
        "echo memlimit=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)",
        "echo cpuquota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)",
        "printf 'all checked' > /dev/termination-log",
        "exit 7",
    ]
    .join("; ");
    ns.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: features
spec:
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {{type: RuntimeDefault}}
  containers:
  - name: c
    image: {WORKER_IMAGE}
    command: [sh, -c, {script:?}]
    resources:
      requests: {{cpu: 500m, memory: 64Mi}}
      limits: {{cpu: 500m, memory: 64Mi}}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {{drop: [ALL]}}
    volumeMounts:
    - {{name: cfg, mountPath: /cfg}}
    - {{name: sec, mountPath: /sec}}
    - {{name: tok, mountPath: /tok}}
    - {{name: scratch, mountPath: /scratch}}
  volumes:
  - name: cfg
    configMap: {{name: cfg}}
  - name: sec
    secret: {{secretName: sec}}
  - name: tok
    projected:
      sources:
      - serviceAccountToken: {{path: token, expirationSeconds: 3600}}
  - name: scratch
    emptyDir: {{}}
"#
    ))?;
    let last = container_until(&ns, "features", "the pod to end", |cs| {
        cs["state"]["terminated"].is_object()
    })
    .await?;
    let term = &last["state"]["terminated"];
    ensure!(
        term["exitCode"] == 7 && term["message"] == "all checked",
        "terminated: {term}"
    );
    let logs = ns.k(&["logs", "features"])?;
    for want in [
        "config=hello",
        "secret=s3cret",
        "token=present",
        "emptydir=scratch",
        "memlimit=67108864",
        "cpuquota=50000",
    ] {
        ensure!(
            logs.lines().any(|l| l == want),
            "logs lack {want:?}:\n{logs}"
        );
    }
    Ok(())
}

/// The operator, a container on the pod network, serves /metrics that the
/// API server's pod proxy reaches.
pub async fn metrics_through_the_pod_proxy(c: Arc<Cluster>, _ns: TestNs) -> Result<()> {
    let pods = operator::pods(&c.client).await?;
    let pod = pods.first().context("no operator pod")?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    let path = format!("/api/v1/namespaces/{SYSTEM_NS}/pods/{name}:8080/proxy/metrics");
    let text = c.kubectl.run(&["get", "--raw", &path])?;
    let families =
        openmetrics::parse(&text).with_context(|| format!("/metrics of {name}:\n{text}"))?;
    ensure!(
        families.iter().any(|f| f.name.starts_with("longtask_")),
        "no longtask_ family in /metrics of {name}:\n{text}"
    );
    Ok(())
}

/// Deleting every operator pod while a Task runs loses nothing: the new
/// pods pick the Task up, its one Job completes, and it reports.
pub async fn operator_pod_deleted_mid_run(c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let log = JobLog::start(&ns.client, &ns.name);
    ns.apply(&sh_task(
        "survivor",
        r#"echo begun; sleep 10; echo survived > "$LONGTASK_RESULT""#,
        "",
    ))?;
    wait::condition(&tasks(&ns.client, &ns.name), "survivor", "Running", MINUTE).await?;
    operator::delete_pods(&c.kubectl)?;
    let task = wait::condition(
        &tasks(&ns.client, &ns.name),
        "survivor",
        "Complete",
        2 * MINUTE,
    )
    .await?;
    ensure!(
        task["status"]["result"].as_str().map(str::trim) == Some("survived"),
        "result: {}",
        task["status"]
    );
    log.one_each(["survivor"])?;
    c.wait_operator("120s")?;
    Ok(())
}
