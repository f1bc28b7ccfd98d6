//! A strict reader of the OpenMetrics 1.0 text format, enough to hold
//! `/metrics` to the spec: metadata before samples, no interleaved
//! families, sample names that fit their family's type, well-formed label
//! sets and values, cumulative histograms ending in `+Inf` that agree with
//! `_count`, and a final `# EOF`.

use std::collections::BTreeMap;

use anyhow::{Result, bail, ensure};

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// One metric family with its samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    pub name: String,
    pub kind: String,
    pub help: Option<String>,
    pub samples: Vec<Sample>,
}

const TYPES: [&str; 8] = [
    "counter",
    "gauge",
    "histogram",
    "gaugehistogram",
    "stateset",
    "info",
    "summary",
    "unknown",
];

fn is_name(s: &str, colon: bool) -> bool {
    let mut c = s.chars();
    let ok_first = |ch: char| ch.is_ascii_alphabetic() || ch == '_' || (colon && ch == ':');
    c.next().is_some_and(ok_first)
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || (colon && ch == ':'))
}

fn parse_value(s: &str) -> Result<f64> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => {
            ensure!(
                !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)),
                "bad number {s:?}"
            );
            Ok(s.parse()?)
        }
    }
}

/// Splits `name{labels} value` into its parts.
fn parse_sample(line: &str) -> Result<Sample> {
    let (name, rest) = match line.find(['{', ' ']) {
        Some(i) => line.split_at(i),
        None => bail!("sample without value: {line:?}"),
    };
    ensure!(is_name(name, true), "bad metric name {name:?}");
    let mut labels = BTreeMap::new();
    let rest = if let Some(mut r) = rest.strip_prefix('{') {
        loop {
            if let Some(after) = r.strip_prefix('}') {
                r = after;
                break;
            }
            let eq = r
                .find('=')
                .ok_or_else(|| anyhow::anyhow!("label without = in {line:?}"))?;
            let key = &r[..eq];
            ensure!(is_name(key, false), "bad label name {key:?} in {line:?}");
            r = r[eq + 1..]
                .strip_prefix('"')
                .ok_or_else(|| anyhow::anyhow!("unquoted label value in {line:?}"))?;
            let mut value = String::new();
            let mut chars = r.char_indices();
            let end = loop {
                match chars.next() {
                    Some((i, '"')) => break i,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, '\\')) => value.push('\\'),
                        other => bail!("bad escape {other:?} in {line:?}"),
                    },
                    Some((_, '\n')) | None => bail!("unterminated label value in {line:?}"),
                    Some((_, c)) => value.push(c),
                }
            };
            ensure!(
                labels.insert(key.to_owned(), value).is_none(),
                "label {key} twice in {line:?}"
            );
            r = &r[end + 1..];
            if let Some(after) = r.strip_prefix(',') {
                r = after;
            }
        }
        r
    } else {
        rest
    };
    let rest = rest
        .strip_prefix(' ')
        .ok_or_else(|| anyhow::anyhow!("no space before the value in {line:?}"))?;
    let rest = rest.split(" # ").next().unwrap_or(rest); // exemplar
    let mut parts = rest.split(' ');
    let value = parse_value(parts.next().unwrap_or_default())?;
    if let Some(ts) = parts.next() {
        parse_value(ts)?;
    }
    ensure!(parts.next().is_none(), "trailing text in {line:?}");
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

fn suffix_ok(kind: &str, family: &str, sample: &str) -> bool {
    let Some(suffix) = sample.strip_prefix(family) else {
        return false;
    };
    match kind {
        "counter" => matches!(suffix, "_total" | "_created"),
        "histogram" | "gaugehistogram" => {
            matches!(
                suffix,
                "_bucket" | "_count" | "_sum" | "_created" | "_gcount" | "_gsum"
            )
        }
        "summary" => matches!(suffix, "" | "_count" | "_sum" | "_created"),
        "info" => suffix == "_info",
        _ => suffix.is_empty(),
    }
}

