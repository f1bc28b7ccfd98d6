//! A finished Task's result, for `result` and the web page: the exact
//! bytes the program returned, read from the result ConfigMap (plain or
//! gzip), which must carry a worker's stamp, checked against the digest of
//! what the operator accepted (status.resultDigest, or the shard's
//! status.shardResults[I].resultDigest), and refused when they differ.
//! When the ConfigMap is gone, the status's copy serves if it is whole.

use std::collections::BTreeMap;

use crds::names::{annotations, labels};
use crds::result::{self as format, TaskResult, digest, keys};
use crds::{ShardResult, Task};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use crate::client::{Error, Kube};

/// The exact bytes of the result of `task` (in `k`'s namespace): of shard
/// `shard`, or every shard's one after the other, or the single result;
/// decoded and checked against the digest the operator accepted.
pub async fn bytes(k: &Kube, task: &Task, shard: Option<u32>) -> Result<Vec<u8>, Error> {
    let name = name_of(task);
    if task.spec.is_sharded() {
        let shards = u32::try_from(task.spec.shards).unwrap_or_default();
        let wanted: Vec<u32> = match shard {
            Some(i) if i >= shards => {
                return Err(Error::Usage(format!(
                    "--shard {i}: task {name} has shards 0 to {}",
                    shards - 1
                )));
            }
            Some(i) => vec![i],
            None => (0..shards).collect(),
        };
        let mut all = Vec::new();
        for i in wanted {
            let cm = config_map(k, &format::shard_config_map_name(&name, i)).await?;
            all.extend(self::shard(task, i, cm.as_ref())?);
        }
        return Ok(all);
    }
    if shard.is_some_and(|i| i > 0) {
        return Err(Error::Usage(format!("--shard: task {name} is not sharded")));
    }
    let cm = config_map(k, &format::config_map_name(&name)).await?;
    single(task, cm.as_ref())
}

/// The ConfigMap `name`, or `None` when it does not exist (any more).
async fn config_map(k: &Kube, name: &str) -> Result<Option<ConfigMap>, Error> {
    Api::<ConfigMap>::namespaced(k.client.clone(), &k.namespace)
        .get_opt(name)
        .await
        .map_err(|e| Error::api("get", "configmaps", &k.namespace, Some(name), e))
}

/// The Task's name.
pub fn name_of(task: &Task) -> String {
    task.metadata.name.clone().unwrap_or_default()
}

fn no_result(task: &Task, why: String) -> Error {
    Error::NoResult {
        name: name_of(task),
        why,
    }
}

/// A result exists only once the Task ended.
fn finished(task: &Task) -> Result<(), Error> {
    if task.is_terminal() {
        return Ok(());
    }
    let phase = task
        .status
        .as_ref()
        .and_then(|s| s.phase)
        .map_or("not started", |p| p.as_str());
    Err(no_result(
        task,
        format!(
            "it is {phase}, not finished (wait for it: kubectl longtask wait {})",
            name_of(task)
        ),
    ))
}

/// The result a ConfigMap holds, if it is this Task's and complete.
pub fn decode(task: &Task, cm: &ConfigMap) -> Result<TaskResult, Error> {
    let cm_name = cm.metadata.name.as_deref().unwrap_or("?");
    let label = |k: &str| cm.metadata.labels.as_ref().and_then(|l| l.get(k)).cloned();
    let job_uid = task.status.as_ref().and_then(|s| s.job_uid.clone());
    if label(labels::TASK_UID) != task.metadata.uid
        || job_uid.is_some_and(|j| label(labels::JOB_UID) != Some(j))
    {
        return Err(no_result(
            task,
            format!(
                "ConfigMap {cm_name} is not from this Task's run (its longtask.dev/task-uid or job-uid label differs)"
            ),
        ));
    }
    if !stamped(cm) {
        return Err(no_result(
            task,
            format!(
                "ConfigMap {cm_name} carries no writer stamp (annotations {} and {}): no longtask worker wrote it as it is",
                annotations::WRITER_POD,
                annotations::WRITER_POD_UID
            ),
        ));
    }
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    static NO_BINARY: BTreeMap<String, ByteString> = BTreeMap::new();
    let data = cm.data.as_ref().unwrap_or(&NONE);
    if !data.contains_key(keys::EXIT_CODE) {
        return Err(no_result(
            task,
            format!(
                "ConfigMap {cm_name} holds progress only: the worker never wrote the final result"
            ),
        ));
    }
    let binary = cm.binary_data.as_ref().unwrap_or(&NO_BINARY);
    let r = TaskResult::from_stored(data, binary).map_err(|e| {
        no_result(
            task,
            format!("ConfigMap {cm_name} is not a valid result: {e}"),
        )
    })?;
    if r.omitted {
        return Err(no_result(
            task,
            format!("it was not stored: {}", r.too_large_message()),
        ));
    }
    Ok(r)
}

