//! The Grafana dashboard (monitoring/dashboard.json) cannot drift from the
//! operator: every query names only metrics the operator's registry
//! exports (or Prometheus' own `up`), every range of a rate or increase
//! is `$__rate_interval`, and every panel reads the `datasource` variable.

use std::collections::BTreeSet;

use longtask_operator::telemetry::metrics::Metrics;
use serde_json::Value;

const RATE_INTERVAL: &str = "$__rate_interval";

fn dashboard() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../monitoring/dashboard.json");
    let text = std::fs::read_to_string(path).expect("read monitoring/dashboard.json");
    serde_json::from_str(&text).expect("monitoring/dashboard.json is JSON")
}

/// Sample names the operator exports: each row of its metrics table,
/// histograms with their `_bucket`, `_sum` and `_count` series.
fn exported() -> BTreeSet<String> {
    let table = Metrics::new().markdown_table();
    let mut out = BTreeSet::new();
    for row in table.lines().skip(2) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (name, kind) = (cells[1].trim_matches('`'), cells[2]);
        out.insert(name.to_owned());
        if kind == "histogram" {
            for s in ["_bucket", "_sum", "_count"] {
                out.insert(format!("{name}{s}"));
            }
        }
    }
    out
}

/// PromQL words that are no metric: functions, aggregations, keywords.
const WORDS: &[&str] = &[
    "sum",
    "max",
    "min",
    "avg",
    "count",
    "by",
    "without",
    "rate",
    "irate",
    "increase",
    "histogram_quantile",
    "max_over_time",
    "min_over_time",
    "offset",
    "unless",
    "or",
    "and",
    "on",
    "ignoring",
    "group_left",
    "abs",
    "clamp_min",
    "topk",
    "bottomk",
];

/// The metric names `expr` selects: identifiers outside strings, label
/// matchers (`{...}`), ranges (`[...]`) and grouping lists (`by (...)`)
/// that are no PromQL word.
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut braces, mut brackets, mut quoted) = (0, 0, false);
    // Set after `by`, `without`, `on`, ...: the next parenthesis holds labels.
    let mut grouping = false;
    let mut in_grouping = false;
    let flush = |word: &mut String, out: &mut Vec<String>, grouping: &mut bool| {
        if !word.is_empty() {
            let w = std::mem::take(word);
            if [
                "by",
                "without",
                "on",
                "ignoring",
                "group_left",
                "group_right",
            ]
            .contains(&w.as_str())
            {
                *grouping = true;
            } else if !WORDS.contains(&w.as_str())
                && !w.chars().next().is_some_and(|c| c.is_ascii_digit())
            {
                out.push(w);
            }
        }
    };
    for c in expr.chars() {
        if quoted {
            quoted = c != '"';
            continue;
        }
        let outside = braces == 0 && brackets == 0 && !in_grouping;
        if outside && (c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            word.push(c);
            continue;
        }
        flush(&mut word, &mut out, &mut grouping);
        match c {
            '"' => quoted = true,
            '{' => braces += 1,
            '}' => braces -= 1,
            '[' => brackets += 1,
            ']' => brackets -= 1,
            '(' if grouping => {
                in_grouping = true;
                grouping = false;
            }
            ')' if in_grouping => in_grouping = false,
            _ => {}
        }
    }
    flush(&mut word, &mut out, &mut grouping);
    out
}

/// Every `[...]` range in `expr`.
fn ranges(expr: &str) -> Vec<&str> {
    expr.split('[')
        .skip(1)
        .filter_map(|s| s.split(']').next())
        .collect()
}

/// (panel title, expr) of every query, in rows and panels.
fn queries(d: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut panels: Vec<&Value> = d["panels"].as_array().expect("panels").iter().collect();
    while let Some(p) = panels.pop() {
        if let Some(inner) = p["panels"].as_array() {
            panels.extend(inner);
        }
        for t in p["targets"].as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or_default().to_owned();
            out.push((title, t["expr"].as_str().expect("expr").to_owned()));
        }
    }
    out
}

#[test]
fn names_are_parsed_from_queries() {
    assert_eq!(
        metric_names(
            r#"sum by (le, outcome) (rate(a_b_bucket{x=~"y|z"}[$__rate_interval])) / on (k) c"#
        ),
        ["a_b_bucket", "c"]
    );
    assert_eq!(
        metric_names("histogram_quantile(0.95, sum by (le) (rate(m_bucket[5m])))"),
        ["m_bucket"]
    );
    assert_eq!(
        ranges("rate(a[5m]) + increase(b[$__rate_interval])"),
        ["5m", RATE_INTERVAL]
    );
}

#[test]
fn every_query_names_an_exported_metric() {
    let exported = exported();
    let qs = queries(&dashboard());
    assert!(qs.len() >= 20, "only {} queries", qs.len());
    let mut seen = BTreeSet::new();
    for (title, expr) in &qs {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "{title}: no metric in {expr}");
        for n in names {
            assert!(
                n == "up" || exported.contains(&n),
                "{title}: {n} is not exported by the operator (query {expr})"
            );
            seen.insert(n);
        }
    }
    // What the issue asks the dashboard to show.
    for want in [
        "longtask_tasks",
        "longtask_task_queue_seconds_bucket",
        "longtask_task_results_total",
        "longtask_events_total",
        "longtask_reconciles_total",
        "longtask_api_requests_total",
        "longtask_leader",
        "process_resident_memory_bytes",
    ] {
        assert!(seen.contains(want), "no panel shows {want}");
    }
}

#[test]
fn rates_use_the_rate_interval_and_panels_the_datasource_variable() {
    let d = dashboard();
    let vars = d["templating"]["list"].as_array().expect("templating.list");
    assert!(
        vars.iter().any(|v| v["type"] == "datasource"
            && v["name"] == "datasource"
            && v["query"] == "prometheus"),
        "no Prometheus datasource variable named datasource"
    );
    for (title, expr) in queries(&d) {
        for r in ranges(&expr) {
            assert_eq!(r, RATE_INTERVAL, "{title}: range [{r}] in {expr}");
        }
    }
    let mut panels: Vec<&Value> = d["panels"].as_array().expect("panels").iter().collect();
    while let Some(p) = panels.pop() {
        if let Some(inner) = p["panels"].as_array() {
            panels.extend(inner);
        }
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        for t in p["targets"].as_array().into_iter().flatten() {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        }
    }
}
