//! Pure readings of what the cluster shows: who owns a Job, whether it
//! finished, which result is trustworthy, what the newest pod says.

use std::collections::BTreeMap;

use crds::conditions::Reason;
use crds::names::{self, annotations, labels};
use crds::result::{TaskResult, keys as result_keys};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

/// What the reconciler saw in the cluster for one Task.
pub struct Observed<'a> {
    /// The Job with the Task's name, if it exists.
    pub job: Option<&'a Job>,
    /// The ConfigMap `<task>-result`, if it was read and exists.
    pub result: Option<&'a ConfigMap>,
    /// Why `result` must not be accepted as the final result although its
    /// labels match (its writer is not a pod of the Task's Job).
    pub refused: Option<String>,
    /// Pods of that Job (only when the Job is ours).
    pub pods: &'a [Pod],
    /// `pods` are the live ones only (read from the pod cache, which
    /// holds no finished pod); else every pod of the Job.
    pub pods_live_only: bool,
    /// Pods that left the pod cache since the last reconcile and were
    /// found (by a read of the API server) to have ended disrupted: the
    /// pod garbage collector marks a pod Failed with DisruptionTarget in
    /// one write, which the cache sees only as the pod leaving. Counted as
    /// disruptions, and for nothing else (no exit code, no phase).
    pub departed: &'a [Pod],
    /// Why the API server refused that Job's pods (the Job controller's
    /// newest FailedCreate Event), read when the Job runs and has no pod.
    pub pod_refused: Option<String>,
    /// Result ConfigMaps of the Task's shards (sharded Tasks whose Job finished).
    pub shard_results: &'a [ConfigMap],
    /// What was read of Kueue for a Kueue-managed Job that is suspended or
    /// being stopped (`None`: not read, not Kueue's, or Kueue not installed).
    pub kueue: Option<&'a crate::status::kueue::Seen>,
    /// Where the Task's outputs go, as fixed when its Job was made (`None`:
    /// it has no output store).
    pub outputs: Option<&'a crate::outputs::report::Target>,
    /// The time to stamp on anything that changes now.
    pub now: Time,
}

impl Observed<'_> {
    /// The final result, if `result` holds one from this Task's Job
    /// `job_uid` written by one of that Job's pods; otherwise why not.
    pub fn accept_result(&self, task_uid: &str, job_uid: &str) -> Result<TaskResult, String> {
        if let Some(why) = &self.refused {
            return Err(why.clone());
        }
        accept_result(self.result, task_uid, job_uid)
    }
}

/// Who controls a Job with the Task's name.
#[derive(Debug, PartialEq, Eq)]
pub enum Ownership {
    /// Controlled by this Task (same UID).
    Ours,
    /// Controlled by another object (its UID), or by nothing (`None`).
    Other(Option<String>),
}

/// Reads the Job's controller owner reference against the Task's UID.
pub fn ownership(job: &Job, task_uid: &str) -> Ownership {
    match controller(&job.metadata) {
        Some(o) if o.uid == task_uid && o.kind == names::KIND => Ownership::Ours,
        Some(o) => Ownership::Other(Some(o.uid.clone())),
        None => Ownership::Other(None),
    }
}

/// The controller owner reference of an object, if any.
fn controller(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// True when the controller of the object `meta` describes has UID `uid`
/// (a pod of that Job).
pub fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    controller(meta).is_some_and(|o| o.uid == uid)
}

/// How a Job ended, from its terminal conditions.
#[derive(Debug)]
pub enum Finish<'a> {
    Complete(&'a JobCondition),
    Failed(&'a JobCondition),
}

/// The Job's terminal condition (`Complete` or `Failed` with status True), if any.
pub fn finish(job: &Job) -> Option<Finish<'_>> {
    let conds = job.status.as_ref()?.conditions.as_ref()?;
    conds
        .iter()
        .filter(|c| c.status == "True")
        .find_map(|c| match c.type_.as_str() {
            "Complete" => Some(Finish::Complete(c)),
            "Failed" => Some(Finish::Failed(c)),
            _ => None,
        })
}

