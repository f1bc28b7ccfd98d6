//! The monitoring files without a cluster: the chart's PrometheusRule
//! renders, at its default values, exactly the groups of
//! monitoring/alerts.rules.yaml; thresholds set as values reach the rules
//! and still pass `promtool check rules`; every runbook link names a
//! section of docs/operations.md; the dashboard ConfigMap carries
//! monitoring/dashboard.json as it is. Needs tools/helm/build and
//! tools/prometheus/build.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use longtask_e2e::root;

fn tool(rel: &str, build: &str) -> PathBuf {
    let p = root().join(rel);
    assert!(p.exists(), "{} is missing: run {build}", p.display());
    p
}

/// `helm template` of the chart with `args`: the rendered objects.
fn render(args: &[&str]) -> Result<Vec<Value>, String> {
    let out = Command::new(tool("tools/helm/bin/helm", "tools/helm/build"))
        .args([
            "template",
            "longtask",
            "charts/longtask",
            "--namespace",
            "mon",
        ])
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&String::from_utf8(out.stdout).unwrap()).unwrap();
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

fn only(objs: &[Value], kind: &str) -> Value {
    let found: Vec<&Value> = objs.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "{} objects of kind {kind}", found.len());
    found[0].clone()
}

fn plain_rules() -> Value {
    let text = std::fs::read_to_string(root().join("monitoring/alerts.rules.yaml")).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

fn rules(groups: &Value) -> Vec<Value> {
    groups
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn the_prometheus_rule_is_the_plain_file_at_default_values() {
    let off = render(&[]).unwrap();
    assert!(
        off.iter().all(|o| o["kind"] != "PrometheusRule"),
        "rendered while disabled"
    );
    let objs = render(&["--set", "metrics.prometheusRule.enabled=true"]).unwrap();
    let rule = only(&objs, "PrometheusRule");
    assert_eq!(rule["metadata"]["namespace"], "mon");
    let plain = plain_rules();
    let (chart, file) = (rules(&rule["spec"]["groups"]), rules(&plain["groups"]));
    assert_eq!(chart.len(), file.len(), "rule counts differ");
    for (c, f) in chart.iter().zip(&file) {
        assert_eq!(
            c, f,
            "rule {} differs between the chart and the plain file",
            f["alert"]
        );
    }
    assert_eq!(rule["spec"]["groups"], plain["groups"]);
}

#[test]
fn thresholds_reach_the_rules_and_stay_valid() {
    let objs = render(&[
        "--set",
        "metrics.prometheusRule.enabled=true",
        "--set",
        "metrics.prometheusRule.thresholds.queuedSeconds=120",
        "--set",
        "metrics.prometheusRule.thresholds.operatorAbsentFor=30s",
        "--set-json",
        "metrics.prometheusRule.thresholds.reconcileErrorRatio=0.25",
        "--set",
        "metrics.prometheusRule.thresholds.startTimeoutsPer15m=2",
        "--set",
        "metrics.prometheusRule.runbookBaseURL=https://runbooks.example/longtask",
    ])
    .unwrap();
    let rule = only(&objs, "PrometheusRule");
    let all = rules(&rule["spec"]["groups"]);
    let by = |name: &str| all.iter().find(|r| r["alert"] == name).unwrap().clone();
    assert!(
        by("LongtaskTaskQueuedTooLong")["expr"]
            .as_str()
            .unwrap()
            .ends_with("> 120")
    );
    assert!(
        by("LongtaskTaskQueuedTooLong")["annotations"]["description"]
            .as_str()
            .unwrap()
            .contains("more than 120s")
    );
    assert_eq!(by("LongtaskOperatorAbsent")["for"], "30s");
    assert!(
        by("LongtaskReconcileErrors")["expr"]
            .as_str()
            .unwrap()
            .ends_with("> 0.25")
    );
    assert!(
        by("LongtaskReconcileErrors")["annotations"]["description"]
            .as_str()
            .unwrap()
            .contains("more than 25%")
    );
    assert!(
        by("LongtaskStartTimeouts")["expr"]
            .as_str()
            .unwrap()
            .ends_with("> 2")
    );
    assert_eq!(
        by("LongtaskNoLeader")["annotations"]["runbook_url"],
        "https://runbooks.example/longtask#longtasknoleader"
    );
    // What the chart renders is a rules file promtool accepts.
    let dir = std::env::temp_dir().join(format!("longtask-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rules.yaml");
    let groups = serde_json::json!({ "groups": rule["spec"]["groups"] });
    std::fs::write(&file, serde_json::to_string(&groups).unwrap()).unwrap();
    let out = Command::new(tool(
        "tools/prometheus/bin/promtool",
        "tools/prometheus/build",
    ))
    .args(["check", "rules"])
    .arg(&file)
    .output()
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "promtool check rules: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_schema_refuses_a_misspelt_threshold() {
    let err = render(&["--set", "metrics.prometheusRule.thresholds.queueSeconds=60"]).unwrap_err();
    assert!(err.contains("queueSeconds"), "{err}");
    let err = render(&[
        "--set",
        "metrics.prometheusRule.thresholds.noLeaderFor=soon",
    ])
    .unwrap_err();
    assert!(err.contains("noLeaderFor"), "{err}");
}

/// GitHub's anchor of a Markdown heading: lower case, spaces to dashes,
/// punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn every_alert_has_a_summary_a_description_and_a_runbook_section() {
    let docs = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    let anchors: Vec<String> = docs
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect();
    let all = rules(&plain_rules()["groups"]);
    assert_eq!(all.len(), 11);
    for r in &all {
        let name = r["alert"].as_str().unwrap();
        let a = &r["annotations"];
        assert!(
            a["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{name}: summary"
        );
        let description = a["description"].as_str().unwrap_or_default();
        assert!(!description.is_empty(), "{name}: description");
        let url = a["runbook_url"].as_str().unwrap_or_default();
        let (base, section) = url.split_once('#').unwrap_or_default();
        assert_eq!(base, "docs/operations.md", "{name}: {url}");
        assert_eq!(section, name.to_lowercase(), "{name}: {url}");
        assert!(
            anchors.iter().any(|h| h == section),
            "{name}: no section #{section} in docs/operations.md"
        );
    }
}

#[test]
fn the_dashboard_config_map_carries_the_dashboard() {
    let off = render(&[]).unwrap();
    assert!(
        off.iter().all(|o| o["kind"] != "ConfigMap"),
        "rendered while disabled"
    );
    let objs = render(&["--set", "metrics.dashboard.enabled=true"]).unwrap();
    let cm = only(&objs, "ConfigMap");
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    let file = std::fs::read_to_string(root().join("monitoring/dashboard.json")).unwrap();
    let shipped = cm["data"]["longtask.json"].as_str().unwrap();
    assert_eq!(
        shipped.trim_end(),
        file.trim_end(),
        "the ConfigMap's dashboard differs"
    );
    let _: Value = serde_json::from_str(shipped).unwrap();
}
