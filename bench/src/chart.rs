//! Pure: a line chart as a standalone SVG document (axes, ticks, labels,
//! the measured line, an optional fitted line and a note), written by
//! hand so the bench needs no plotting crate.

use std::fmt::Write as _;

use crate::fit::Fit;

/// What to draw.
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub points: &'a [(f64, f64)],
    /// A fitted line, drawn from this x to the last point.
    pub fit: Option<(Fit, f64)>,
    /// A vertical marker (the end of the warm-up) and its label.
    pub marker: Option<(f64, &'a str)>,
    /// A line of text in the plot's top right corner (the slope).
    pub note: &'a str,
}

const W: f64 = 800.0;
const H: f64 = 450.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 25.0;
const TOP: f64 = 45.0;
const BOTTOM: f64 = 60.0;

/// A "nice" tick step (1, 2 or 5 times a power of ten) that cuts
/// `lo..hi` into about `count` parts, and the axis range rounded out to
/// whole steps.
pub fn axis(lo: f64, hi: f64, count: usize) -> (f64, f64, f64) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo.min(hi), lo.max(hi))
    } else {
        (0.0, 1.0)
    };
    let (lo, hi) = if hi - lo < 1e-9 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    let raw = (hi - lo) / count.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = match raw / mag {
        n if n <= 1.0 => 1.0,
        n if n <= 2.0 => 2.0,
        n if n <= 5.0 => 5.0,
        _ => 10.0,
    } * mag;
    // A hair past a tick (a sample taken a moment late) does not add a step.
    let a = (lo / step + 1e-3).floor() * step;
    let b = (hi / step - 1e-3).ceil() * step;
    (a, b, step)
}

/// The tick values of `axis`'s range.
pub fn ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let n = ((hi - lo) / step).round() as usize;
    (0..=n).map(|i| lo + step * i as f64).collect()
}

/// A tick label with as many decimals as the step needs.
fn label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil() as usize
    };
    // Avoid "-0".
    let v = if v.abs() < step * 1e-6 { 0.0 } else { v };
    format!("{v:.decimals$}")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart as an SVG document.