/// True for a Job the Job controller has not reported on yet (just
/// created): no status counts, no conditions, so no pods to look at.
pub fn untouched(job: &Job) -> bool {
    job.status.as_ref().is_none_or(|s| {
        s.conditions.as_ref().is_none_or(Vec::is_empty)
            && s.active.is_none()
            && s.succeeded.is_none()
            && s.failed.is_none()
            && s.terminating.is_none()
            && s.ready.is_none()
    })
}

/// Maps a Job controller failure reason onto our vocabulary;
/// `fail_on_codes` is true when the Task lists `spec.failOnExitCodes`.
pub fn failure_reason(job_reason: Option<&str>, fail_on_codes: bool) -> Reason {
    match job_reason {
        Some("DeadlineExceeded") => Reason::DeadlineExceeded,
        Some("BackoffLimitExceeded") => Reason::BackoffLimitExceeded,
        // The only FailJob rule of the Task's podFailurePolicy is the one
        // of spec.failOnExitCodes.
        Some("PodFailurePolicy") if fail_on_codes => Reason::FailOnExitCode,
        _ => Reason::JobFailed,
    }
}

/// The data of the result ConfigMap, only if it belongs to this Task and
/// this Job; otherwise says why not, for the status message.
pub fn fenced<'a>(
    cm: Option<&'a ConfigMap>,
    task_uid: &str,
    job_uid: &str,
) -> Result<&'a BTreeMap<String, String>, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    let Some(cm) = cm else {
        return Err("no result ConfigMap was written".to_owned());
    };
    let name = cm.metadata.name.as_deref().unwrap_or("?");
    let label = |k: &str| {
        cm.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(k))
            .map(String::as_str)
    };
    if label(labels::TASK_UID) != Some(task_uid) {
        return Err(format!(
            "ConfigMap {name} does not carry this Task's UID ({task_uid}); it was ignored"
        ));
    }
    match label(labels::JOB_UID) {
        Some(u) if u == job_uid => {}
        other => {
            return Err(format!(
                "ConfigMap {name} was written by Job UID {}, not by this Task's Job {job_uid}; it was ignored",
                other.unwrap_or("<none>")
            ));
        }
    }
    if stamp(cm).is_none() {
        return Err(format!(
            "ConfigMap {name} carries no writer stamp (annotations {} and {}): no longtask \
             worker wrote it; it was ignored",
            annotations::WRITER_POD,
            annotations::WRITER_POD_UID
        ));
    }
    Ok(cm.data.as_ref().unwrap_or(&EMPTY))
}

/// Accepts the result ConfigMap only if it belongs to this Task and this
/// Job and holds a final result (progress alone is not one).
pub fn accept_result(
    cm: Option<&ConfigMap>,
    task_uid: &str,
    job_uid: &str,
) -> Result<TaskResult, String> {
    let data = fenced(cm, task_uid, job_uid)?;
    let name = cm.and_then(|c| c.metadata.name.as_deref()).unwrap_or("?");
    if !data.contains_key(result_keys::EXIT_CODE) {
        return Err(format!(
            "ConfigMap {name} holds progress only: the worker never wrote the final result"
        ));
    }
    static NO_BINARY: BTreeMap<String, ByteString> = BTreeMap::new();
    let binary = cm
        .and_then(|c| c.binary_data.as_ref())
        .unwrap_or(&NO_BINARY);
    TaskResult::from_stored(data, binary)
        .map_err(|e| format!("ConfigMap {name} is not a valid result: {e}"))
}

/// Why `cm` is not from this Task's current Job (forged or stale), or
/// `None` when its labels match (its content may still be invalid).
pub fn foreign(cm: &ConfigMap, task_uid: &str, job_uid: &str) -> Option<String> {
    let label = |k: &str| cm.metadata.labels.as_ref().and_then(|l| l.get(k));
    let fenced = label(labels::TASK_UID).map(String::as_str) == Some(task_uid)
        && label(labels::JOB_UID).map(String::as_str) == Some(job_uid);
    if fenced {
        return None;
    }
    accept_result(Some(cm), task_uid, job_uid).err()
}

