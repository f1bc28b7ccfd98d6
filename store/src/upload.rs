//! The worker's side: one file, streamed from disk, as a browser-form POST
//! under an [`UploadGrant`].
//!
//! Two passes over the file. The first computes its size and sha256: the
//! digest is a form field (`x-amz-meta-sha256`) and form fields must come
//! before the file. The second streams the form body from disk in chunks of
//! [`UploadOptions::chunk_bytes`], computing the digest again; if the file
//! grew, shrank or changed, the body fails before its last byte, so the
//! store never creates the object, and the upload fails `OutputChanged`.
//! Memory stays bounded by the chunk size and the HTTP client's buffers,
//! whatever the file's size.
//!
//! One POST carries one whole object (at most 5 GiB, S3's limit): a POST
//! policy cannot authorize multipart-upload parts, so a failed attempt is
//! sent again whole.

use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use crds::Reason;
use crds::outputs::{SHA256_META, UploadGrant};
use ring::digest;
use tokio::io::AsyncReadExt as _;

use crate::hex;
use crate::http::{self, RequestError};

/// How an upload sends, waits and tries again.
#[derive(Clone, Debug)]
pub struct UploadOptions {
    /// Tries in all, for failures worth another try (the store unreachable,
    /// timing out, 5xx, 429, SlowDown). Refusals fail at once.
    pub attempts: u32,
    /// Wait before the second try; doubled before each next one.
    pub first_backoff: Duration,
    /// Longest wait between two tries.
    pub max_backoff: Duration,
    /// Bytes read from disk and sent at a time.
    pub chunk_bytes: usize,
    /// Time one attempt may take beyond what sending the file at
    /// `min_bytes_per_sec` needs.
    pub request_timeout: Duration,
    /// Slowest rate an attempt is allowed before it times out.
    pub min_bytes_per_sec: u64,
}

impl Default for UploadOptions {
    /// 5 tries waiting 2, 4, 8 and 16 s between them (30 s of waits, about
    /// a minute with connection timeouts), 256 KiB chunks, 30 s per attempt
    /// plus the time of the file at 1 MiB/s.
    fn default() -> Self {
        UploadOptions {
            attempts: 5,
            first_backoff: Duration::from_secs(2),
            max_backoff: Duration::from_secs(16),
            chunk_bytes: 256 * 1024,
            request_timeout: Duration::from_secs(30),
            min_bytes_per_sec: 1024 * 1024,
        }
    }
}

/// A file uploaded and verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uploaded {
    pub size: u64,
    /// Lower-case hex sha256 of the bytes sent.
    pub sha256: String,
}

/// How a file changed while it was uploaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Its size differs between the two passes.
    Size { hashed: u64, sent: u64 },
    /// It has more bytes than were hashed.
    Grew { hashed: u64 },
    /// Same size, other bytes.
    Digest,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Size { hashed, sent } => {
                write!(f, "it was {hashed} bytes when hashed and {sent} when sent")
            }
            Change::Grew { hashed } => write!(f, "it grew past the {hashed} bytes hashed"),
            Change::Digest => write!(f, "its bytes changed between hashing and sending"),
        }
    }
}

/// What uploading one file failed at.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("opening {path} failed")]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("reading {path} failed")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is {size} bytes, more than the {max} bytes one output may be")]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    #[error("{path} changed while it was uploaded: {change}")]
    Changed { path: PathBuf, change: Change },
    #[error("uploading {path} as {key} failed after {attempts} attempt(s)")]
    Store {
        path: PathBuf,
        key: String,
        attempts: u32,
        #[source]
        source: RequestError,
    },
}

impl UploadError {
    /// The reason a Task fails with when this error ends its upload.
    pub fn reason(&self) -> Reason {
        match self {
            UploadError::Open { source, .. } | UploadError::Read { source, .. }
                if source.kind() == io::ErrorKind::NotFound =>
            {
                Reason::OutputChanged
            }
            UploadError::Open { .. } | UploadError::Read { .. } => Reason::OutputUploadFailed,
            UploadError::TooLarge { .. } => Reason::OutputQuotaExceeded,
            UploadError::Changed { .. } => Reason::OutputChanged,
            UploadError::Store { source, .. } => source.reason(),
        }
    }
}

