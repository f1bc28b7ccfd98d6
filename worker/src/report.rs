//! The result: read it, and write it as the ConfigMap `<task>-result`,
//! fenced by the Task and Job UIDs in its labels and stamped with the
//! writing pod's name and UID.
//!
//! Every write replaces the whole object (create, else an unconditional
//! update), never merges into it: a ConfigMap of that name that someone
//! else made first, or one left behind, loses every key this worker did not
//! write at the worker's first write, so it can never lend the run a stale
//! `result` or `exitCode`.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crds::names::{self, annotations, labels};
use crds::outputs::OutputReport;
use crds::progress::Report;
use crds::result::{MAX_RESULT_BYTES, Stored, TaskResult};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::PostParams;
use kube::core::Status;
use kube::{Api, Client};

use crate::identity::Identity;
use crate::{chain, say};

const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long transient failures (API server restarting, 5xx, 429, 401/403) are
/// retried before the result is given up: it is the only copy.
const WRITE_DEADLINE: Duration = Duration::from_secs(120);

/// Pause before retry `attempt` (1-based): 1, 2, 4, 8 s, then 10 s.
pub fn retry_delay(attempt: u32) -> Duration {
    Duration::from_secs((1u64 << attempt.saturating_sub(1).min(4)).min(10))
}

/// What failed in reading the result or writing it.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The result is larger than a result may be; nothing of it is kept.
    #[error("the result is {size} bytes, more than the limit of {MAX_RESULT_BYTES} bytes")]
    ResultTooLarge { size: usize },
    #[error("cannot read the result file {}", file.display())]
    ReadResult {
        file: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no API client within {}s", CALL_TIMEOUT.as_secs())]
    ClientTimeout,
    #[error("cannot build the API client")]
    Client(#[source] kube::Error),
    /// The update found no object (create it instead).
    #[error("ConfigMap {name} not found")]
    NotFound { name: String },
    /// The create found one (update it instead).
    #[error("ConfigMap {name} already exists")]
    AlreadyExists { name: String },
    /// Retrying cannot help (e.g. forbidden, invalid).
    #[error("the API server refused ConfigMap {name} ({code})")]
    Refused {
        name: String,
        code: u16,
        #[source]
        source: Box<Status>,
    },
    /// The server or the network failed; a retry may succeed.
    #[error("cannot write ConfigMap {name}")]
    Write {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write ConfigMap {name}: no answer within {}s", CALL_TIMEOUT.as_secs())]
    NoAnswer { name: String },
    /// Creates and updates kept missing each other.
    #[error("cannot write ConfigMap {name}: it keeps appearing and disappearing")]
    Flapping { name: String },
}

/// The raw result: the result file if the program wrote one (any bytes,
/// UTF-8 or not), else the tail of stdout. Its size is its length.
pub fn read_result(file: &Path, stdout_tail: &[u8]) -> Result<Vec<u8>, ReportError> {
    match std::fs::metadata(file) {
        Ok(m) if m.len() > MAX_RESULT_BYTES as u64 => Err(too_large(m.len())),
        Ok(_) => read_at_most_limit(file),
        Err(_) => Ok(text_of_tail(stdout_tail)),
    }
}

/// The result file, read to at most one byte past the limit: it may
/// still grow.
fn read_at_most_limit(file: &Path) -> Result<Vec<u8>, ReportError> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_RESULT_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(|source| ReportError::ReadResult {
            file: file.to_owned(),
            source,
        })?;
    if bytes.len() > MAX_RESULT_BYTES {
        let size = std::fs::metadata(file).map_or(bytes.len() as u64, |m| m.len());
        return Err(too_large(size));
    }
    Ok(bytes)
}

fn too_large(size: u64) -> ReportError {
    ReportError::ResultTooLarge {
        size: usize::try_from(size).unwrap_or(usize::MAX),
    }
}

/// The tail of stdout as text: it may start inside a UTF-8 sequence, so
/// continuation bytes at its start are skipped.
fn text_of_tail(stdout_tail: &[u8]) -> Vec<u8> {
    let start = stdout_tail
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    String::from_utf8_lossy(&stdout_tail[start..])
        .into_owned()
        .into_bytes()
}

/// The ConfigMap holding `stored` (a result and/or progress) for the Task
/// and Job of `id`: the result in `data`, or gzip-compressed in
/// `binaryData` (see `crds::result`).
pub fn config_map(id: &Identity, stored: Stored) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(id.result_name()),
            namespace: Some(id.namespace.clone()),
            labels: Some(labels_of(id)),
            annotations: Some(BTreeMap::from([
                (annotations::WRITER_POD.to_owned(), id.pod_name.clone()),
                (annotations::WRITER_POD_UID.to_owned(), id.pod_uid.clone()),
            ])),
            owner_references: Some(vec![OwnerReference {
                api_version: names::API_VERSION.to_owned(),
                kind: names::KIND.to_owned(),
                name: id.task_name.clone(),
                uid: id.task_uid.clone(),
                controller: None,
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        },
        data: Some(stored.data),
        binary_data: Some(stored.binary_data).filter(|b| !b.is_empty()),
        ..ConfigMap::default()
    }
}

fn labels_of(id: &Identity) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (labels::TASK_UID.to_owned(), id.task_uid.clone()),
        (labels::JOB_UID.to_owned(), id.job_uid.clone()),
    ]);
    if let Some(i) = id.shard {
        l.insert(labels::SHARD.to_owned(), i.to_string());
    }
    l
}

