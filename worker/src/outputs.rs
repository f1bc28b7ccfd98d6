//! Results by reference, the worker's part. With `$LONGTASK_UPLOAD_GRANT`
//! set (the operator's signed POST policy for this Task's key prefix), the
//! program gets `$LONGTASK_OUTPUTS`, a directory in the run's private
//! directory; when the program ends, every file in it is uploaded, a few
//! at a time, to `<grant prefix>[shard-<i>/]<name>`, and a result too
//! large to keep inline is uploaded as `.longtask/result`. What was
//! uploaded (or why not) goes into the result ConfigMap as an
//! [`OutputReport`].
//!
//! Nothing here stops the run: a grant that cannot be read still gives the
//! program its directory, and the report says what failed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crds::Reason;
use crds::names::env;
use crds::outputs::{
    OUTPUTS_SUBDIR, OutputError, OutputReport, RESULT_OUTPUT, UploadGrant, UploadedFile,
    shard_prefix,
};
use futures::StreamExt as _;
use longtask_store::{UploadError, UploadOptions, upload_file};

use crate::walk::{Found, WalkError, walk};
use crate::{chain, say};

/// Files uploaded at once: enough to make 1,000 small files quick, few
/// enough to keep memory bounded (each holds one chunk in flight).
const CONCURRENCY: usize = 8;
/// Connect timeout of the upload client (each attempt is bounded by
/// `UploadOptions`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most bytes the report may take in the result ConfigMap (1 MiB in all):
/// what is left beside it goes to the inline result, the message, the log
/// tail and progress.
pub const MAX_REPORT_BYTES: usize = 768 * 1024;
/// Room kept for the message, log tail and progress keys.
const OTHER_KEYS_BYTES: usize = 64 * 1024;

/// What went wrong with outputs.
#[derive(Debug, thiserror::Error)]
pub enum OutputsError {
    #[error("${} is not a valid upload grant", env::UPLOAD_GRANT)]
    Grant(#[source] serde_json::Error),
    #[error("no writable directory for ${}", env::OUTPUTS)]
    NoDirectory,
    #[error("cannot create the outputs directory {}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the outputs cannot be uploaded")]
    Walk(#[source] WalkError),
    #[error("{count} output files are more than the {max} the store allows")]
    TooMany { count: usize, max: u32 },
    #[error(
        "the list of {count} outputs would take {bytes} bytes, more than the {MAX_REPORT_BYTES} the result ConfigMap keeps for it (shorter or fewer names)"
    )]
    ReportTooLarge { count: usize, bytes: usize },
    #[error("cannot make the HTTP client for uploads")]
    Http(#[source] reqwest::Error),
    #[error("uploading output {name} failed")]
    Upload {
        name: String,
        #[source]
        source: UploadError,
    },
}

impl OutputsError {
    /// The `Output*` reason of this failure.
    pub fn reason(&self) -> Reason {
        match self {
            OutputsError::Grant(_)
            | OutputsError::NoDirectory
            | OutputsError::CreateDir { .. }
            | OutputsError::Http(_) => Reason::OutputUploadFailed,
            OutputsError::Walk(e) => e.reason(),
            OutputsError::TooMany { .. } | OutputsError::ReportTooLarge { .. } => {
                Reason::OutputQuotaExceeded
            }
            OutputsError::Upload { source, .. } => source.reason(),
        }
    }

    /// As the report carries it.
    fn to_report(&self) -> OutputError {
        OutputError {
            reason: self.reason().as_str().to_owned(),
            message: chain(self),
        }
    }
}

/// Outputs of this run, decided before the program starts.
pub struct Plan {
    /// `$LONGTASK_OUTPUTS`, when it could be made.
    pub dir: Option<PathBuf>,
    /// The grant, or why there is none to use.
    grant: Result<UploadGrant, OutputError>,
    /// Where this shard's objects go.
    key_prefix: String,
}

/// The plan when `$LONGTASK_UPLOAD_GRANT` is set; the outputs directory is
/// made in `run_dir` (the run's private directory).
pub fn plan(
    vars: &HashMap<String, String>,
    run_dir: Option<&Path>,
    shard: Option<u32>,
) -> Option<Plan> {
    let raw = vars.get(env::UPLOAD_GRANT).filter(|v| !v.is_empty())?;
    let grant: Result<UploadGrant, OutputsError> =
        serde_json::from_str(raw).map_err(OutputsError::Grant);
    let key_prefix = grant
        .as_ref()
        .map(|g| shard_prefix(&g.key_prefix, shard))
        .unwrap_or_default();
    let (dir, grant) = match run_dir.map(|d| d.join(OUTPUTS_SUBDIR)) {
        None => (None, grant.and(Err(OutputsError::NoDirectory))),
        Some(dir) => match std::fs::create_dir_all(&dir) {
            Ok(()) => (Some(dir), grant),
            Err(source) => (
                None,
                grant.and(Err(OutputsError::CreateDir { dir, source })),
            ),
        },
    };
    let grant = grant.map_err(|e| {
        say(&format!("outputs will not be uploaded: {}", chain(&e)));
        e.to_report()
    });
    Some(Plan {
        dir,
        grant,
        key_prefix,
    })
}

impl Plan {
    /// `$LONGTASK_OUTPUTS` for the program.
    pub fn env(&self) -> Option<(String, String)> {
        let dir = self.dir.as_ref()?;
        Some((env::OUTPUTS.to_owned(), dir.to_string_lossy().into_owned()))
    }

