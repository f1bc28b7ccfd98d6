//! Pure: the progress the worker reported in the result ConfigMap → the
//! Task's `status.progress`, with an ETA from the first and latest points.

use crds::TaskProgress;
use crds::progress::{MAX_MESSAGE_BYTES, Point, Report};
use crds::result::truncate_utf8;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::status::observe;

/// The progress in `cm`, if it carries some and belongs to this Task's Job.
pub fn from_config_map(
    cm: Option<&ConfigMap>,
    task_uid: &str,
    job_uid: &str,
) -> Option<TaskProgress> {
    let data = observe::fenced(cm, task_uid, job_uid).ok()?;
    Some(status(&Report::from_data(data)?))
}

/// The status form of a report. The message is cut to the documented
/// 256 bytes (on a character boundary) here too: the worker cuts it, but a
/// program may write its result ConfigMap itself.
pub fn status(r: &Report) -> TaskProgress {
    let percent = i32::from(r.latest.percent.min(100));
    let message = truncate_utf8(&r.latest.message, MAX_MESSAGE_BYTES);
    TaskProgress {
        percent,
        message: Some(message.to_owned()).filter(|m| !m.is_empty()),
        display: format!("{percent}%"),
        updated_at: parse(&r.latest.at).map(Time),
        eta: eta(&r.first, &r.latest).map(Time),
    }
}

/// The progress of a Task that completed: 100%, no ETA.
pub fn done(p: TaskProgress) -> TaskProgress {
    TaskProgress {
        percent: 100,
        display: "100%".to_owned(),
        eta: None,
        ..p
    }
}

/// Straight-line extrapolation from `first` to `latest` up to 100%; none
/// until the percent rose over a positive time.
pub fn eta(first: &Point, latest: &Point) -> Option<Timestamp> {
    let (t0, t1) = (parse(&first.at)?, parse(&latest.at)?);
    let dp = f64::from(latest.percent) - f64::from(first.percent);
    let dt = (t1.as_millisecond() - t0.as_millisecond()) as f64;
    if dp <= 0.0 || dt <= 0.0 {
        return None;
    }
    let left = (100.0 - f64::from(latest.percent)) * dt / dp;
    // Whole seconds: a status time is stored at second precision, and a
    // sub-second wobble must not cause a patch.
    let secs = ((t1.as_millisecond() as f64 + left) / 1000.0).round() as i64;
    Timestamp::from_second(secs).ok()
}

fn parse(s: &str) -> Option<Timestamp> {
    s.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(percent: u8, at: &str) -> Point {
        Point {
            percent,
            message: String::new(),
            at: at.into(),
        }
    }

    #[test]
    fn etas() {
        let t0 = "2024-01-01T00:00:00Z";
        let cases = [
            (p(10, t0), p(10, t0), None),
            (
                p(10, t0),
                p(50, "2024-01-01T00:00:40Z"),
                Some("2024-01-01T00:01:30Z"),
            ),
            (
                p(0, t0),
                p(100, "2024-01-01T00:00:10Z"),
                Some("2024-01-01T00:00:10Z"),
            ),
            (p(60, t0), p(50, "2024-01-01T00:00:10Z"), None),
            (p(10, "nope"), p(50, t0), None),
        ];
        for (i, (first, latest, want)) in cases.into_iter().enumerate() {
            let got = eta(&first, &latest).map(|t| t.to_string());
            assert_eq!(got.as_deref(), want, "case {i}");
        }
    }

    #[test]
    fn status_shows_percent_and_drops_empty_message() {
        let r = Report {
            first: p(0, "2024-01-01T00:00:00Z"),
            latest: Point {
                message: "copying".into(),
                ..p(42, "2024-01-01T00:00:21Z")
            },
        };
        let s = status(&r);
        assert_eq!((s.percent, s.display.as_str()), (42, "42%"));
        assert_eq!(s.message.as_deref(), Some("copying"));
        assert!(s.updated_at.is_some() && s.eta.is_some());
        let r = Report {
            latest: p(42, "2024-01-01T00:00:21Z"),
            ..r
        };
        assert_eq!(status(&r).message, None);
    }

    #[test]
    fn a_long_message_is_cut_to_256_bytes_on_a_char_boundary() {
        let long = format!("x{}", "é".repeat(300_000));
        let r = Report {
            first: p(0, "2024-01-01T00:00:00Z"),
            latest: Point {
                message: long.clone(),
                ..p(42, "2024-01-01T00:00:21Z")
            },
        };
        let m = status(&r).message.unwrap_or_default();
        assert_eq!(m.len(), MAX_MESSAGE_BYTES - 1, "255: 'x' and 127 'é'");
        assert!(long.starts_with(&m));
    }
}