/// The pod a result ConfigMap says wrote it (set by every worker write,
/// enforced by the admission policies).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub pod: String,
    pub pod_uid: String,
}

/// The writer stamp of `cm`, if it has a complete one.
pub fn stamp(cm: &ConfigMap) -> Option<Stamp> {
    let a = cm.metadata.annotations.as_ref()?;
    let get = |k: &str| a.get(k).filter(|v| !v.is_empty()).cloned();
    Some(Stamp {
        pod: get(annotations::WRITER_POD)?,
        pod_uid: get(annotations::WRITER_POD_UID)?,
    })
}

/// What the reconciler found of the pod a result's stamp names.
#[derive(Clone, Copy, Debug)]
pub enum WriterPod<'a> {
    /// The pod exists (it may belong to anyone).
    Found(&'a Pod),
    /// No pod of that name exists any more; `rival` is true when another
    /// Job exists whose pods could carry a name like it.
    Gone { rival: bool },
}

/// What the Job controller names the pods of Job `job` (shard `shard` of an
/// Indexed Job) before their 5 random characters: `<job>-` or
/// `<job>-<shard>-`, cut to 58 characters keeping the index part. The bool
/// is true when the name had to be cut (then other Jobs' pods may share it).
pub fn pod_prefix(job: &str, shard: Option<u32>) -> (String, bool) {
    const MAX_PREFIX: usize = 58;
    let suffix = shard.map_or("-".to_owned(), |i| format!("-{i}-"));
    if job.len() + suffix.len() <= MAX_PREFIX {
        return (format!("{job}{suffix}"), false);
    }
    let keep = MAX_PREFIX.saturating_sub(suffix.len());
    let mut end = keep.min(job.len());
    while !job.is_char_boundary(end) {
        end -= 1;
    }
    (format!("{}{suffix}", &job[..end]), true)
}

/// The other Job whose pods are named like the pods of Job `job` (shard
/// `shard`): for a plain Job `a-3`, shard 3 of Indexed Job `a`; for shard 3
/// of `a`, the plain Job `a-3`.
pub fn rival_job(job: &str, shard: Option<u32>) -> Option<String> {
    match shard {
        Some(i) => Some(format!("{job}-{i}")),
        None => {
            let (base, index) = job.rsplit_once('-')?;
            let digits = !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit());
            (digits && !base.is_empty()).then(|| base.to_owned())
        }
    }
}

/// Accepts a result ConfigMap only if the pod its stamp names is (or, when
/// it is gone, can only have been) a pod of the Job `job` with UID
/// `job_uid`, running shard `shard`. Says why not otherwise.
pub fn check_writer(
    cm: &ConfigMap,
    writer: WriterPod<'_>,
    job: &str,
    job_uid: &str,
    shard: Option<u32>,
) -> Result<(), String> {
    let name = cm.metadata.name.as_deref().unwrap_or("?");
    let Some(st) = stamp(cm) else {
        return Err(format!(
            "ConfigMap {name} carries no writer stamp: no longtask worker wrote it"
        ));
    };
    let checked = match writer {
        WriterPod::Found(pod) => check_found_writer(pod, &st, job, job_uid, shard),
        WriterPod::Gone { rival } => check_gone_writer(&st, rival, job, shard),
    };
    checked.map_err(|why| {
        format!(
            "ConfigMap {name} was written by pod {}, {why}; it was ignored",
            st.pod
        )
    })
}