    /// Whether a result of `size` bytes should go to the store rather than
    /// inline: over the inline limit, or too large to sit beside the report.
    pub fn takes_result(&self, size: usize, found: &[Found]) -> bool {
        let Ok(grant) = &self.grant else { return false };
        let report = report_bound(&grant.bucket_url, &self.key_prefix, found);
        size > crds::result::MAX_PLAIN_RESULT_BYTES.saturating_sub(report + OTHER_KEYS_BYTES)
    }

    /// The files to upload, or why there are none to upload.
    pub fn walk(&self) -> Result<Vec<Found>, OutputError> {
        let grant = self.grant.as_ref().map_err(Clone::clone)?;
        match &self.dir {
            Some(dir) => walk(dir, grant.max_files).map_err(|e| OutputsError::Walk(e).to_report()),
            None => Ok(Vec::new()),
        }
    }

    /// Uploads `found` (and `result`, the result file, as
    /// `.longtask/result`) and reports it, files in name order.
    pub async fn upload(&self, mut found: Vec<Found>, result: Option<&Path>) -> OutputReport {
        let grant = match &self.grant {
            Ok(g) => g,
            Err(e) => return failed(Vec::new(), e.clone()),
        };
        if let Some(path) = result {
            found.push(Found {
                name: RESULT_OUTPUT.to_owned(),
                path: path.to_owned(),
            });
        }
        if found.len() > grant.max_files as usize {
            let e = OutputsError::TooMany {
                count: found.len(),
                max: grant.max_files,
            };
            return failed(Vec::new(), e.to_report());
        }
        let bytes = report_bound(&grant.bucket_url, &self.key_prefix, &found);
        if bytes > MAX_REPORT_BYTES {
            let e = OutputsError::ReportTooLarge {
                count: found.len(),
                bytes,
            };
            return failed(Vec::new(), e.to_report());
        }
        let started = Instant::now();
        let (mut files, error) = self.upload_all(grant, found).await;
        files.sort_by(|a, b| a.name.cmp(&b.name));
        summary(&files, started.elapsed(), error.as_ref());
        match error {
            Some(e) => failed(files, e.to_report()),
            None => OutputReport { files, error: None },
        }
    }

