//! The result ConfigMap the worker writes and the operator reads.
//!
//! A result of valid UTF-8 up to [`MAX_PLAIN_RESULT_BYTES`] is stored as it
//! is in `data.result`; a larger one, or one that is not UTF-8, is stored
//! gzip-compressed in `binaryData.resultGzip`, as long as the compressed
//! bytes fit in [`MAX_STORED_RESULT_BYTES`]. `data.resultEncoding` says
//! which (`plain`, `gzip`, or `omitted` when the content was not stored);
//! `data.resultSize` always holds the size of the raw result.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use k8s_openapi::ByteString;

/// Data keys of the result ConfigMap.
pub mod keys {
    /// The program's result (the `$LONGTASK_RESULT` file, else the tail of
    /// stdout), when stored plain.
    pub const RESULT: &str = "result";
    /// How the result is stored: `plain` (or absent) in `result`, `gzip` in
    /// the binaryData key `resultGzip`, `omitted` when it was not stored.
    pub const RESULT_ENCODING: &str = "resultEncoding";
    /// binaryData key: the raw result, gzip-compressed.
    pub const RESULT_GZIP: &str = "resultGzip";
    /// The program's exit code as a decimal integer (128+N when killed by signal N).
    /// Present only once the run ended: a ConfigMap without it holds progress only.
    pub const EXIT_CODE: &str = "exitCode";
    /// When the program ended, RFC 3339.
    pub const FINISHED_AT: &str = "finishedAt";
    /// A human-readable message (empty on success).
    pub const MESSAGE: &str = "message";
    /// Size in bytes of the whole raw result, even when too large to be stored.
    pub const RESULT_SIZE: &str = "resultSize";
    /// The last lines of the program's combined stdout and stderr.
    pub const LOG_TAIL: &str = "logTail";
    /// The worker's [`crate::outputs::OutputReport`] (JSON), when the Task
    /// has an output store.
    pub const OUTPUTS: &str = "outputs";
}

/// Values of [`keys::RESULT_ENCODING`].
pub mod encodings {
    /// `data.result` holds the result as it is (also when the key is absent).
    pub const PLAIN: &str = "plain";
    /// `binaryData.resultGzip` holds the result, gzip-compressed.
    pub const GZIP: &str = "gzip";
    /// The result was not stored: too large, even compressed.
    pub const OMITTED: &str = "omitted";
}

/// Suffix of the result ConfigMap's name: `<task>-result`.
pub const CONFIG_MAP_SUFFIX: &str = "-result";
/// Largest result kept (1 MiB of raw bytes); a larger one fails the Task
/// with ResultTooLarge.
pub const MAX_RESULT_BYTES: usize = 1024 * 1024;
/// Largest result stored uncompressed in `data.result`. The API server
/// refuses a ConfigMap whose values add up to more than 1 MiB, so this
/// leaves room for the message, log tail and progress keys.
pub const MAX_PLAIN_RESULT_BYTES: usize = 900 * 1024;
/// Largest compressed result stored in `binaryData.resultGzip` (same headroom).
pub const MAX_STORED_RESULT_BYTES: usize = 960 * 1024;
/// Largest result copied into `status.result`; longer ones are cut and flagged.
pub const MAX_STATUS_RESULT_BYTES: usize = 32 * 1024;
/// How much of the program's stdout the worker keeps as the fallback result.
pub const STDOUT_TAIL_BYTES: usize = 4096;
/// Longest message kept in a result or in the status.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// How many of the program's last output lines travel with the result.
pub const LOG_TAIL_LINES: usize = 64;
/// Longest log tail kept in the result and in `status.logTail`.
pub const MAX_LOG_TAIL_BYTES: usize = 8192;

/// `sha256:<hex>` of a result's raw bytes: `status.resultDigest`, and what
/// a reader of the ConfigMap compares it with.
pub fn digest(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Name of the result ConfigMap of the Task `task_name`.
pub fn config_map_name(task_name: &str) -> String {
    format!("{task_name}{CONFIG_MAP_SUFFIX}")
}

/// Name of the result ConfigMap of shard `shard` of a sharded Task.
pub fn shard_config_map_name(task_name: &str, shard: u32) -> String {
    format!("{task_name}{CONFIG_MAP_SUFFIX}-{shard}")
}

/// What one run of the program produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskResult {
    /// The raw result (empty when it was not stored).
    pub result: Vec<u8>,
    /// Exit code of the program.
    pub exit_code: i32,
    /// RFC 3339 time the program ended.
    pub finished_at: String,
    /// Human-readable message, empty on success.
    pub message: String,
    /// Size in bytes of the whole raw result.
    pub result_size: usize,
    /// The last lines of the program's combined stdout and stderr.
    pub log_tail: String,
    /// The content was not stored (too large, even compressed).
    pub omitted: bool,
}