/// [`check_writer`] when the stamped pod exists: it must be the stamped
/// pod (same UID), controlled by the Job `job_uid`, running shard `shard`.
/// `Err` says why not, to follow "written by pod <name>, ".
fn check_found_writer(
    pod: &Pod,
    st: &Stamp,
    job: &str,
    job_uid: &str,
    shard: Option<u32>,
) -> Result<(), String> {
    if pod.metadata.uid.as_deref() != Some(st.pod_uid.as_str()) {
        return Err(format!(
            "but the pod of that name now has UID {}, not the stamped {}, and is not \
             the writer",
            pod.metadata.uid.as_deref().unwrap_or("<none>"),
            st.pod_uid
        ));
    }
    match controller(&pod.metadata) {
        Some(o) if o.kind == "Job" && o.uid == job_uid => {}
        Some(o) => {
            return Err(format!(
                "a pod of {} {} (UID {}), not of this Task's Job {job} (UID {job_uid})",
                o.kind, o.name, o.uid
            ));
        }
        None => {
            return Err(format!(
                "a pod no Job controls, not one of this Task's Job {job} (UID {job_uid})"
            ));
        }
    }
    if let Some(i) = shard {
        let index = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::JOB_COMPLETION_INDEX));
        if index.map(String::as_str) != Some(i.to_string().as_str()) {
            return Err(format!(
                "which ran shard {}, not shard {i}",
                index.map_or("<none>", String::as_str)
            ));
        }
    }
    Ok(())
}

/// [`check_writer`] when the stamped pod is gone: its name must be shaped
/// like a pod of Job `job` (shard `shard`), and only this Job's pods may
/// carry such a name (no cut prefix, no `rival` Job). `Err` says why not,
/// to follow "written by pod <name>, ".
fn check_gone_writer(st: &Stamp, rival: bool, job: &str, shard: Option<u32>) -> Result<(), String> {
    let (prefix, cut) = pod_prefix(job, shard);
    let shaped = st.pod.len() == prefix.len() + 5 && st.pod.starts_with(&prefix);
    if !shaped {
        return Err(format!(
            "which is not named like a pod of this Task's Job {job} ({prefix}<5 characters>)"
        ));
    }
    if cut || rival {
        let whose = if cut {
            "its name was cut to 58 characters and may belong to another Job".to_owned()
        } else {
            format!(
                "Job {} has pods named like it",
                rival_job(job, shard).unwrap_or_default()
            )
        };
        return Err(format!(
            "which no longer exists, so it cannot be shown to be a pod of this Task's \
             Job {job} ({whose})"
        ));
    }
    Ok(())
}

/// The newest pod (by creation time, then name).
pub fn newest(pods: &[Pod]) -> Option<&Pod> {
    pods.iter().max_by(|a, b| {
        let key = |p: &Pod| {
            (
                p.metadata.creation_timestamp.clone(),
                p.metadata.name.clone(),
            )
        };
        key(a).cmp(&key(b))
    })
}

/// Pods that have not reached Succeeded or Failed (deleted ones count until gone).
pub fn live_pods(pods: &[Pod]) -> usize {
    pods.iter()
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded" | "Failed"))
        })
        .count()
}

/// A pod that ended with a DisruptionTarget condition: one the pod cache
/// may have seen only leave.
pub fn left_disrupted(pod: &Pod) -> bool {
    live_pods(std::slice::from_ref(pod)) == 0
        && crate::status::disruptions::condition(pod).is_some()
}

/// Exit code of the worker container of `pod`, once it terminated.
pub fn exit_code(pod: &Pod) -> Option<i32> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    let cs = statuses
        .iter()
        .find(|c| c.name == names::WORKER_CONTAINER)?;
    Some(cs.state.as_ref()?.terminated.as_ref()?.exit_code)
}

/// An exit code for a message: "137 (killed by SIGKILL)"; "unknown" when absent.
pub fn describe_exit(code: Option<i32>) -> String {
    let Some(c) = code else {
        return "unknown".to_owned();
    };
    let name = match c.saturating_sub(128) {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        n if (1..=64).contains(&n) => return format!("{c} (killed by signal {n})"),
        _ => return c.to_string(),
    };
    format!("{c} (killed by {name})")
}