    /// Uploads every file, [`CONCURRENCY`] at a time; the first failure
    /// stops the rest.
    async fn upload_all(
        &self,
        grant: &UploadGrant,
        found: Vec<Found>,
    ) -> (Vec<UploadedFile>, Option<OutputsError>) {
        let http = match longtask_store::upload_client(CONNECT_TIMEOUT) {
            Ok(h) => h,
            Err(e) => return (Vec::new(), Some(OutputsError::Http(e))),
        };
        let opts = UploadOptions::default();
        let mut uploads = futures::stream::iter(found)
            .map(|f| {
                let (http, opts) = (&http, &opts);
                let key = format!("{}{}", self.key_prefix, f.name);
                async move {
                    match upload_file(http, grant, &key, &f.path, opts).await {
                        Ok(up) => Ok(UploadedFile {
                            name: f.name,
                            key,
                            size: up.size,
                            sha256: up.sha256,
                        }),
                        Err(source) => Err(OutputsError::Upload {
                            name: f.name,
                            source,
                        }),
                    }
                }
            })
            .buffer_unordered(CONCURRENCY);
        let mut files = Vec::new();
        while let Some(done) = uploads.next().await {
            match done {
                Ok(file) => files.push(file),
                Err(e) => return (files, Some(e)),
            }
        }
        (files, None)
    }
}

/// A report of `files` that failed with `error`: the files are listed but
/// not presented as the Task's outputs.
fn failed(files: Vec<UploadedFile>, error: OutputError) -> OutputReport {
    OutputReport {
        files,
        error: Some(error),
    }
}

/// The most bytes the report of `found` can take as JSON (every size and
/// digest at its longest).
fn report_bound(_bucket_url: &str, key_prefix: &str, found: &[Found]) -> usize {
    let files: Vec<UploadedFile> = found
        .iter()
        .map(|f| UploadedFile {
            name: f.name.clone(),
            key: format!("{key_prefix}{}", f.name),
            size: u64::MAX,
            sha256: "0".repeat(64),
        })
        .collect();
    let report = OutputReport { files, error: None };
    serde_json::to_string(&report).map_or(usize::MAX, |s| s.len())
}

/// The report as the ConfigMap's value.
pub fn to_json(report: &OutputReport) -> String {
    // Serializing plain strings and numbers cannot fail.
    serde_json::to_string(report).unwrap_or_default()
}

/// One line on stderr: files, bytes, time, throughput, peak memory.
fn summary(files: &[UploadedFile], took: Duration, error: Option<&OutputsError>) {
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    let secs = took.as_secs_f64();
    let rate = if secs > 0.0 {
        bytes as f64 / secs / 1e6
    } else {
        0.0
    };
    let peak = peak_rss_kib().map_or_else(
        || "unknown".to_owned(),
        |k| format!("{:.1} MiB", k as f64 / 1024.0),
    );
    let outcome = error.map_or_else(
        || "uploaded".to_owned(),
        |e| format!("FAILED ({})", chain(e)),
    );
    say(&format!(
        "outputs {outcome}: {} files, {bytes} bytes in {secs:.1} s ({rate:.1} MB/s), peak RSS {peak}",
        files.len()
    ));
}

/// This process's peak resident set (VmHWM), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant_json(max_files: u32) -> String {
        serde_json::to_string(&UploadGrant {
            url: "http://127.0.0.1:1/b".into(),
            bucket_url: "s3://b/".into(),
            key_prefix: "lt/ns/t/uid/".into(),
            fields: Default::default(),
            expires: "2030-01-01T00:00:00Z".into(),
            max_file_bytes: 100,
            max_files,
        })
        .unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lt-outputs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn no_grant_no_plan_and_a_bad_grant_still_gives_the_directory() {
        assert!(plan(&HashMap::new(), None, None).is_none());
        let run = scratch("bad");
        let vars = HashMap::from([(env::UPLOAD_GRANT.to_owned(), "{not json".to_owned())]);
        let p = plan(&vars, Some(&run), None).unwrap();
        assert_eq!(p.dir.as_deref(), Some(run.join("outputs").as_path()));
        assert!(run.join("outputs").is_dir());
        let e = p.walk().unwrap_err();
        assert_eq!(e.reason, Reason::OutputUploadFailed.as_str());
        assert!(
            e.message
                .contains("LONGTASK_UPLOAD_GRANT is not a valid upload grant"),
            "{}",
            e.message
        );
        std::fs::remove_dir_all(&run).unwrap();
    }

    #[tokio::test]
    async fn shards_get_their_own_prefix_and_limits_hold_before_any_upload() {
        let run = scratch("shard");
        let vars = HashMap::from([(env::UPLOAD_GRANT.to_owned(), grant_json(2))]);
        let p = plan(&vars, Some(&run), Some(3)).unwrap();
        assert_eq!(p.key_prefix, "lt/ns/t/uid/shard-3/");
        let out = p.dir.clone().unwrap();
        for f in ["a", "b"] {
            std::fs::write(out.join(f), f).unwrap();
        }
        let found = p.walk().unwrap();
        // Two files and the result are three, over the grant's two: refused
        // before anything is sent (the grant's URL is unreachable anyway).
        let report = p.upload(found, Some(&out.join("a"))).await;
        assert!(report.files.is_empty());
        let e = report.error.unwrap();
        assert_eq!(
            e.reason,
            Reason::OutputQuotaExceeded.as_str(),
            "{}",
            e.message
        );
        std::fs::remove_dir_all(&run).unwrap();
    }

    #[test]
    fn two_thousand_entries_fit_the_config_map() {
        let found: Vec<Found> = (0..2000)
            .map(|i| Found {
                name: format!("plots/epoch-{i:04}/figure-{i:04}.png"),
                path: PathBuf::new(),
            })
            .collect();
        let prefix = format!(
            "longtask/{}/{}/{}/",
            "n".repeat(63),
            "t".repeat(63),
            "u".repeat(36)
        );
        let bytes = report_bound("s3://b/", &prefix, &found);
        // 726,011 bytes with the longest namespace and Task names: the
        // key repeats the prefix in every entry.
        assert!(bytes < MAX_REPORT_BYTES && bytes > 700_000, "{bytes}");
        let vars = HashMap::from([(env::UPLOAD_GRANT.to_owned(), grant_json(2000))]);
        let run = scratch("fit");
        let p = plan(&vars, Some(&run), None).unwrap();
        // Beside such a list the inline result is smaller, and a larger one
        // goes to the store.
        assert!(p.takes_result(600 * 1024, &found));
        assert!(!p.takes_result(100 * 1024, &found));
        assert!(!p.takes_result(800 * 1024, &[]));
        assert!(p.takes_result(crds::result::MAX_RESULT_BYTES + 1, &[]));
        std::fs::remove_dir_all(&run).unwrap();
    }

    #[test]
    fn peak_rss_is_read() {
        assert!(peak_rss_kib().unwrap() > 0);
    }
}