/// Uploads the file at `path` as object `key` with `grant`: hashed first,
/// then streamed, tried again on passing failures. A file over
/// `grant.max_file_bytes` is refused before anything is sent. Give it a
/// client without a read timeout ([`crate::upload_client`]): reqwest's
/// would bound the whole upload; each attempt here is bounded by
/// `request_timeout` plus the file's time at `min_bytes_per_sec`.
pub async fn upload_file(
    http: &reqwest::Client,
    grant: &UploadGrant,
    key: &str,
    path: &Path,
    opts: &UploadOptions,
) -> Result<Uploaded, UploadError> {
    let hashed = hash_file(path, opts.chunk_bytes.max(1)).await?;
    if hashed.size > grant.max_file_bytes {
        return Err(UploadError::TooLarge {
            path: path.to_path_buf(),
            size: hashed.size,
            max: grant.max_file_bytes,
        });
    }
    let mut backoff = opts.first_backoff;
    let mut attempt = 1;
    loop {
        match post(http, grant, key, path, &hashed, opts).await {
            Ok(()) => return Ok(hashed),
            Err(Attempt::Fatal(e)) => return Err(e),
            Err(Attempt::Store(e)) if e.is_transient() && attempt < opts.attempts => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(opts.max_backoff);
                attempt += 1;
            }
            Err(Attempt::Store(source)) => {
                return Err(UploadError::Store {
                    path: path.to_path_buf(),
                    key: key.to_string(),
                    attempts: attempt,
                    source,
                });
            }
        }
    }
}

/// Size and sha256 of the file, read in `chunk` bytes at a time (on the
/// blocking pool: one thread, one buffer).
async fn hash_file(path: &Path, chunk: usize) -> Result<Uploaded, UploadError> {
    let owned = path.to_path_buf();
    let joined = tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(&owned).map_err(|source| UploadError::Open {
            path: owned.clone(),
            source,
        })?;
        let mut ctx = digest::Context::new(&digest::SHA256);
        let mut buf = vec![0u8; chunk];
        let mut size = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(|source| UploadError::Read {
                path: owned.clone(),
                source,
            })?;
            if n == 0 {
                break;
            }
            ctx.update(&buf[..n]);
            size += n as u64;
        }
        Ok(Uploaded {
            size,
            sha256: hex::encode(ctx.finish().as_ref()),
        })
    })
    .await;
    joined.map_err(|e| UploadError::Read {
        path: path.to_path_buf(),
        source: io::Error::other(e),
    })?
}

/// How one attempt failed.
enum Attempt {
    /// Not worth another try (the file changed, cannot be read).
    Fatal(UploadError),
    /// The store refused or could not be reached: maybe worth another try.
    Store(RequestError),
}

/// One POST of the form with the file streamed as its last part.
async fn post(
    http: &reqwest::Client,
    grant: &UploadGrant,
    key: &str,
    path: &Path,
    hashed: &Uploaded,
    opts: &UploadOptions,
) -> Result<(), Attempt> {
    let fatal = |e| Attempt::Fatal(e);
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|source| fatal(open_error(path, source)))?;
    let len = file
        .metadata()
        .await
        .map_err(|source| fatal(read_error(path, source)))?
        .len();
    if len != hashed.size {
        return Err(fatal(changed(
            path,
            Change::Size {
                hashed: hashed.size,
                sent: len,
            },
        )));
    }
    let failure: Arc<Mutex<Option<UploadError>>> = Arc::default();
    let body = file_stream(file, path, hashed, opts.chunk_bytes.max(1), failure.clone());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_string());
    let part = reqwest::multipart::Part::stream_with_length(reqwest::Body::wrap_stream(body), len)
        .file_name(name);
    let mut form = reqwest::multipart::Form::new();
    for (field, value) in &grant.fields {
        form = form.text(field.clone(), value.clone());
    }
    let form = form
        .text("key", key.to_string())
        .text(SHA256_META, hashed.sha256.clone())
        .part("file", part);
    let allowed = opts.request_timeout
        + Duration::from_secs_f64(len as f64 / opts.min_bytes_per_sec.max(1) as f64);
    let sent = http::send(http.post(&grant.url).multipart(form), allowed).await;
    // The body's own failure (the file changed) comes before the store's.
    if let Some(e) = failure.lock().ok().and_then(|mut slot| slot.take()) {
        return Err(fatal(e));
    }
    http::check(sent.map_err(Attempt::Store)?)
        .await
        .map(drop)
        .map_err(Attempt::Store)
}