/// Parses and checks a whole exposition.
pub fn parse(text: &str) -> Result<Vec<Family>> {
    ensure!(
        text.ends_with("# EOF\n") || text.ends_with("# EOF"),
        "no final # EOF"
    );
    let mut families: Vec<Family> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut eof = false;
    for line in text.lines() {
        ensure!(!eof, "text after # EOF: {line:?}");
        if line == "# EOF" {
            eof = true;
            continue;
        }
        if let Some(meta) = line.strip_prefix("# ") {
            let mut p = meta.splitn(3, ' ');
            let (what, name, rest) = (p.next(), p.next(), p.next());
            let (Some(what), Some(name)) = (what, name) else {
                bail!("bad metadata line {line:?}");
            };
            ensure!(is_name(name, true), "bad family name {name:?}");
            let starts_new = families.last().is_none_or(|f| f.name != name);
            if starts_new {
                ensure!(seen.insert(name.to_owned()), "family {name} interleaved");
                families.push(Family {
                    name: name.to_owned(),
                    kind: "unknown".to_owned(),
                    help: None,
                    samples: Vec::new(),
                });
            }
            let f = families.last_mut().unwrap_or_else(|| unreachable!());
            ensure!(f.samples.is_empty(), "metadata after samples for {name}");
            match (what, rest) {
                ("TYPE", Some(t)) if TYPES.contains(&t) => f.kind = t.to_owned(),
                ("HELP", r) => f.help = Some(r.unwrap_or_default().to_owned()),
                ("UNIT", _) => {}
                _ => bail!("bad metadata line {line:?}"),
            }
            continue;
        }
        ensure!(!line.starts_with('#'), "bad comment line {line:?}");
        ensure!(!line.is_empty(), "empty line");
        let s = parse_sample(line)?;
        let f = families
            .last_mut()
            .ok_or_else(|| anyhow::anyhow!("sample before any family: {line:?}"))?;
        ensure!(
            suffix_ok(&f.kind, &f.name, &s.name),
            "sample {} does not belong to {} family {}",
            s.name,
            f.kind,
            f.name
        );
        if f.kind == "counter" && s.name.ends_with("_total") {
            ensure!(s.value >= 0.0, "negative counter {line:?}");
        }
        f.samples.push(s);
    }
    ensure!(eof, "no # EOF");
    for f in &families {
        if f.kind == "histogram" {
            check_histogram(f)?;
        }
    }
    Ok(families)
}

fn check_histogram(f: &Family) -> Result<()> {
    let mut series: BTreeMap<Vec<(String, String)>, Vec<&Sample>> = BTreeMap::new();
    for s in &f.samples {
        let key = s
            .labels
            .iter()
            .filter(|(k, _)| *k != "le")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        series.entry(key).or_default().push(s);
    }
    for (key, samples) in series {
        let mut last_le = f64::NEG_INFINITY;
        let mut last_count = 0.0;
        let mut inf = None;
        let mut count = None;
        for s in samples {
            if s.name.ends_with("_bucket") {
                let le = parse_value(s.labels.get("le").map_or("", String::as_str))?;
                ensure!(le > last_le, "{}: buckets not ascending at le={le}", f.name);
                ensure!(s.value >= last_count, "{}: buckets not cumulative", f.name);
                last_le = le;
                last_count = s.value;
                if le.is_infinite() {
                    inf = Some(s.value);
                }
            } else if s.name.ends_with("_count") {
                count = Some(s.value);
            }
        }
        ensure!(inf.is_some(), "{} {key:?}: no +Inf bucket", f.name);
        if let Some(c) = count {
            ensure!(
                inf == Some(c),
                "{} {key:?}: _count {c} != +Inf bucket",
                f.name
            );
        }
    }
    Ok(())
}

/// Sum of the samples named `name` whose labels include all of `labels`.
pub fn value(families: &[Family], name: &str, labels: &[(&str, &str)]) -> f64 {
    families
        .iter()
        .flat_map(|f| &f.samples)
        .filter(|s| s.name == name)
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum::<f64>()
        + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_and_bad() {
        let good = "# HELP a_x Things.\n# TYPE a_x counter\na_x_total{v=\"g\\\"et\"} 3\n# TYPE h histogram\nh_bucket{le=\"1.0\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3.5\nh_count 2\n# EOF\n";
        let f = parse(good).unwrap();
        assert_eq!(value(&f, "a_x_total", &[("v", "g\"et")]), 3.0);
        for bad in [
            "# TYPE a counter\na_total 1\n",
            "# TYPE a counter\na 1\n# EOF\n",
            "# TYPE a gauge\na{x=1} 1\n# EOF\n",
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n# EOF\n",
            "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 3\n# EOF\n",
            "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\n# TYPE a gauge\n# EOF\n",
            "# TYPE a gauge\na 1\n# EOF\nx 1\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }
}
