//! The plugin's side: one presigned URL streamed to a file. The bytes go
//! to `<dest>.part` and take `dest`'s name only once their size and sha256
//! are the expected ones; on any failure the partial file is removed.

use std::io;
use std::path::{Path, PathBuf};

use ring::digest;

use crate::hex;
use crate::http::{self, RequestError};

/// What downloading one object failed at. Messages name the object by the
/// URL's path only: its query is a credential.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error("fetching {object} failed")]
    Request {
        object: String,
        #[source]
        source: RequestError,
    },
    #[error("reading {object} from the store failed")]
    Read {
        object: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("creating {path} failed")]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("writing {path} failed")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{object} is {got} bytes (or more), not the {expected} recorded")]
    Size {
        object: String,
        expected: u64,
        got: u64,
    },
    #[error("{object} has sha256 {got}, not the {expected} recorded")]
    Digest {
        object: String,
        expected: String,
        got: String,
    },
    #[error("renaming {from} to {to} failed")]
    Rename {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Streams `url` to `dest`, refusing anything but `expect_size` bytes with
/// sha256 `expect_sha256` (hex, or `sha256:<hex>`); `progress` is called
/// with the bytes received so far. No timeout of its own: `http`'s
/// connect and read timeouts bound it.
pub async fn download(
    http: &reqwest::Client,
    url: &str,
    dest: &Path,
    expect_size: u64,
    expect_sha256: &str,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<(), DownloadError> {
    let part = part_path(dest);
    let result = fetch(http, url, &part, expect_size, expect_sha256, progress).await;
    match result {
        Ok(()) => tokio::fs::rename(&part, dest)
            .await
            .map_err(|source| DownloadError::Rename {
                from: part.clone(),
                to: dest.to_path_buf(),
                source,
            }),
        Err(e) => {
            // The partial file is never left to be taken for the output.
            let _ = tokio::fs::remove_file(&part).await;
            Err(e)
        }
    }
}

/// `<dest>.part`.
fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    dest.with_file_name(name)
}

/// The URL without its query, for messages.
fn object_of(url: &str) -> String {
    url.split('?').next().unwrap_or_default().to_string()
}

/// The answer to a GET of `url`, if it is a success of the expected length.
async fn get(
    http: &reqwest::Client,
    url: &str,
    object: &str,
    expect_size: u64,
) -> Result<reqwest::Response, DownloadError> {
    let request_failed = |source| DownloadError::Request {
        object: object.to_owned(),
        source,
    };
    let sent = http.get(url).send().await.map_err(RequestError::Send);
    let resp = http::check(sent.map_err(request_failed)?)
        .await
        .map_err(request_failed)?;
    match resp.content_length() {
        Some(got) if got != expect_size => Err(DownloadError::Size {
            object: object.to_owned(),
            expected: expect_size,
            got,
        }),
        _ => Ok(resp),
    }
}

/// Chunks in flight between the socket and the writer: memory stays
/// bounded (a few of reqwest's chunks, tens of KiB each).
const IN_FLIGHT: usize = 16;

async fn fetch(
    http: &reqwest::Client,
    url: &str,
    part: &Path,
    expect_size: u64,
    expect_sha256: &str,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<(), DownloadError> {
    let object = object_of(url);
    let resp = get(http, url, &object, expect_size).await?;
    let file = tokio::fs::File::create(part)
        .await
        .map_err(|source| DownloadError::Create {
            path: part.to_path_buf(),
            source,
        })?
        .into_std()
        .await;
    // Hashing and writing on a thread of their own, beside the socket's
    // reads: on 2 cores, inline they cost 40-60% of a plain GET's rate.
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(IN_FLIGHT);
    let writer = tokio::task::spawn_blocking(move || hash_and_write(file, rx));
    let received = receive(resp, &object, expect_size, tx, progress).await;
    let write_failed = |source| DownloadError::Write {
        path: part.to_path_buf(),
        source,
    };
    let written = writer
        .await
        .map_err(|e| write_failed(io::Error::other(e)))?;
    let got = received?;
    let digest = written.map_err(write_failed)?;
    if got != expect_size {
        return Err(DownloadError::Size {
            object,
            expected: expect_size,
            got,
        });
    }
    let expected = expect_sha256
        .strip_prefix("sha256:")
        .unwrap_or(expect_sha256);
    if !digest.eq_ignore_ascii_case(expected) {
        return Err(DownloadError::Digest {
            object,
            expected: expected.to_string(),
            got: digest,
        });
    }
    Ok(())
}

/// Hands the body's chunks to `tx` until it ends, passes `expect_size`,
/// or the writer stops (whose error the caller reports); the bytes
/// received. Dropping `tx` at the end tells the writer to finish.
async fn receive(
    mut resp: reqwest::Response,
    object: &str,
    expect_size: u64,
    tx: tokio::sync::mpsc::Sender<bytes::Bytes>,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<u64, DownloadError> {
    let mut got = 0u64;
    while let Some(chunk) = resp.chunk().await.map_err(|source| DownloadError::Read {
        object: object.to_owned(),
        source,
    })? {
        got += chunk.len() as u64;
        if got > expect_size || tx.send(chunk).await.is_err() {
            break;
        }
        progress(got);
    }
    Ok(got)
}

/// Writes every chunk `rx` gives to `file` and hashes it; the hex sha256
/// once `rx` is closed and the file is synced.
fn hash_and_write(
    mut file: std::fs::File,
    mut rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
) -> io::Result<String> {
    use std::io::Write as _;
    let mut ctx = digest::Context::new(&digest::SHA256);
    while let Some(chunk) = rx.blocking_recv() {
        ctx.update(&chunk);
        file.write_all(&chunk)?;
    }
    file.sync_all()?;
    Ok(hex::encode(ctx.finish().as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_files_and_messages_without_credentials() {
        assert_eq!(
            part_path(Path::new("/d/model.bin")),
            PathBuf::from("/d/model.bin.part")
        );
        assert_eq!(
            object_of("http://h/b/k?X-Amz-Signature=secret"),
            "http://h/b/k"
        );
    }
}