fn open_error(path: &Path, source: io::Error) -> UploadError {
    UploadError::Open {
        path: path.to_path_buf(),
        source,
    }
}

fn read_error(path: &Path, source: io::Error) -> UploadError {
    UploadError::Read {
        path: path.to_path_buf(),
        source,
    }
}

fn changed(path: &Path, change: Change) -> UploadError {
    UploadError::Changed {
        path: path.to_path_buf(),
        change,
    }
}

/// The sending pass's state.
struct Sending {
    file: tokio::fs::File,
    path: PathBuf,
    ctx: digest::Context,
    remaining: u64,
    chunk: usize,
    hashed: Uploaded,
    /// The last chunk was checked and let go.
    done: bool,
    failure: Arc<Mutex<Option<UploadError>>>,
}

/// The file's bytes, `chunk` at a time, digest checked before the last
/// chunk is let go. A failure is kept in `failure` (the HTTP client only
/// sees that the body broke off).
fn file_stream(
    file: tokio::fs::File,
    path: &Path,
    hashed: &Uploaded,
    chunk: usize,
    failure: Arc<Mutex<Option<UploadError>>>,
) -> impl futures::Stream<Item = Result<Bytes, io::Error>> + Send + 'static {
    let state = Sending {
        file,
        path: path.to_path_buf(),
        ctx: digest::Context::new(&digest::SHA256),
        remaining: hashed.size,
        chunk,
        hashed: hashed.clone(),
        done: false,
        failure,
    };
    futures::stream::try_unfold(state, |mut s| async move {
        if s.done {
            return Ok(None);
        }
        match next_chunk(&mut s).await {
            Ok(bytes) => Ok(bytes.map(|b| (b, s))),
            Err(e) => {
                let message = e.to_string();
                if let Ok(mut slot) = s.failure.lock() {
                    *slot = Some(e);
                }
                Err(io::Error::other(message))
            }
        }
    })
}

/// The next chunk; `None` for an empty file, once checked.
async fn next_chunk(s: &mut Sending) -> Result<Option<Bytes>, UploadError> {
    let want = usize::try_from(s.remaining).map_or(s.chunk, |r| r.min(s.chunk));
    let mut buf = vec![0u8; want];
    let mut filled = 0;
    while filled < want {
        let n = s
            .file
            .read(&mut buf[filled..])
            .await
            .map_err(|e| read_error(&s.path, e))?;
        if n == 0 {
            let sent = s.hashed.size - s.remaining + filled as u64;
            return Err(changed(
                &s.path,
                Change::Size {
                    hashed: s.hashed.size,
                    sent,
                },
            ));
        }
        filled += n;
    }
    s.ctx.update(&buf);
    s.remaining -= want as u64;
    if s.remaining == 0 {
        finish(s).await?;
        s.done = true;
        if want == 0 {
            return Ok(None);
        }
    }
    Ok(Some(Bytes::from(buf)))
}

/// After the last byte: the file must end here and match its digest.
async fn finish(s: &mut Sending) -> Result<(), UploadError> {
    let mut probe = [0u8; 1];
    let extra = s
        .file
        .read(&mut probe)
        .await
        .map_err(|e| read_error(&s.path, e))?;
    if extra > 0 {
        return Err(changed(
            &s.path,
            Change::Grew {
                hashed: s.hashed.size,
            },
        ));
    }
    let digest = hex::encode(s.ctx.clone().finish().as_ref());
    if digest != s.hashed.sha256 {
        return Err(changed(&s.path, Change::Digest));
    }
    Ok(())
}