/// True when the ConfigMap carries a whole writer stamp, which every
/// worker write sets (the operator accepts no result without one).
fn stamped(cm: &ConfigMap) -> bool {
    let a = cm.metadata.annotations.as_ref();
    [annotations::WRITER_POD, annotations::WRITER_POD_UID]
        .iter()
        .all(|k| a.and_then(|a| a.get(*k)).is_some_and(|v| !v.is_empty()))
}

/// The whole result of an unsharded Task, checked against status.resultDigest.
pub fn single(task: &Task, cm: Option<&ConfigMap>) -> Result<Vec<u8>, Error> {
    finished(task)?;
    let name = name_of(task);
    let cm_name = format::config_map_name(&name);
    let status = task.status.clone().unwrap_or_default();
    let (bytes, source_name) = match cm {
        Some(cm) => (decode(task, cm)?.result, format!("ConfigMap {cm_name}")),
        None if status.result_truncated == Some(true) => {
            return Err(no_result(
                task,
                format!(
                    "the result ConfigMap {cm_name} is gone and status.result holds only its first {} bytes",
                    format::MAX_STATUS_RESULT_BYTES
                ),
            ));
        }
        None => {
            let Some(r) = status.result.clone() else {
                return Err(no_result(
                    task,
                    format!(
                        "the result ConfigMap {cm_name} does not exist and status.result is empty"
                    ),
                ));
            };
            crate::print::note!(
                "note: the result ConfigMap {cm_name} is gone; printing status.result, which holds the whole result"
            );
            (r.into_bytes(), "status.result".to_owned())
        }
    };
    let Some(expected) = status.result_digest else {
        return Err(no_result(
            task,
            format!(
                "status.resultDigest is absent, so {source_name} cannot be checked (reason {}: {})",
                status.reason.unwrap_or_default(),
                status.message.unwrap_or_default()
            ),
        ));
    };
    let actual = digest(&bytes);
    if actual != expected {
        return Err(Error::DigestMismatch {
            name,
            source_name,
            against: "status.resultDigest".to_owned(),
            expected,
            actual,
        });
    }
    Ok(bytes)
}

