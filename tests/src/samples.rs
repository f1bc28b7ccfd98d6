//! Samples apply and reach the end state their `# expect:` header
//! documents, e.g. `# expect: phase=Completed reason=Succeeded result=42`.
//! Adding a sample adds a test: `manifests/samples/*.yaml` on process nodes
//! (`e2e`), `manifests/samples/pods/*.yaml` on container nodes
//! (`containers`).

use std::path::Path;
use std::time::Duration;

use crate::{TestNs, tasks, wait};
use anyhow::{Context as _, Result, bail, ensure};
use serde_json::Value;

/// One sample: its file, the Task's name and what it must end with.
struct Sample {
    file: String,
    yaml: String,
    task: String,
    expect: Vec<(String, String)>,
}

fn read_samples(dir: &Path, standins: &[(&str, &str)]) -> Result<Vec<Sample>> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let file = e.file_name().to_string_lossy().into_owned();
        if !file.ends_with(".yaml") {
            continue;
        }
        let mut yaml = std::fs::read_to_string(e.path())?;
        for (public, local) in standins {
            yaml = yaml.replace(&format!("image: {public}"), &format!("image: {local}"));
        }
        let expect: Vec<(String, String)> = yaml
            .lines()
            .filter_map(|l| l.strip_prefix("# expect:"))
            .flat_map(|l| l.split_whitespace())
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        ensure!(!expect.is_empty(), "{file}: no `# expect:` line");
        let task = task_name(&yaml).with_context(|| format!("{file}: no Task in it"))?;
        out.push(Sample {
            file,
            yaml,
            task,
            expect,
        });
    }
    Ok(out)
}

/// `metadata.name` of the document of kind Task.
fn task_name(yaml: &str) -> Option<String> {
    let doc = yaml
        .split("\n---")
        .find(|d| d.lines().any(|l| l == "kind: Task"))?;
    let mut in_meta = false;
    for l in doc.lines() {
        if l == "metadata:" {
            in_meta = true;
        } else if in_meta && let Some(n) = l.strip_prefix("  name: ") {
            return Some(n.trim().to_owned());
        } else if !l.starts_with(' ') {
            in_meta = false;
        }
    }
    None
}

/// The status field a key names, as text.
fn field(st: &Value, key: &str) -> Result<String> {
    let v = match key {
        "phase" | "reason" | "attempts" | "exitCode" => &st[key],
        "result" => &st["result"],
        "progress" => &st["progress"]["percent"],
        _ => bail!("unknown expect key {key:?}"),
    };
    Ok(match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

async fn check(ns: &TestNs, s: &Sample) -> Result<()> {
    ns.apply(&s.yaml).with_context(|| s.file.clone())?;
    let api = tasks(&ns.client, &ns.name);
    let t = wait::condition(&api, &s.task, "Finished", Duration::from_secs(120))
        .await
        .with_context(|| s.file.clone())?;
    let st = &t["status"];
    for (k, want) in &s.expect {
        let got = field(st, k)?;
        ensure!(
            &got == want,
            "{}: {k} is {got:?}, expected {want:?}; status {st}",
            s.file
        );
    }
    Ok(())
}

/// Applies every sample in `dir` (at least `min` of them) in `ns`, with
/// each `image: PUBLIC` of `standins` replaced by its local stand-in (no
/// registry is reachable here), and checks their end states.
pub async fn reach_their_end_state(
    ns: &TestNs,
    dir: &Path,
    min: usize,
    standins: &[(&str, &str)],
) -> Result<()> {
    let samples = read_samples(dir, standins)?;
    ensure!(
        samples.len() >= min,
        "only {} samples in {}",
        samples.len(),
        dir.display()
    );
    let results = futures::future::join_all(samples.iter().map(|s| check(ns, s))).await;
    let failed: Vec<String> = results
        .into_iter()
        .filter_map(|r| r.err().map(|e| format!("{e:#}")))
        .collect();
    ensure!(failed.is_empty(), "{}", failed.join("\n"));
    println!(
        "samples: {} reached their documented end state",
        samples.len()
    );
    Ok(())
}
