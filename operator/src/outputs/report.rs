//! Pure: the worker's report of its uploads (`outputs` in the result
//! ConfigMap) → `status.outputs`, or why the Task failed. The worker is
//! never trusted: every name must be a plain relative path, every key the
//! Task's own prefix followed by that name, every digest a sha256, or the
//! whole report is refused (`OutputUploadFailed`) and nothing of it is
//! shown as the Task's outputs.

use std::collections::BTreeSet;

use crds::conditions::Reason;
use crds::outputs::{
    MAX_FILES, MAX_OBJECT_BYTES, OutputFile, OutputReport, OutputsStatus, check_name, human_size,
    shard_prefix,
};
use crds::result::{MAX_MESSAGE_BYTES, truncate_utf8};

/// Most bytes the listed files take in the status (names, digests, URLs):
/// `count` and `totalBytes` cover every file, `files` the first ones (by
/// name) that fit, and the download Secret names them all.
pub const MAX_STATUS_FILES_BYTES: usize = 256 * 1024;

/// Where a Task's objects are: what was fixed when its Job was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The `OutputStore`'s name.
    pub store: String,
    /// The bucket.
    pub bucket: String,
    /// The Task's key prefix (`object_prefix`).
    pub prefix: String,
}

impl Target {
    /// `s3://<bucket>/<key>`.
    pub fn url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// `s3://<bucket>/<prefix>`: `status.outputs.location`.
    pub fn location(&self) -> String {
        self.url(&self.prefix)
    }

    /// The target of store `store` whose location is `location` (as
    /// [`Target::location`] writes it); `None` for anything else.
    pub fn parse(store: &str, location: &str) -> Option<Target> {
        let (bucket, prefix) = location.strip_prefix("s3://")?.split_once('/')?;
        (!bucket.is_empty() && !prefix.is_empty()).then(|| Target {
            store: store.to_owned(),
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
        })
    }
}

/// What the reports say.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every file uploaded and checked: the status lists them.
    Listed(Listing),
    /// Uploading failed, or a report is refused: the Task fails so.
    Failed(Reason, String),
}

/// The files of a Task's reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Listing {
    /// What `status.outputs` shows (`downloadSecret` not set).
    pub status: OutputsStatus,
    /// Every file's name below the Task's prefix (its key is the prefix
    /// and the name), the ones the status leaves out too.
    pub names: Vec<String>,
}

/// One report as the result ConfigMap holds it, with the shard that wrote
/// it (`None` for a Task without shards).
pub struct Raw<'a> {
    pub shard: Option<u32>,
    pub json: &'a str,
}

/// The outcome of the reports `raws` for a Task whose objects go to
/// `target` (`None`: the Task has no store); `None` when there is no
/// report (the Task has no store, or no worker reached the end).
pub fn read(raws: &[Raw<'_>], target: Option<&Target>) -> Option<Outcome> {
    if raws.is_empty() {
        return None;
    }
    let Some(target) = target else {
        return Some(refused(
            "the worker reported outputs, but the Task has no output store".to_owned(),
        ));
    };
    let mut files = Vec::new();
    for raw in raws {
        let report: OutputReport = match serde_json::from_str(raw.json) {
            Ok(r) => r,
            Err(e) => return Some(refused(format!("the worker's report is not valid: {e}"))),
        };
        if let Some(err) = report.error {
            return Some(failed(&err.reason, &err.message, raw.shard));
        }
        match checked(report, raw.shard, target) {
            Ok(mut f) => files.append(&mut f),
            Err(why) => return Some(refused(why)),
        }
    }
    Some(listed(files, target))
}

/// The worker's own failure: its reason when it is one of the `Output*`
/// reasons (else OutputUploadFailed), its message.
fn failed(reason: &str, message: &str, shard: Option<u32>) -> Outcome {
    let reason = match reason.parse::<Reason>() {
        Ok(r) if r.as_str().starts_with("Output") && r != Reason::OutputStoreUnavailable => r,
        _ => Reason::OutputUploadFailed,
    };
    let whose = shard.map_or(String::new(), |i| format!("shard {i}: "));
    let message = format!("uploading the outputs failed: {whose}{message}");
    Outcome::Failed(
        reason,
        truncate_utf8(&message, MAX_MESSAGE_BYTES).to_owned(),
    )
}

fn refused(why: String) -> Outcome {
    let message = format!("the outputs report was refused: {why}");
    Outcome::Failed(
        Reason::OutputUploadFailed,
        truncate_utf8(&message, MAX_MESSAGE_BYTES).to_owned(),
    )
}

/// The files of one report, each checked; their names are relative to
/// the Task's prefix (`shard-<i>/<name>` for a shard's). `Err` says which
/// file is refused and why.
fn checked(
    report: OutputReport,
    shard: Option<u32>,
    target: &Target,
) -> Result<Vec<(String, crds::outputs::UploadedFile)>, String> {
    let own = shard_prefix(&target.prefix, shard);
    let mut out = Vec::with_capacity(report.files.len());
    for f in report.files {
        let quoted = format!("{:?}", truncate_utf8(&f.name, 128));
        check_name(&f.name).map_err(|e| format!("output {quoted}: {e}"))?;
        if f.key != format!("{own}{}", f.name) {
            return Err(format!(
                "output {quoted} names the key {:?}, not {own}<name> (outside the Task's prefix)",
                truncate_utf8(&f.key, 256)
            ));
        }
        if f.sha256.len() != 64
            || !f
                .sha256
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(format!("output {quoted} has no valid sha256"));
        }
        if f.size > MAX_OBJECT_BYTES as u64 {
            return Err(format!(
                "output {quoted} is {} bytes, more than an object may be",
                f.size
            ));
        }
        let name = match shard {
            Some(_) => f.key[target.prefix.len()..].to_owned(),
            None => f.name.clone(),
        };
        out.push((name, f));
    }
    Ok(out)
}

/// The status of the checked `files` (sorted by name, each once).
fn listed(mut files: Vec<(String, crds::outputs::UploadedFile)>, target: &Target) -> Outcome {
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let names: BTreeSet<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    if names.len() != files.len() {
        return refused("an output is listed twice".to_owned());
    }
    if files.len() > MAX_FILES as usize {
        return refused(format!("{} outputs, more than {MAX_FILES}", files.len()));
    }
    let total: u64 = files.iter().map(|(_, f)| f.size).sum();
    let mut budget = MAX_STATUS_FILES_BYTES;
    let mut shown = Vec::new();
    for (name, f) in &files {
        let entry = OutputFile {
            name: name.clone(),
            size: i64::try_from(f.size).unwrap_or(i64::MAX),
            digest: format!("sha256:{}", f.sha256),
            url: target.url(&f.key),
        };
        let cost = entry.name.len() + entry.digest.len() + entry.url.len() + 48;
        if cost > budget {
            break;
        }
        budget -= cost;
        shown.push(entry);
    }
    let status = OutputsStatus {
        store: target.store.clone(),
        location: target.location(),
        count: i32::try_from(files.len()).unwrap_or(i32::MAX),
        total_bytes: i64::try_from(total).unwrap_or(i64::MAX),
        size: human_size(total),
        files: shown,
        download_secret: None,
    };
    let names = files.into_iter().map(|(n, _)| n).collect();
    Outcome::Listed(Listing { status, names })
}
