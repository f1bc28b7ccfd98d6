//! The result ConfigMap the worker writes and the operator reads.

use std::collections::BTreeMap;

/// Data keys of the result ConfigMap.
pub mod keys {
    /// The program's result (the `$LONGTASK_RESULT` file, else the tail of stdout).
    pub const RESULT: &str = "result";
    /// The program's exit code as a decimal integer (128+N when killed by signal N).
    /// Present only once the run ended: a ConfigMap without it holds progress only.
    pub const EXIT_CODE: &str = "exitCode";
    /// When the program ended, RFC 3339.
    pub const FINISHED_AT: &str = "finishedAt";
    /// A human-readable message (empty on success).
    pub const MESSAGE: &str = "message";
    /// Size in bytes of the whole result, even when too large to be stored.
    pub const RESULT_SIZE: &str = "resultSize";
    /// The last lines of the program's combined stdout and stderr.
    pub const LOG_TAIL: &str = "logTail";
}

/// Suffix of the result ConfigMap's name: `<task>-result`.
pub const CONFIG_MAP_SUFFIX: &str = "-result";
/// Largest result the worker stores (a ConfigMap holds at most 1 MiB, metadata included).
pub const MAX_RESULT_BYTES: usize = 1_000_000;
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
    /// The result text (empty when it was too large to store).
    pub result: String,
    /// Exit code of the program.
    pub exit_code: i32,
    /// RFC 3339 time the program ended.
    pub finished_at: String,
    /// Human-readable message, empty on success.
    pub message: String,
    /// Size in bytes of the whole result.
    pub result_size: usize,
    /// The last lines of the program's combined stdout and stderr.
    pub log_tail: String,
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
    /// True when the whole result did not fit into the ConfigMap.
    pub fn too_large(&self) -> bool {
        self.result_size > MAX_RESULT_BYTES
    }

    /// The ConfigMap `data` holding this result.
    pub fn to_data(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (keys::RESULT.to_owned(), self.result.clone()),
            (keys::EXIT_CODE.to_owned(), self.exit_code.to_string()),
            (keys::FINISHED_AT.to_owned(), self.finished_at.clone()),
            (keys::MESSAGE.to_owned(), self.message.clone()),
            (keys::RESULT_SIZE.to_owned(), self.result_size.to_string()),
            (keys::LOG_TAIL.to_owned(), self.log_tail.clone()),
        ])
    }

    /// Reads a result from ConfigMap `data`; `exitCode` is required, the rest optional.
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Self, FormatError> {
        let exit = data
            .get(keys::EXIT_CODE)
            .ok_or(FormatError::MissingKey(keys::EXIT_CODE))?;
        let exit_code = exit
            .trim()
            .parse()
            .map_err(|_| FormatError::BadValue(keys::EXIT_CODE, truncate_utf8(exit, 64).into()))?;
        let result = data.get(keys::RESULT).cloned().unwrap_or_default();
        let result_size = match data.get(keys::RESULT_SIZE) {
            Some(v) => v.trim().parse().map_err(|_| {
                FormatError::BadValue(keys::RESULT_SIZE, truncate_utf8(v, 64).into())
            })?,
            None => result.len(),
        };
        Ok(Self {
            result,
            exit_code,
            finished_at: data.get(keys::FINISHED_AT).cloned().unwrap_or_default(),
            message: data.get(keys::MESSAGE).cloned().unwrap_or_default(),
            result_size,
            log_tail: data.get(keys::LOG_TAIL).cloned().unwrap_or_default(),
        })
    }
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
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let r = TaskResult {
            result: "42\n".into(),
            exit_code: 3,
            finished_at: "2024-01-01T00:00:00Z".into(),
            message: "exit 3".into(),
            result_size: 3,
            log_tail: "a\nb\n".into(),
        };
        assert_eq!(TaskResult::from_data(&r.to_data()), Ok(r));
    }

    #[test]
    fn bad_and_missing_exit_code() {
        let mut d = BTreeMap::new();
        assert_eq!(
            TaskResult::from_data(&d),
            Err(FormatError::MissingKey(keys::EXIT_CODE))
        );
        d.insert(keys::EXIT_CODE.into(), "x".into());
        assert!(matches!(
            TaskResult::from_data(&d),
            Err(FormatError::BadValue(..))
        ));
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_utf8("héllo", 2), "h");
        assert_eq!(truncate_utf8("héllo", 3), "hé");
        assert_eq!(truncate_utf8("abc", 10), "abc");
    }
}
