//! Bytes of an output passed on as they arrive, counted and hashed, with
//! the last chunk held back until the whole has the size and the sha256
//! that `status.outputs` lists. Whoever reads the stream to its end got
//! exactly those bytes; otherwise the stream ends in an error before its
//! last chunk, so a download to a browser or a pipe never looks complete
//! when it is not.

use bytes::Bytes;
use crds::outputs::OutputFile;
use futures::{Stream, StreamExt};
use ring::digest::{Context, SHA256};

use super::Error;

/// The hex of a `sha256:<hex>` digest, as `status.outputs` writes it.
pub fn sha256_hex(file: &OutputFile) -> Result<&str, Error> {
    file.digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| Error::BadDigest {
            file: file.name.clone(),
            digest: file.digest.clone(),
        })
}

/// The check of one output's bytes, chunk by chunk.
pub struct Check {
    file: String,
    size: u64,
    digest: String,
    seen: u64,
    hash: Context,
    held: Option<Bytes>,
}

impl Check {
    pub fn new(file: &OutputFile) -> Result<Check, Error> {
        let hex = sha256_hex(file)?.to_ascii_lowercase();
        Ok(Check {
            file: file.name.clone(),
            size: u64::try_from(file.size).unwrap_or_default(),
            digest: format!("sha256:{hex}"),
            seen: 0,
            hash: Context::new(&SHA256),
            held: None,
        })
    }

    /// Takes `chunk` and gives back the one held before it, if any.
    /// More bytes than the status lists is an error at once.
    pub fn take(&mut self, chunk: Bytes) -> Result<Option<Bytes>, Error> {
        self.seen += chunk.len() as u64;
        if self.seen > self.size {
            return Err(Error::SizeMismatch {
                file: self.file.clone(),
                expected: self.size,
                actual: format!("more than {}", self.size),
            });
        }
        self.hash.update(&chunk);
        Ok(self.held.replace(chunk))
    }

    /// At the end of the bytes: the held chunk when size and digest are
    /// right, else the error naming the file.
    pub fn finish(self) -> Result<Option<Bytes>, Error> {
        if self.seen != self.size {
            return Err(Error::SizeMismatch {
                file: self.file,
                expected: self.size,
                actual: self.seen.to_string(),
            });
        }
        let actual = format!("sha256:{}", hex(self.hash.finish().as_ref()));
        if actual != self.digest {
            return Err(Error::DigestMismatch {
                file: self.file,
                expected: self.digest,
                actual,
            });
        }
        Ok(self.held)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `inner`'s chunks checked against `file` ([`Check`]): an error of
/// `inner` ends the stream with [`Error::Transfer`], a wrong size or
/// digest with its own error, in place of the last chunk.
pub fn checked<S, E>(
    inner: S,
    file: &OutputFile,
) -> Result<impl Stream<Item = Result<Bytes, Error>> + Send + 'static, Error>
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let check = Check::new(file)?;
    let name = file.name.clone();
    let state = (Box::pin(inner), Some(check), name);
    Ok(futures::stream::unfold(
        state,
        |(mut inner, check, name)| async move {
            let mut check = check?;
            loop {
                let step = match inner.next().await {
                    Some(Ok(chunk)) => check.take(chunk).transpose(),
                    Some(Err(e)) => Some(Err(Error::Transfer {
                        file: name.clone(),
                        source: Box::new(e),
                    })),
                    None => return check.finish().transpose().map(|r| (r, (inner, None, name))),
                };
                match step {
                    None => continue,
                    Some(Ok(chunk)) => return Some((Ok(chunk), (inner, Some(check), name))),
                    Some(Err(e)) => return Some((Err(e), (inner, None, name))),
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::output;

    /// Everything the checked stream of `chunks` gives, for `listed`.
    async fn drain(listed: &OutputFile, chunks: &[&[u8]]) -> (Vec<u8>, Option<Error>) {
        let items: Vec<Result<Bytes, std::io::Error>> = chunks
            .iter()
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut s = Box::pin(checked(futures::stream::iter(items), listed).expect("digest"));
        let mut got = Vec::new();
        while let Some(item) = s.next().await {
            match item {
                Ok(b) => got.extend_from_slice(&b),
                Err(e) => return (got, Some(e)),
            }
        }
        (got, None)
    }

    #[tokio::test]
    async fn right_bytes_pass_whole() {
        let f = output("a", b"hello world");
        let (got, err) = drain(&f, &[b"hello", b"", b" wor", b"ld"]).await;
        assert_eq!((got.as_slice(), err.is_none()), (&b"hello world"[..], true));
        let empty = output("e", b"");
        let (got, err) = drain(&empty, &[]).await;
        assert!(got.is_empty() && err.is_none(), "{err:?}");
    }

    #[tokio::test]
    async fn a_wrong_digest_withholds_the_last_chunk_and_names_the_file() {
        let f = output("model.bin", b"hello world");
        let (got, err) = drain(&f, &[b"hello", b" worlD"]).await;
        assert_eq!(got, b"hello", "the last chunk is never given");
        let e = err.expect("mismatch").to_string();
        assert!(
            e.starts_with(
                "output \"model.bin\" is not what the Task uploaded: its sha256 is sha256:"
            ) && e.contains(&f.digest),
            "{e}"
        );
    }

    #[tokio::test]
    async fn too_many_or_too_few_bytes_are_refused() {
        let f = output("a", b"1234");
        let (got, err) = drain(&f, &[b"12", b"345", b"6"]).await;
        assert_eq!(got, b"", "stopped at the first byte too many");
        assert!(matches!(err, Some(Error::SizeMismatch { .. })), "{err:?}");
        let (got, err) = drain(&f, &[b"12", b"3"]).await;
        assert_eq!(got, b"12");
        let e = err.expect("short").to_string();
        assert!(e.contains("3 bytes, but status.outputs lists 4"), "{e}");
    }

    #[tokio::test]
    async fn a_broken_transfer_ends_in_an_error() {
        let f = output("a", b"1234");
        let items: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"12")),
            Err(std::io::Error::other("reset")),
        ];
        let mut s = Box::pin(checked(futures::stream::iter(items), &f).expect("digest"));
        let first = s.next().await.expect("an item");
        assert!(matches!(first, Err(Error::Transfer { .. })), "{first:?}");
        assert!(s.next().await.is_none());
    }

    #[test]
    fn digests_must_be_sha256_hex() {
        let mut f = output("a", b"x");
        assert!(sha256_hex(&f).is_ok());
        for bad in ["md5:abc", "sha256:xyz", "", "sha256:"] {
            f.digest = bad.into();
            assert!(
                matches!(sha256_hex(&f), Err(Error::BadDigest { .. })),
                "{bad}"
            );
        }
    }
}