/// How the Task ended, as longtask recorded it on a Job it stopped
/// (annotation `longtask.dev/ended`); only on a suspended Job, and only a
/// terminal phase.
pub struct Ended {
    pub phase: crds::Phase,
    pub reason: Option<crds::Reason>,
    pub message: Option<String>,
    pub at: Option<Time>,
}

pub fn ended(job: &Job) -> Option<Ended> {
    let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    let raw = job
        .metadata
        .annotations
        .as_ref()?
        .get(crds::names::annotations::ENDED)?;
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    let phase: crds::Phase = serde_json::from_value(v["phase"].clone()).ok()?;
    if !suspended || !phase.is_terminal() {
        return None;
    }
    Some(Ended {
        phase,
        reason: v["reason"].as_str().and_then(|r| r.parse().ok()),
        message: v["message"].as_str().map(str::to_owned),
        at: serde_json::from_value(v["at"].clone()).ok(),
    })
}

/// What the container runtime said of the newest terminated pod's worker
/// container when that is more than an exit code: "StartError: <message>"
/// for a program that could not start, "OOMKilled", and the like; for a
/// plain "Error" the last line the container printed (the kubelet's
/// FallbackToLogsOnError message), which is where runc says why the
/// process could not be executed ("exec user process caused: argument
/// list too long", exit code 1). Read only when the worker wrote no
/// result, so it never stands in for the program's own report.
pub fn termination_note(pods: &[Pod]) -> Option<String> {
    let newest = pods
        .iter()
        .filter(|p| exit_code(p).is_some())
        .max_by_key(|p| {
            (
                p.metadata.creation_timestamp.clone(),
                p.metadata.name.clone(),
            )
        })?;
    let t = newest
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == names::WORKER_CONTAINER)?
        .state
        .as_ref()?
        .terminated
        .as_ref()?;
    let reason = t
        .reason
        .as_deref()
        .filter(|r| !matches!(*r, "Error" | "Completed" | ""));
    let message = t
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty());
    let note = match (reason, message) {
        (None, None) => return None,
        (None, Some(m)) => {
            let last = m.lines().map(str::trim).rfind(|l| !l.is_empty())?;
            format!("log: {}", crds::result::truncate_utf8(last, 512))
        }
        (Some(r), None) => r.to_owned(),
        (Some(r), Some(m)) => format!("{r}: {}", crds::result::truncate_utf8(m, 512)),
    };
    Some(note)
}

/// Exit code of the newest pod that has terminated.
pub fn last_exit_code(pods: &[Pod]) -> Option<i32> {
    let mut done: Vec<&Pod> = pods.iter().filter(|p| exit_code(p).is_some()).collect();
    done.sort_by_key(|p| {
        (
            p.metadata.creation_timestamp.clone(),
            p.metadata.name.clone(),
        )
    });
    done.last().and_then(|p| exit_code(p))
}

/// When the pod's node stopped reporting, what to tell: the node
/// lifecycle controller set the started pod's Ready condition False
/// without a reason (the kubelet always gives one: ContainersNotReady,
/// PodCompleted), so the pod's state is only the last the node reported.
pub fn node_unreachable(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Running") {
        return None;
    }
    let ready = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")?;
    let silent = ready.status == "False" && ready.reason.as_deref().unwrap_or_default().is_empty();
    if !silent {
        return None;
    }
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("?");
    let since = ready
        .last_transition_time
        .as_ref()
        .map_or(String::new(), |t| format!(" since {}", t.0));
    Some(format!(
        "node {node} of pod {} stopped reporting{since}: the program may still run there; \
         it runs again elsewhere, without using a retry, once the node is deleted or tainted \
         node.kubernetes.io/out-of-service (never two copies at once)",
        pod.metadata.name.as_deref().unwrap_or_default()
    ))
}

