//! Progress: the line format a program writes to `$LONGTASK_PROGRESS`, and
//! the keys the worker keeps it under in the result ConfigMap.
//!
//! The worker writes progress into the same ConfigMap as the result, with
//! the same labels (Task and Job UIDs). A ConfigMap is a *final* result only
//! when it carries `exitCode` (see [`crate::result::keys::EXIT_CODE`]);
//! progress-only writes never do.

use std::collections::BTreeMap;

/// ConfigMap data keys of the progress (next to the result keys).
pub mod keys {
    /// Latest percent done, 0 to 100.
    pub const PERCENT: &str = "progress.percent";
    /// Latest message (may be empty).
    pub const MESSAGE: &str = "progress.message";
    /// When the worker read the latest line, RFC 3339.
    pub const UPDATED_AT: &str = "progress.updatedAt";
    /// Percent of the first line this run reported (for the ETA).
    pub const FIRST_PERCENT: &str = "progress.firstPercent";
    /// When the worker read the first line, RFC 3339.
    pub const FIRST_AT: &str = "progress.firstAt";
}

/// Longest progress message kept.
pub const MAX_MESSAGE_BYTES: usize = 256;

/// One progress line: percent done and an optional message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub percent: u8,
    pub message: String,
}

/// Parses `42`, `42 copying shard 3/7`, `42% ...` or `3/7 ...` (done/total).
/// Percent is clamped to 0..=100; `None` for lines that are not progress.
pub fn parse_line(line: &str) -> Option<Line> {
    let line = line.trim();
    let (head, rest) = match line.split_once(char::is_whitespace) {
        Some((h, r)) => (h, r.trim()),
        None => (line, ""),
    };
    let head = head.strip_suffix('%').unwrap_or(head);
    let percent = match head.split_once('/') {
        Some((done, total)) => {
            let done: f64 = done.parse().ok()?;
            let total: f64 = total.parse().ok()?;
            if total <= 0.0 {
                return None;
            }
            done / total * 100.0
        }
        None => head.parse().ok()?,
    };
    if !percent.is_finite() {
        return None;
    }
    let message = crate::result::truncate_utf8(rest, MAX_MESSAGE_BYTES).to_owned();
    Some(Line {
        percent: percent.clamp(0.0, 100.0).floor() as u8,
        message,
    })
}

/// A progress point with the time it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub percent: u8,
    pub message: String,
    /// RFC 3339.
    pub at: String,
}

/// What the worker stores: the first and the latest point of this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub first: Point,
    pub latest: Point,
}

impl Report {
    /// The ConfigMap data keys holding this report.
    pub fn to_data(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (keys::PERCENT.to_owned(), self.latest.percent.to_string()),
            (keys::MESSAGE.to_owned(), self.latest.message.clone()),
            (keys::UPDATED_AT.to_owned(), self.latest.at.clone()),
            (
                keys::FIRST_PERCENT.to_owned(),
                self.first.percent.to_string(),
            ),
            (keys::FIRST_AT.to_owned(), self.first.at.clone()),
        ])
    }

    /// Reads a report from ConfigMap data; `None` when there is none or it
    /// does not parse.
    pub fn from_data(data: &BTreeMap<String, String>) -> Option<Self> {
        let pct = |k: &str| data.get(k)?.trim().parse::<u8>().ok().map(|p| p.min(100));
        let latest = Point {
            percent: pct(keys::PERCENT)?,
            message: data.get(keys::MESSAGE).cloned().unwrap_or_default(),
            at: data.get(keys::UPDATED_AT)?.clone(),
        };
        let first = match (pct(keys::FIRST_PERCENT), data.get(keys::FIRST_AT)) {
            (Some(percent), Some(at)) => Point {
                percent,
                message: String::new(),
                at: at.clone(),
            },
            _ => latest.clone(),
        };
        Some(Self { first, latest })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let l = |p, m: &str| {
            Some(Line {
                percent: p,
                message: m.to_owned(),
            })
        };
        let cases = [
            ("42", l(42, "")),
            ("42\n", l(42, "")),
            ("  42 copying shard 3/7 ", l(42, "copying shard 3/7")),
            ("42% half way", l(42, "half way")),
            ("3/7 msg", l(42, "msg")),
            ("7/7", l(100, "")),
            ("150", l(100, "")),
            ("-5", l(0, "")),
            ("12.9 x", l(12, "x")),
            ("3/0", None),
            ("", None),
            ("copying", None),
            ("NaN", None),
            ("inf", None),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(line), want, "{line:?}");
        }
    }

    #[test]
    fn report_round_trip_and_first_defaults_to_latest() {
        let p = |percent, at: &str| Point {
            percent,
            message: String::new(),
            at: at.into(),
        };
        let r = Report {
            first: p(10, "2024-01-01T00:00:00Z"),
            latest: Point {
                message: "m".into(),
                ..p(50, "2024-01-01T00:00:10Z")
            },
        };
        assert_eq!(Report::from_data(&r.to_data()), Some(r.clone()));
        let mut d = r.to_data();
        d.remove(keys::FIRST_AT);
        assert_eq!(Report::from_data(&d).map(|r| r.first.percent), Some(50));
        assert_eq!(Report::from_data(&BTreeMap::new()), None);
    }
}