/// A client for the result ConfigMaps of `id`'s namespace.
pub async fn connect(id: &Identity) -> Result<Api<ConfigMap>, ReportError> {
    let client = tokio::time::timeout(CALL_TIMEOUT, Client::try_default())
        .await
        .map_err(|_| ReportError::ClientTimeout)?
        .map_err(ReportError::Client)?;
    Ok(Api::namespaced(client, &id.namespace))
}

/// Writes `cm` once as the whole object: an unconditional update (PUT
/// without a resourceVersion, which ConfigMaps allow), or a create when it
/// does not exist yet. Last writer wins, as for two pods of one Job.
/// `exists` says which to try first: the update when this worker wrote the
/// ConfigMap before (progress), else the create, so that a program without
/// progress costs one write, not a 404 and a create.
pub async fn apply_once(
    api: &Api<ConfigMap>,
    cm: &ConfigMap,
    exists: bool,
) -> Result<(), ReportError> {
    let name = cm.metadata.name.clone().unwrap_or_default();
    let pp = PostParams {
        field_manager: Some(names::WORKER_FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    // Up to two of each: a create can lose to another writer's create, and
    // then the update finds it; an update can find it deleted meanwhile.
    for round in 0..4 {
        let update = (round % 2 == 0) == exists;
        let res = if update {
            bounded(&name, api.replace(&name, &pp, cm)).await
        } else {
            bounded(&name, api.create(&pp, cm)).await
        };
        match res {
            Err(ReportError::NotFound { .. }) if update => {}
            Err(ReportError::AlreadyExists { .. }) if !update => {}
            other => return other,
        }
    }
    Err(ReportError::Flapping { name })
}

/// One call with the timeout, its error sorted by what a retry can do.
async fn bounded(
    name: &str,
    call: impl Future<Output = Result<ConfigMap, kube::Error>>,
) -> Result<(), ReportError> {
    let name = name.to_owned();
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => Err(ReportError::NotFound { name }),
        Ok(Err(kube::Error::Api(s))) if s.code == 409 && s.reason == "AlreadyExists" => {
            Err(ReportError::AlreadyExists { name })
        }
        // 401/403 are transient too: a restarting API server, or a
        // RoleBinding created moments ago, authorizes only once its caches
        // are warm.
        Ok(Err(kube::Error::Api(s))) if s.code < 500 && ![401, 403, 409, 429].contains(&s.code) => {
            Err(ReportError::Refused {
                name,
                code: s.code,
                source: s,
            })
        }
        Ok(Err(source)) => Err(ReportError::Write { name, source }),
        Err(_) => Err(ReportError::NoAnswer { name }),
    }
}

/// Applies the final result (with the latest progress and the outputs'
/// report, if any), retrying
/// all but a refusal for up to [`WRITE_DEADLINE`].
pub async fn write(
    api: Option<Api<ConfigMap>>,
    id: &Identity,
    r: &TaskResult,
    progress: Option<&Report>,
    outputs: Option<&OutputReport>,
) -> Result<(), ReportError> {
    let api = match api {
        Some(a) => a,
        None => connect(id).await?,
    };
    let mut stored = r.to_stored();
    if let Some(p) = progress {
        stored.data.extend(p.to_data());
    }
    if let Some(o) = outputs {
        stored.data.insert(
            crds::result::keys::OUTPUTS.to_owned(),
            crate::outputs::to_json(o),
        );
    }
    let cm = config_map(id, stored);
    let deadline = tokio::time::Instant::now() + WRITE_DEADLINE;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let e = match apply_once(&api, &cm, progress.is_some()).await {
            Ok(()) => return Ok(()),
            Err(e @ ReportError::Refused { .. }) => return Err(e),
            Err(e) => e,
        };
        let pause = retry_delay(attempt);
        if tokio::time::Instant::now() + pause > deadline {
            return Err(e);
        }
        say(&format!("{}; retrying in {pause:?}", chain(&e)));
        tokio::time::sleep(pause).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_to_ten_seconds() {
        let got: Vec<u64> = (1..=7).map(|a| retry_delay(a).as_secs()).collect();
        assert_eq!(got, vec![1, 2, 4, 8, 10, 10, 10]);
    }

    #[test]
    fn result_file_wins_over_stdout() {
        let dir = std::env::temp_dir().join(format!("lt-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("result");
        assert_eq!(read_result(&f, b"tail\n").unwrap(), b"tail\n");
        std::fs::write(&f, b"42\n").unwrap();
        assert_eq!(read_result(&f, b"tail\n").unwrap(), b"42\n");
        // Not UTF-8: kept byte for byte.
        std::fs::write(&f, [0xFF, 0, b'x']).unwrap();
        assert_eq!(read_result(&f, b"").unwrap(), [0xFF, 0, b'x']);
        // Exactly the limit is kept whole.
        std::fs::write(&f, vec![b'x'; MAX_RESULT_BYTES]).unwrap();
        assert_eq!(read_result(&f, b"").unwrap().len(), MAX_RESULT_BYTES);
        std::fs::write(&f, vec![b'x'; MAX_RESULT_BYTES + 1]).unwrap();
        let e = read_result(&f, b"").unwrap_err();
        assert!(
            matches!(e, ReportError::ResultTooLarge { size } if size == MAX_RESULT_BYTES + 1),
            "{e:?}"
        );
        // The operator's message names the size and the limit.
        let (size, limit) = (MAX_RESULT_BYTES + 1, MAX_RESULT_BYTES);
        assert!(
            e.to_string()
                .contains(&format!("{size} bytes, more than the limit of {limit}"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tail_skips_a_cut_character() {
        let missing = Path::new("/nonexistent/longtask/result");
        let tail = [0xA9, b'o', b'k'];
        assert_eq!(read_result(missing, &tail).unwrap(), b"ok");
    }

    fn identity() -> Identity {
        Identity {
            task_name: "t".into(),
            task_uid: "tu".into(),
            namespace: "ns".into(),
            job_uid: "ju".into(),
            pod_name: "p".into(),
            pod_uid: "pu".into(),
            shard: None,
        }
    }

    #[test]
    fn config_map_is_fenced_and_owned() {
        let id = identity();
        let r = TaskResult {
            result: b"1".to_vec(),
            exit_code: 0,
            finished_at: "x".into(),
            message: String::new(),
            result_size: 1,
            log_tail: String::new(),
            omitted: false,
        };
        let cm = config_map(&id, r.to_stored());
        assert_eq!(cm.metadata.name.as_deref(), Some("t-result"));
        let l = cm.metadata.labels.unwrap();
        assert_eq!(
            (l[labels::TASK_UID].as_str(), l[labels::JOB_UID].as_str()),
            ("tu", "ju")
        );
        let a = cm.metadata.annotations.clone().unwrap();
        assert_eq!(
            (
                a[annotations::WRITER_POD].as_str(),
                a[annotations::WRITER_POD_UID].as_str()
            ),
            ("p", "pu")
        );
        let o = &cm.metadata.owner_references.unwrap()[0];
        assert_eq!((o.uid.as_str(), o.controller), ("tu", None));
        assert!(cm.binary_data.is_none());
        assert_eq!(cm.data.unwrap()[crds::result::keys::EXIT_CODE], "0");
    }

    #[test]
    fn a_large_result_goes_to_binary_data() {
        let id = identity();
        let raw = vec![b'x'; MAX_RESULT_BYTES];
        let r = TaskResult {
            result_size: raw.len(),
            result: raw,
            exit_code: 0,
            finished_at: "x".into(),
            message: String::new(),
            log_tail: String::new(),
            omitted: false,
        };
        let cm = config_map(&id, r.to_stored());
        let (data, bin) = (cm.data.unwrap(), cm.binary_data.unwrap());
        assert!(!data.contains_key(crds::result::keys::RESULT));
        let back = TaskResult::from_stored(&data, &bin).unwrap();
        assert_eq!(back, r);
    }
}