/// Why the pod cannot start, if it cannot: (reason, message).
pub fn waiting(pod: &Pod) -> Option<(Reason, String)> {
    let status = pod.status.as_ref()?;
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
        return None;
    }
    let unschedulable = status.conditions.iter().flatten().find(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    });
    if let Some(c) = unschedulable {
        return Some((Reason::Unschedulable, c.message.clone().unwrap_or_default()));
    }
    let containers = status.init_container_statuses.iter().flatten();
    for cs in containers.chain(status.container_statuses.iter().flatten()) {
        let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref()) else {
            continue;
        };
        let ours = match w.reason.as_deref() {
            Some(
                "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" | "ErrImageNeverPull",
            ) => Reason::ImagePullFailed,
            Some("CreateContainerConfigError" | "CreateContainerError") => {
                Reason::CreateContainerConfigError
            }
            _ => continue,
        };
        let msg = w
            .message
            .clone()
            .unwrap_or_else(|| w.reason.clone().unwrap_or_default());
        return Some((ours, msg));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_results_are_named() {
        use crate::fixtures::ResultFixture;
        let ours = ResultFixture::new("x").build();
        assert_eq!(foreign(&ours, "tu", "j1"), None);
        let stale = ResultFixture::new("x").of_job("old-job").build();
        let stale = foreign(&stale, "tu", "j1").unwrap_or_default();
        assert!(stale.contains("old-job"), "{stale}");
        let forged = ResultFixture::new("x").of_task("other").build();
        let forged = foreign(&forged, "tu", "j1").unwrap_or_default();
        assert!(forged.contains("UID"), "{forged}");
    }

    #[test]
    fn only_a_silent_node_makes_a_pod_unreachable() {
        use crate::fixtures::PodFixture;
        let silent = PodFixture::new("p").on_silent_node("n1", 5).build();
        let said = node_unreachable(&silent).unwrap_or_default();
        assert!(
            said.starts_with("node n1 of pod p stopped reporting since"),
            "{said}"
        );
        // The kubelet's own not-ready (a reason given) is no node loss.
        let mut kubelet = silent.clone();
        let conds = kubelet.status.as_mut().and_then(|s| s.conditions.as_mut());
        for c in conds.into_iter().flatten() {
            c.reason = Some("ContainersNotReady".into());
        }
        assert_eq!(node_unreachable(&kubelet), None);
        // Nor is a pod that ended, or one that never started.
        assert_eq!(node_unreachable(&PodFixture::new("p").build()), None);
        let ended = PodFixture::new("p")
            .on_silent_node("n1", 5)
            .exited(1)
            .build();
        assert_eq!(node_unreachable(&ended), None);
    }

    #[test]
    fn termination_notes_say_what_the_runtime_said() {
        let ended = |reason: &str, message: Option<&str>| {
            let pod = crate::fixtures::PodFixture::new("p")
                .exited(1)
                .said(reason, message)
                .build();
            termination_note(&[pod])
        };
        let runc = "standard_init_linux.go:228: exec user process caused: argument list too long\n";
        for (reason, message, want) in [
            ("Error", None, None),
            ("Error", Some(" \n"), None),
            ("Completed", None, None),
            (
                "Error",
                Some(runc),
                Some(
                    "log: standard_init_linux.go:228: exec user process caused: argument list too long",
                ),
            ),
            ("Error", Some("a\nlast line\n\n"), Some("log: last line")),
            ("OOMKilled", None, Some("OOMKilled")),
            (
                "StartError",
                Some("exec: argument list too long"),
                Some("StartError: exec: argument list too long"),
            ),
        ] {
            assert_eq!(
                ended(reason, message).as_deref(),
                want,
                "{reason} {message:?}"
            );
        }
    }

    #[test]
    fn exits_name_their_signal() {
        for (code, want) in [
            (None, "unknown"),
            (Some(0), "0"),
            (Some(3), "3"),
            (Some(137), "137 (killed by SIGKILL)"),
            (Some(143), "143 (killed by SIGTERM)"),
            (Some(190), "190 (killed by signal 62)"),
            (Some(255), "255"),
        ] {
            assert_eq!(describe_exit(code), want);
        }
    }
}
