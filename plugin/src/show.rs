//! Shared by the verbs that print: ages as kubectl writes them and
//! tables aligned as kubectl aligns them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::safe::visible;

/// Seconds from `then` to `now` (negative when `then` is in the future).
pub fn seconds_since(now: Timestamp, then: &Time) -> i64 {
    now.as_second() - then.0.as_second()
}

/// A duration the way `kubectl get` prints an AGE (apimachinery's
/// `HumanDuration`): `45s`, `3m20s`, `42m`, `5h10m`, `20h`, `3d4h`, `120d`, `2y5d`.
pub fn human(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    let s = seconds.max(0);
    let (m, h) = (s / 60, s / 3600);
    let d = h / 24;
    let y = d / 365;
    match () {
        () if s < 120 => format!("{s}s"),
        () if m < 10 => with_rest(m, "m", s % 60, "s"),
        () if m < 180 => format!("{m}m"),
        () if h < 8 => with_rest(h, "h", m % 60, "m"),
        () if h < 48 => format!("{h}h"),
        () if h < 24 * 8 => with_rest(d, "d", h % 24, "h"),
        () if d < 365 * 2 => format!("{d}d"),
        () if d < 365 * 8 => with_rest(y, "y", d % 365, "d"),
        () => format!("{y}y"),
    }
}

fn with_rest(big: i64, big_unit: &str, rest: i64, rest_unit: &str) -> String {
    if rest == 0 {
        format!("{big}{big_unit}")
    } else {
        format!("{big}{big_unit}{rest}{rest_unit}")
    }
}

/// `rows` under `header`, columns padded to their widest cell and three
/// spaces apart, like kubectl's tables; no trailing blanks. Cells are made
/// visible first ([`crate::safe::visible`]), so the widths hold.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| visible(c).into_owned()).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            out.push_str(cell);
            if i + 1 < cells.len() {
                let pad = w - cell.chars().count() + 3;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    };
    let mut out = line(header.to_vec());
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        for (secs, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (200, "3m20s"),
            (540, "9m"),
            (2520, "42m"),
            (18_600, "5h10m"),
            (72_000, "20h"),
            (273_600, "3d4h"),
            (120 * 86_400, "120d"),
            (735 * 86_400, "2y5d"),
            (3000 * 86_400, "8y"),
        ] {
            assert_eq!(human(secs), want, "{secs}s");
        }
    }

    #[test]
    fn table_cells_are_made_visible_before_they_are_measured() {
        let t = table(
            &["NAME", "WAITING"],
            &[
                vec!["a".into(), "\u{1b}[2Jx".into()],
                vec!["bb".into(), "\u{9b}y".into()],
            ],
        );
        assert_eq!(t, "NAME   WAITING\na      ^[[2Jx\nbb     \\u{9b}y\n");
    }

    #[test]
    fn tables_align_columns() {
        let t = table(
            &["NAME", "PHASE", "WAITING"],
            &[
                vec!["a".into(), "Running".into(), String::new()],
                vec!["longer".into(), "Queued".into(), "position 1".into()],
            ],
        );
        assert_eq!(
            t,
            "NAME     PHASE     WAITING\n\
             a        Running\n\
             longer   Queued    position 1\n"
        );
    }
}