/// A result as the ConfigMap's `data` and `binaryData`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stored {
    pub data: BTreeMap<String, String>,
    pub binary_data: BTreeMap<String, ByteString>,
}

/// Why a ConfigMap's data is not a valid result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// A required key is absent.
    MissingKey(&'static str),
    /// A key's value does not parse.
    BadValue(&'static str, String),
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MissingKey(k) => write!(f, "key {k:?} is missing"),
            Self::BadValue(k, v) => write!(f, "key {k:?} has an invalid value {v:?}"),
        }
    }
}

impl std::error::Error for FormatError {}

impl TaskResult {
    /// True when the whole result was not kept: larger than the limit, or
    /// not stored because even compressed it did not fit.
    pub fn too_large(&self) -> bool {
        self.omitted || self.result_size > MAX_RESULT_BYTES || self.result.len() > MAX_RESULT_BYTES
    }

    /// Why the result was not kept, naming its size and the limit.
    pub fn too_large_message(&self) -> String {
        let size = self.result_size.max(self.result.len());
        if size > MAX_RESULT_BYTES {
            format!("the result is {size} bytes, more than the limit of {MAX_RESULT_BYTES} bytes")
        } else {
            format!(
                "the result is {size} bytes (the limit is {MAX_RESULT_BYTES} bytes) but does not \
                 compress to the {MAX_STORED_RESULT_BYTES} bytes the result ConfigMap can hold"
            )
        }
    }

    /// True when the result is valid UTF-8 (an empty one is).
    pub fn is_text(&self) -> bool {
        std::str::from_utf8(&self.result).is_ok()
    }