/// The result of shard `index`, checked against the digest the operator
/// recorded in the shard's status.shardResults entry. Without the
/// ConfigMap, the entry's own copy serves only if it is the whole result
/// (it has that digest).
pub fn shard(task: &Task, index: u32, cm: Option<&ConfigMap>) -> Result<Vec<u8>, Error> {
    finished(task)?;
    let name = name_of(task);
    let cm_name = format::shard_config_map_name(&name, index);
    let status = task.status.clone().unwrap_or_default();
    let against = format!("status.shardResults[{index}].resultDigest");
    let entry: Option<&ShardResult> = status
        .shard_results
        .iter()
        .find(|s| u32::try_from(s.index).ok() == Some(index) && s.exit_code.is_some());
    let Some(expected) = entry.and_then(|e| e.result_digest.clone()) else {
        return Err(no_result(
            task,
            format!(
                "{against} is absent: the operator did not accept a result of shard {index}, so {cm_name} cannot be checked"
            ),
        ));
    };
    let (bytes, source_name) = match cm {
        Some(cm) => (decode(task, cm)?.result, format!("ConfigMap {cm_name}")),
        None => {
            let copy = entry.map(|e| e.result.clone()).unwrap_or_default();
            if digest(copy.as_bytes()) != expected {
                return Err(no_result(
                    task,
                    format!(
                        "the result ConfigMap {cm_name} is gone and the status does not hold shard {index}'s whole result"
                    ),
                ));
            }
            crate::print::note!(
                "note: the result ConfigMap {cm_name} is gone; printing status.shardResults[{index}].result, which holds the whole result"
            );
            (
                copy.into_bytes(),
                format!("status.shardResults[{index}].result"),
            )
        }
    };
    let actual = digest(&bytes);
    if actual != expected {
        return Err(Error::DigestMismatch {
            name,
            source_name,
            against,
            expected,
            actual,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::task;
    use crds::Phase;
    use kube::api::ObjectMeta;

    /// The ConfigMap the worker writes for `raw`, labelled for task `name`.
    fn stored(name: &str, cm_name: &str, raw: &[u8]) -> ConfigMap {
        let r = TaskResult {
            result: raw.to_vec(),
            exit_code: 0,
            finished_at: "2027-01-15T08:00:00Z".into(),
            message: String::new(),
            result_size: raw.len(),
            log_tail: String::new(),
            omitted: false,
        };
        let s = r.to_stored();
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(cm_name.into()),
                labels: Some(BTreeMap::from([
                    (labels::TASK_UID.into(), format!("uid-{name}")),
                    (labels::JOB_UID.into(), "job-1".into()),
                ])),
                annotations: Some(BTreeMap::from([
                    (annotations::WRITER_POD.into(), format!("{name}-x7k2p")),
                    (annotations::WRITER_POD_UID.into(), "pod-uid-1".into()),
                ])),
                ..ObjectMeta::default()
            },
            data: Some(s.data),
            binary_data: (!s.binary_data.is_empty()).then_some(s.binary_data),
            ..ConfigMap::default()
        }
    }

    fn done(raw: &[u8]) -> Task {
        let shown = String::from_utf8_lossy(raw);
        let cut = raw.len() > format::MAX_STATUS_RESULT_BYTES;
        let mut t = task("t")
            .phase(Phase::Completed)
            .result(&shown[..shown.len().min(100)], cut, &digest(raw))
            .build();
        if let Some(s) = t.status.as_mut() {
            s.job_uid = Some("job-1".into());
        }
        t
    }

    #[test]
    fn digest_is_the_operators() {
        assert_eq!(
            digest(b"hello\n"),
            "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
    }

    #[test]
    fn plain_and_gzip_results_come_back_exact() {
        let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        for raw in [&b"42\n"[..], &big] {
            let cm = stored("t", "t-result", raw);
            let gz = cm.binary_data.is_some();
            assert_eq!(gz, raw.len() > 100, "stored as gzip when large");
            assert_eq!(single(&done(raw), Some(&cm)).expect("result"), raw);
        }
    }

    #[test]
    fn a_changed_result_is_refused_naming_both_digests() {
        let t = done(b"right");
        let cm = stored("t", "t-result", b"wrong");
        let e = single(&t, Some(&cm)).expect_err("mismatch").to_string();
        assert!(
            e.contains(&digest(b"right")) && e.contains(&digest(b"wrong")),
            "{e}"
        );
    }

    #[test]
    fn another_tasks_config_map_is_refused() {
        let cm = stored("other", "t-result", b"x");
        let e = single(&done(b"x"), Some(&cm))
            .expect_err("foreign")
            .to_string();
        assert!(e.contains("not from this Task's run"), "{e}");
    }

    #[test]
    fn progress_only_and_unfinished_are_errors() {
        let mut cm = stored("t", "t-result", b"x");
        if let Some(d) = cm.data.as_mut() {
            d.remove(keys::EXIT_CODE);
        }
        let e = single(&done(b"x"), Some(&cm))
            .expect_err("progress")
            .to_string();
        assert!(e.contains("progress only"), "{e}");
        let running = task("t").phase(Phase::Running).build();
        let e = single(&running, None).expect_err("running").to_string();
        assert!(e.contains("Running, not finished"), "{e}");
    }

    #[test]
    fn without_the_config_map_a_whole_status_result_serves() {
        assert_eq!(single(&done(b"short"), None).expect("fallback"), b"short");
        let long = vec![b'a'; format::MAX_STATUS_RESULT_BYTES + 1];
        let e = single(&done(&long), None).expect_err("cut").to_string();
        assert!(e.contains("is gone"), "{e}");
    }

    /// A finished Task of 3 shards whose status holds `results` (cut to
    /// their first byte when `cut`), each with the digest of the whole.
    fn sharded(results: &[&[u8]], cut: bool) -> Task {
        let mut t = task("t").shards(3).phase(Phase::Completed).build();
        if let Some(s) = t.status.as_mut() {
            s.job_uid = Some("job-1".into());
            s.shard_results_truncated = cut.then_some(true);
            s.shard_results = (0..)
                .zip(results)
                .map(|(index, r)| {
                    let shown = String::from_utf8_lossy(r);
                    ShardResult {
                        index,
                        exit_code: Some(0),
                        result: if cut { shown[..1].into() } else { shown.into() },
                        result_digest: Some(digest(r)),
                    }
                })
                .collect();
        }
        t
    }

    #[test]
    fn shards_are_checked_against_their_digest() {
        let t = sharded(&[b"a", b"b", b"c"], false);
        let cm = stored("t", "t-result-1", b"b");
        assert_eq!(shard(&t, 1, Some(&cm)).expect("shard 1"), b"b");
        let e = shard(&t, 2, Some(&cm)).expect_err("not c").to_string();
        assert!(e.contains("status.shardResults[2].resultDigest"), "{e}");
        assert_eq!(shard(&t, 0, None).expect("from status"), b"a");
        let cut = sharded(&[b"aaa", b"bbb", b"ccc"], true);
        let e = shard(&cut, 0, None).expect_err("cut").to_string();
        assert!(e.contains("is gone"), "a cut copy is not the result: {e}");
        let cm = stored("t", "t-result-1", b"bbb");
        assert_eq!(shard(&cut, 1, Some(&cm)).expect("whole"), b"bbb");
        let cm = stored("t", "t-result-1", b"bb");
        assert!(shard(&cut, 1, Some(&cm)).is_err(), "a prefix is not enough");
    }

    /// Issue 24: shard 1's status entry is "" (shard 0 spent the budget);
    /// its ConfigMap, unstamped and changed to EVIL, matched before.
    #[test]
    fn a_tampered_shard_is_refused_whatever_its_status_entry() {
        let big = vec![b'x'; 40_000];
        let mut t = sharded(&[&big, &big], false);
        if let Some(s) = t.status.as_mut() {
            s.shard_results_truncated = Some(true);
            s.shard_results[1].result = String::new();
        }
        let mut cm = stored("t", "t-result-1", b"EVIL");
        let e = shard(&t, 1, Some(&cm)).expect_err("changed").to_string();
        assert!(e.contains(&digest(b"EVIL")), "{e}");
        cm.metadata.annotations = None;
        let e = shard(&t, 1, Some(&cm)).expect_err("unstamped").to_string();
        assert!(e.contains("no writer stamp"), "{e}");
        let cm = stored("t", "t-result-1", &big);
        assert_eq!(shard(&t, 1, Some(&cm)).expect("genuine"), big);
        // An entry without a digest (an older operator's, or emptied) matches nothing.
        if let Some(s) = t.status.as_mut() {
            s.shard_results[1].result_digest = None;
        }
        let e = shard(&t, 1, Some(&cm)).expect_err("no digest").to_string();
        assert!(e.contains("is absent"), "{e}");
        if let Some(s) = t.status.as_mut() {
            s.shard_results[1].result_digest = Some(String::new());
        }
        assert!(shard(&t, 1, Some(&cm)).is_err(), "an empty digest");
    }

    #[test]
    fn binary_shard_results_compare_as_bytes() {
        let raw = [0xff_u8, 0xfe, 0x00, 0x9b];
        let t = sharded(&[&raw, b"b", b"c"], false);
        let cm = stored("t", "t-result-0", &raw);
        assert_eq!(shard(&t, 0, Some(&cm)).expect("exact"), raw);
        let other = [0xfe_u8, 0xfe, 0x00, 0x9b];
        let cm = stored("t", "t-result-0", &other);
        assert!(
            shard(&t, 0, Some(&cm)).is_err(),
            "same lossy text, other bytes"
        );
        assert!(shard(&t, 0, None).is_err(), "the status copy is lossy");
    }
}
