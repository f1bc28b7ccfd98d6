//! Progress: tails the file `$LONGTASK_PROGRESS`, and writes the latest
//! line into the result ConfigMap at most once every [`MIN_INTERVAL`].
//! The decisions (which line, whether a write is due) are pure.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crds::progress::{self, Line, Point, Report};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use tokio::sync::oneshot;

use crate::identity::Identity;
use crate::{chain, report, say};

/// Least time between two progress writes.
pub const MIN_INTERVAL: Duration = Duration::from_secs(2);
/// How often the file is read.
const POLL: Duration = Duration::from_millis(500);
/// How much of the end of the file is read each time.
const TAIL_BYTES: u64 = 8192;

/// The latest progress line in `content`: the last complete line that
/// parses; an unterminated last line counts only when `stable` (the file
/// did not change since the previous read, so it is not half-written).
pub fn latest(content: &str, stable: bool) -> Option<Line> {
    let complete = match content.rfind('\n') {
        Some(i) => &content[..i],
        None => "",
    };
    let partial = content[complete.len()..].trim_start_matches('\n');
    if stable && let Some(l) = progress::parse_line(partial) {
        return Some(l);
    }
    complete.lines().rev().find_map(progress::parse_line)
}

/// Whether a write may go out at `now`, given the last one.
pub fn due(last_write: Option<Instant>, now: Instant) -> bool {
    last_write.is_none_or(|t| now.duration_since(t) >= MIN_INTERVAL)
}

/// What the tailer knows: the first and latest points, and what was written.
#[derive(Default)]
struct State {
    report: Option<Report>,
    written: Option<Report>,
    last_write: Option<Instant>,
    last_content: Option<String>,
    failing: bool,
}

impl State {
    /// Takes a new reading of the file; true when the latest point changed.
    fn observe(&mut self, content: String) -> bool {
        let stable = self.last_content.as_deref() == Some(content.as_str());
        let line = latest(&content, stable);
        self.last_content = Some(content);
        let Some(line) = line else { return false };
        if let Some(r) = &self.report
            && r.latest.percent == line.percent
            && r.latest.message == line.message
        {
            return false;
        }
        let point = Point {
            percent: line.percent,
            message: line.message,
            at: Timestamp::now().to_string(),
        };
        self.report = Some(match self.report.take() {
            Some(r) => Report {
                first: r.first,
                latest: point,
            },
            None => Report {
                first: point.clone(),
                latest: point,
            },
        });
        true
    }

    fn pending(&self) -> Option<&Report> {
        self.report
            .as_ref()
            .filter(|r| Some(*r) != self.written.as_ref())
    }
}

/// Tails `path` until `stop` fires, writing progress for `id` through `api`;
/// returns the latest report, for the final write to carry.
pub async fn tail(
    path: PathBuf,
    id: Identity,
    api: Option<Api<ConfigMap>>,
    mut stop: oneshot::Receiver<()>,
) -> Option<Report> {
    let mut st = State::default();
    let mut tick = tokio::time::interval(POLL);
    loop {
        let stopping = tokio::select! {
            _ = tick.tick() => false,
            _ = &mut stop => true,
        };
        if let Some(content) = read_tail(&path) {
            st.observe(content);
        }
        if stopping {
            return st.report;
        }
        let now = Instant::now();
        if let (Some(r), Some(api)) = (st.pending().cloned(), api.as_ref())
            && due(st.last_write, now)
        {
            st.last_write = Some(now);
            let cm = report::config_map(
                &id,
                crds::result::Stored {
                    data: r.to_data(),
                    ..Default::default()
                },
            );
            match report::apply_once(api, &cm, st.written.is_some()).await {
                Ok(()) => {
                    if st.failing {
                        say("progress written again");
                    }
                    st.failing = false;
                    st.written = Some(r);
                }
                Err(e) if !st.failing => {
                    st.failing = true;
                    say(&format!("progress not written (will retry): {}", chain(&e)));
                }
                Err(_) => {}
            }
        }
    }
}

/// The last [`TAIL_BYTES`] of the file, if it exists (lossy UTF-8).
fn read_tail(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.take(TAIL_BYTES).read_to_end(&mut buf).ok()?;
    let mut s = String::from_utf8_lossy(&buf).into_owned();
    if start > 0 {
        // The first line may be cut: drop it.
        let cut = s.find('\n').map_or(s.len(), |i| i + 1);
        s.drain(..cut);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_lines() {
        let pct = |c: &str, stable| latest(c, stable).map(|l| l.percent);
        let cases = [
            ("", false, None),
            ("10\n20\n", false, Some(20)),
            ("10\n20 copying\n", false, Some(20)),
            ("10\n2", false, Some(10)),
            ("10\n25", true, Some(25)),
            ("10\nnot progress\n", false, Some(10)),
            ("3/7 shard\n", false, Some(42)),
            ("30", false, None),
            ("30", true, Some(30)),
        ];
        for (content, stable, want) in cases {
            assert_eq!(pct(content, stable), want, "{content:?} stable={stable}");
        }
    }

    #[test]
    fn writes_are_rate_limited() {
        let t0 = Instant::now();
        assert!(due(None, t0));
        assert!(!due(Some(t0), t0 + Duration::from_millis(1999)));
        assert!(due(Some(t0), t0 + MIN_INTERVAL));
    }

    #[test]
    fn state_keeps_the_first_point_and_skips_repeats() {
        let mut st = State::default();
        assert!(st.observe("10 a\n".into()));
        assert!(!st.observe("10 a\n".into()));
        assert!(st.observe("10 a\n40 b\n".into()));
        let r = st.pending().cloned().unwrap();
        assert_eq!((r.first.percent, r.latest.percent), (10, 40));
        assert_eq!(r.latest.message, "b");
        st.written = Some(r);
        assert!(st.pending().is_none());
    }

    #[test]
    fn tail_reads_the_end_only() {
        let dir = std::env::temp_dir().join(format!("lt-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("progress");
        assert_eq!(read_tail(&f), None);
        let mut body = "1 x\n".repeat(5000);
        body.push_str("99 last\n");
        std::fs::write(&f, &body).unwrap();
        let t = read_tail(&f).unwrap();
        assert!(t.len() <= TAIL_BYTES as usize && t.starts_with("1 x\n"));
        assert_eq!(latest(&t, false).map(|l| l.percent), Some(99));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
