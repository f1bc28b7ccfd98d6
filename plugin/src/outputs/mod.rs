//! A finished Task's output files (issue 35), as `result -o DIR`, `get`,
//! `describe` and the web page see them. The Task's `status.outputs` lists
//! each file with its size and digest; the presigned GET URLs are in the
//! Secret `<task>-outputs`, which is read with the user's own kubeconfig,
//! so the user's right to `get` that Secret decides who may download.
//! `select` decides what goes where (pure), `grant` reads the Secret, and
//! every byte is checked against the size and digest of `status.outputs`.

pub mod checked;
pub mod fetch;
pub mod grant;
pub mod progress;
pub mod select;

use std::path::PathBuf;

use crds::Task;
use crds::outputs::{NameError, OutputFile, OutputsStatus, human_size};

/// Why a Task's outputs cannot be listed, located or downloaded. Each
/// names the Task or the file, and the Secret where one is involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "task {task} is {phase}: its output files can be downloaded once it has finished (kubectl longtask wait {task})"
    )]
    Unfinished { task: String, phase: String },
    #[error("task {task} has no output files (status.outputs lists none)")]
    NoOutputs { task: String },
    #[error("task {task} has no output named {file:?} (it has {known})")]
    NotListed {
        task: String,
        file: String,
        known: String,
    },
    #[error("--file more than once needs -o DIR: only one output can go to standard output")]
    ManyToStdout,
    #[error("status.outputs of task {task} lists {file:?} twice")]
    Duplicate { task: String, file: String },
    #[error(
        "outputs {file:?} and {inside:?} of task {task} cannot both be written: {file:?} would be a file and a directory"
    )]
    FileAndDirectory {
        task: String,
        file: String,
        inside: String,
    },
    #[error("refusing output {file:?}: {source}")]
    BadName {
        file: String,
        #[source]
        source: NameError,
    },
    #[error("refusing to write output {file:?} to {}: it resolves outside {}", dest.display(), root.display())]
    Outside {
        file: String,
        dest: PathBuf,
        root: PathBuf,
    },
    #[error(
        "the download Secret {namespace}/{secret} does not exist: the operator writes it once task {task} has finished; if the Task finished a while ago, the operator may be down"
    )]
    SecretMissing {
        task: String,
        namespace: String,
        secret: String,
    },
    #[error(
        "forbidden: you may not get the Secret {namespace}/{secret}, which holds the download links of task {task}'s outputs; ask for `get` on secrets/{secret} in namespace {namespace} ({message})"
    )]
    SecretForbidden {
        task: String,
        namespace: String,
        secret: String,
        message: String,
    },
    #[error("cannot get the Secret {namespace}/{secret}: {source}")]
    SecretRead {
        namespace: String,
        secret: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "the Secret {namespace}/{secret} holds no {key} yet: the operator writes the download links there once task {task} has finished"
    )]
    GrantMissing {
        task: String,
        namespace: String,
        secret: String,
        key: &'static str,
    },
    #[error("{key} in the Secret {namespace}/{secret} is not a download grant: {source}")]
    GrantInvalid {
        namespace: String,
        secret: String,
        key: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "the download links in the Secret {namespace}/{secret} expired at {expires}: the operator renews them before they expire, so it is down or cannot renew them; try again once it runs"
    )]
    GrantExpired {
        namespace: String,
        secret: String,
        expires: String,
    },
    #[error("the Secret {namespace}/{secret} has no download link for output {file:?}")]
    NoLink {
        namespace: String,
        secret: String,
        file: String,
    },
    #[error(
        "the download link of output {file:?} in the Secret {namespace}/{secret} is not an http(s) URL"
    )]
    BadLink {
        namespace: String,
        secret: String,
        file: String,
    },
    #[error("status.outputs lists output {file:?} with digest {digest:?}, not sha256:<hex>")]
    BadDigest { file: String, digest: String },
    #[error(
        "output {file:?} is not what the Task uploaded: the store sent {actual} bytes, but status.outputs lists {expected}"
    )]
    SizeMismatch {
        file: String,
        expected: u64,
        actual: String,
    },
    #[error(
        "output {file:?} is not what the Task uploaded: its sha256 is {actual}, but status.outputs lists {expected}"
    )]
    DigestMismatch {
        file: String,
        expected: String,
        actual: String,
    },
    #[error("the download of output {file:?} broke off: {source}")]
    Transfer {
        file: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("cannot make the HTTP client for the output store: {0}")]
    HttpClient(#[source] reqwest::Error),
    #[error("cannot get output {file:?} from the output store: {source}")]
    Fetch {
        file: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the output store refused output {file:?}: HTTP {status}: {why}")]
    StoreRefused {
        file: String,
        status: u16,
        why: String,
    },
    #[error("cannot download output {file:?} to {}: {source}", dest.display())]
    Download {
        file: String,
        dest: PathBuf,
        #[source]
        source: Box<longtask_store::DownloadError>,
    },
    #[error("{} is not a directory: task {task} has output files, so -o names the directory they go into", path.display())]
    NotADirectory { task: String, path: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// A short word for what went wrong, for the web page's answers: the
    /// user's right (`forbidden`), something absent (`missing`), or the
    /// state of the Task or the store (`conflict`).
    pub fn kind(&self) -> Kind {
        match self {
            Error::SecretForbidden { .. } => Kind::Forbidden,
            Error::NotListed { .. } | Error::NoOutputs { .. } => Kind::Missing,
            Error::SecretRead { .. } | Error::Write { .. } => Kind::Failed,
            _ => Kind::Conflict,
        }
    }
}

/// What an [`Error`] is, to a caller that answers HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Forbidden,
    Missing,
    Conflict,
    Failed,
}

/// The Task's name.
pub fn task_name(task: &Task) -> String {
    task.metadata.name.clone().unwrap_or_default()
}

/// `status.outputs`, when the Task has one.
pub fn status(task: &Task) -> Option<&OutputsStatus> {
    task.status.as_ref().and_then(|s| s.outputs.as_ref())
}

/// The files `status.outputs` lists (none when it is absent).
pub fn files(task: &Task) -> &[OutputFile] {
    status(task).map_or(&[], |o| o.files.as_slice())
}

/// "3 files, 2.0Gi" (`get`'s OUTPUTS column, the page's); empty without
/// `status.outputs`.
pub fn summary(o: Option<&OutputsStatus>) -> String {
    let Some(o) = o else {
        return String::new();
    };
    let size = match o.size.is_empty() {
        true => human_size(u64::try_from(o.total_bytes).unwrap_or_default()),
        false => o.size.clone(),
    };
    match o.count {
        1 => format!("1 file, {size}"),
        n => format!("{n} files, {size}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_count_and_size() {
        assert_eq!(summary(None), "");
        let mut o = OutputsStatus {
            count: 3,
            total_bytes: 2 * 1024 * 1024 * 1024,
            size: "2.0Gi".into(),
            ..OutputsStatus::default()
        };
        assert_eq!(summary(Some(&o)), "3 files, 2.0Gi");
        o.count = 1;
        o.size = String::new();
        o.total_bytes = 1536;
        assert_eq!(
            summary(Some(&o)),
            "1 file, 1.5Ki",
            "size computed when absent"
        );
        o.count = 0;
        o.total_bytes = 0;
        assert_eq!(summary(Some(&o)), "0 files, 0");
    }
}