    /// The result as text; bytes that are not UTF-8 become U+FFFD.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.result).into_owned()
    }

    /// The ConfigMap content holding this result: plain, gzip, or without
    /// the content when even compressed it does not fit (the message says so).
    pub fn to_stored(&self) -> Stored {
        let mut data = BTreeMap::from([
            (keys::EXIT_CODE.to_owned(), self.exit_code.to_string()),
            (keys::FINISHED_AT.to_owned(), self.finished_at.clone()),
            (keys::MESSAGE.to_owned(), self.message.clone()),
            (keys::RESULT_SIZE.to_owned(), self.result_size.to_string()),
            (keys::LOG_TAIL.to_owned(), self.log_tail.clone()),
        ]);
        let mut binary_data = BTreeMap::new();
        let encoded = if self.too_large() {
            Encoded::TooLarge(0)
        } else {
            encode(&self.result)
        };
        let encoding = match encoded {
            Encoded::TooLarge(_) if self.too_large() => encodings::OMITTED,
            Encoded::Plain(text) => {
                data.insert(keys::RESULT.to_owned(), text.to_owned());
                encodings::PLAIN
            }
            Encoded::Gzip(gz) => {
                binary_data.insert(keys::RESULT_GZIP.to_owned(), ByteString(gz));
                encodings::GZIP
            }
            Encoded::TooLarge(compressed) => {
                let note = format!(
                    "the result is {} bytes and {compressed} bytes compressed, more than the \
                     {MAX_STORED_RESULT_BYTES} bytes the ConfigMap can hold: it was not stored",
                    self.result.len()
                );
                let m = data.entry(keys::MESSAGE.to_owned()).or_default();
                *m = if m.is_empty() {
                    note
                } else {
                    format!("{m}; {note}")
                };
                *m = truncate_utf8(m, MAX_MESSAGE_BYTES).to_owned();
                encodings::OMITTED
            }
        };
        data.insert(keys::RESULT_ENCODING.to_owned(), encoding.to_owned());
        Stored { data, binary_data }
    }

    /// Reads a result from ConfigMap `data` alone (no `binaryData`).
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Self, FormatError> {
        Self::from_stored(data, &BTreeMap::new())
    }

    /// Reads a result from ConfigMap `data` and `binaryData`; `exitCode` is
    /// required, the rest optional. A compressed result is inflated to at
    /// most [`MAX_RESULT_BYTES`] and must match `resultSize`.
    pub fn from_stored(
        data: &BTreeMap<String, String>,
        binary_data: &BTreeMap<String, ByteString>,
    ) -> Result<Self, FormatError> {
        let exit = data
            .get(keys::EXIT_CODE)
            .ok_or(FormatError::MissingKey(keys::EXIT_CODE))?;
        let exit_code = exit
            .trim()
            .parse()
            .map_err(|_| bad(keys::EXIT_CODE, exit))?;
        let size = match data.get(keys::RESULT_SIZE) {
            Some(v) => Some(v.trim().parse().map_err(|_| bad(keys::RESULT_SIZE, v))?),
            None => None,
        };
        let encoding = data.get(keys::RESULT_ENCODING).map(String::as_str);
        let (result, omitted) = match encoding.map(str::trim) {
            None | Some("" | encodings::PLAIN) => {
                let raw = data
                    .get(keys::RESULT)
                    .cloned()
                    .unwrap_or_default()
                    .into_bytes();
                // Every size field must match what it describes.
                if let Some(s) = size.filter(|s| *s != raw.len()) {
                    return Err(FormatError::BadValue(
                        keys::RESULT_SIZE,
                        format!("{s}, but the plain result holds {} bytes", raw.len()),
                    ));
                }
                (raw, false)
            }
            Some(encodings::GZIP) => {
                let gz = binary_data
                    .get(keys::RESULT_GZIP)
                    .ok_or(FormatError::MissingKey(keys::RESULT_GZIP))?;
                let raw = gunzip(&gz.0, MAX_RESULT_BYTES)
                    .map_err(|e| FormatError::BadValue(keys::RESULT_GZIP, e))?;
                if let Some(s) = size.filter(|s| *s != raw.len()) {
                    return Err(FormatError::BadValue(
                        keys::RESULT_GZIP,
                        format!("inflates to {} bytes, not the resultSize {s}", raw.len()),
                    ));
                }
                (raw, false)
            }
            Some(encodings::OMITTED) => (Vec::new(), true),
            Some(other) => return Err(bad(keys::RESULT_ENCODING, other)),
        };
        Ok(Self {
            result_size: size.unwrap_or(result.len()),
            result,
            exit_code,
            finished_at: data.get(keys::FINISHED_AT).cloned().unwrap_or_default(),
            message: data.get(keys::MESSAGE).cloned().unwrap_or_default(),
            log_tail: data.get(keys::LOG_TAIL).cloned().unwrap_or_default(),
            omitted,
        })
    }
}

fn bad(key: &'static str, value: &str) -> FormatError {
    FormatError::BadValue(key, truncate_utf8(value, 64).into())
}

/// How a raw result is stored.
#[derive(Debug, PartialEq, Eq)]
pub enum Encoded<'a> {
    /// Valid UTF-8 of at most [`MAX_PLAIN_RESULT_BYTES`]: as it is.
    Plain(&'a str),
    /// Larger or not UTF-8: gzip-compressed, at most [`MAX_STORED_RESULT_BYTES`].
    Gzip(Vec<u8>),
    /// Even compressed larger than [`MAX_STORED_RESULT_BYTES`] (this many bytes).
    TooLarge(usize),
}

/// Chooses how to store `raw` (of at most [`MAX_RESULT_BYTES`]).
pub fn encode(raw: &[u8]) -> Encoded<'_> {
    if raw.len() <= MAX_PLAIN_RESULT_BYTES
        && let Ok(text) = std::str::from_utf8(raw)
    {
        return Encoded::Plain(text);
    }
    let gz = gzip(raw);
    if gz.len() > MAX_STORED_RESULT_BYTES {
        Encoded::TooLarge(gz.len())
    } else {
        Encoded::Gzip(gz)
    }
}

/// `raw`, gzip-compressed.
pub fn gzip(raw: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::with_capacity(raw.len() / 2), Compression::default());
    // Writing into a Vec cannot fail.
    enc.write_all(raw)
        .and_then(|()| enc.finish())
        .unwrap_or_default()
}

/// Inflates `gz`, refusing to produce more than `max` bytes (a small forged
/// value may inflate to gigabytes); the gzip CRC is checked.
pub fn gunzip(gz: &[u8], max: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    GzDecoder::new(gz)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| format!("not gzip: {e}"))?;
    if out.len() > max {
        return Err(format!("inflates to more than {max} bytes"));
    }
    Ok(out)
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