pub fn svg(c: &Chart) -> String {
    let finite: Vec<(f64, f64)> = c
        .points
        .iter()
        .copied()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    let xs = || finite.iter().map(|p| p.0);
    let ys = || finite.iter().map(|p| p.1);
    let (x0, x1, xs_step) = axis(
        xs().fold(f64::INFINITY, f64::min),
        xs().fold(f64::NEG_INFINITY, f64::max),
        8,
    );
    let (y0, y1, ys_step) = axis(
        ys().fold(f64::INFINITY, f64::min),
        ys().fold(f64::NEG_INFINITY, f64::max),
        6,
    );
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let py = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        W / 2.0,
        esc(c.title)
    );
    for v in ticks(x0, x1, xs_step) {
        let x = px(v);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#e5e5e5"/>"##,
            TOP + ph
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            TOP + ph + 18.0,
            label(v, xs_step)
        );
    }
    for v in ticks(y0, y1, ys_step) {
        let y = py(v);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/>"##,
            LEFT + pw
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            y + 4.0,
            label(v, ys_step)
        );
    }
    let _ = writeln!(
        s,
        r#"<polyline points="{LEFT},{TOP} {LEFT},{b:.1} {r:.1},{b:.1}" fill="none" stroke="black"/>"#,
        b = TOP + ph,
        r = LEFT + pw
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        H - 15.0,
        esc(c.x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="20" y="{y:.1}" text-anchor="middle" transform="rotate(-90 20 {y:.1})">{}</text>"#,
        esc(c.y_label),
        y = TOP + ph / 2.0
    );
    if let Some((x, text)) = c.marker.filter(|m| m.0 >= x0 && m.0 <= x1) {
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#888888" stroke-dasharray="4 4"/>"##,
            TOP + ph,
            x = px(x)
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#666666">{}</text>"##,
            px(x) + 4.0,
            TOP + 14.0,
            esc(text)
        );
    }
    let line: Vec<String> = finite
        .iter()
        .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
        .collect();
    let _ = writeln!(
        s,
        r##"<polyline points="{}" fill="none" stroke="#1f77b4" stroke-width="2"/>"##,
        line.join(" ")
    );
    for &(x, y) in &finite {
        let _ = writeln!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#1f77b4"/>"##,
            px(x),
            py(y)
        );
    }
    if let (Some((fit, from)), Some(last)) = (c.fit, finite.last()) {
        let (a, b) = (from.max(x0), last.0);
        let clamp = |y: f64| y.clamp(y0, y1);
        if b > a && fit.slope.is_finite() && fit.intercept.is_finite() {
            let _ = writeln!(
                s,
                r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#d62728" stroke-width="1.5" stroke-dasharray="6 3"/>"##,
                px(a),
                py(clamp(fit.at(a))),
                px(b),
                py(clamp(fit.at(b)))
            );
        }
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#d62728">{}</text>"##,
        LEFT + pw - 6.0,
        TOP + 16.0,
        esc(c.note)
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart<'a>(points: &'a [(f64, f64)], note: &'a str) -> Chart<'a> {
        Chart {
            title: "operator RSS",
            x_label: "minutes",
            y_label: "MiB",
            points,
            fit: None,
            marker: None,
            note,
        }
    }

    #[test]
    fn axis_rounds_out_to_nice_steps() {
        assert_eq!(axis(0.0, 10.0, 5), (0.0, 10.0, 2.0));
        assert_eq!(axis(41.3, 47.9, 6), (40.0, 48.0, 2.0));
        assert_eq!(axis(41.3, 47.9, 8), (41.0, 48.0, 1.0));
        assert_eq!(axis(0.0, 30.0, 8), (0.0, 30.0, 5.0));
        let (a, b, step) = axis(0.12, 0.87, 4);
        assert_eq!(step, 0.2);
        assert!(
            (a - 0.0).abs() < 1e-12 && (b - 1.0).abs() < 1e-12,
            "{a} {b}"
        );
    }

    #[test]
    fn axis_of_a_flat_or_empty_series_still_has_a_range() {
        let (a, b, step) = axis(50.0, 50.0, 6);
        assert!(a < 50.0 && b > 50.0 && step > 0.0);
        let (a, b, step) = axis(f64::INFINITY, f64::NEG_INFINITY, 6);
        assert!(a < b && step > 0.0);
    }

    #[test]
    fn ticks_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0, 2.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(label(0.4, 0.2), "0.4");
        assert_eq!(label(45.0, 5.0), "45");
        assert_eq!(label(-1e-17, 0.5), "0.0");
    }

    #[test]
    fn svg_has_axes_the_line_the_fit_and_the_note() {
        let pts = [(0.0, 40.0), (1.0, 42.0), (2.0, 41.0), (3.0, 41.5)];
        let mut c = chart(&pts, "slope 0.12 MiB / 10 min");
        c.fit = Some((
            Fit {
                slope: 0.1,
                intercept: 41.0,
            },
            1.0,
        ));
        c.marker = Some((1.0, "warm-up"));
        let s = svg(&c);
        assert!(s.starts_with("<svg ") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("operator RSS") && s.contains("minutes") && s.contains("MiB"));
        assert!(s.contains("slope 0.12 MiB / 10 min"));
        assert!(s.contains("warm-up"));
        assert!(s.contains("stroke-dasharray=\"6 3\""), "the fitted line");
        assert_eq!(s.matches("<circle").count(), 4);
        // The data line has one coordinate pair per point.
        let data = s
            .lines()
            .find(|l| l.contains("#1f77b4") && l.starts_with("<polyline"))
            .expect("the data line");
        assert_eq!(data.matches(',').count(), 4);
        assert!(!s.contains("NaN") && !s.contains("inf"));
    }

    #[test]
    fn svg_escapes_text_and_survives_degenerate_data() {
        let s = svg(&chart(&[], "a < b & c"));
        assert!(s.contains("a &lt; b &amp; c"));
        assert!(!s.contains("NaN") && !s.contains("inf"));
        let one = [(3.0, 7.0), (f64::NAN, 1.0)];
        let s = svg(&chart(&one, ""));
        assert_eq!(s.matches("<circle").count(), 1);
        assert!(!s.contains("NaN") && !s.contains("inf"));
    }
}
