//! `kubectl longtask result` for a Task with output files (issue 35), run
//! as a user runs it. The Task really runs and finishes; its
//! `status.outputs` and download Secret are then written by the case, as
//! the operator writes them, with links to a loopback object server
//! ([`longtask_e2e::objects`]): the plugin's whole download path (the
//! Secret read as the user, the GETs, the checks, the files) is real.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use longtask_e2e::kubectl::Output;
use longtask_e2e::objects::{Objects, give_outputs};
use longtask_e2e::{Cluster, TestNs, root, sh_task, tasks, wait};

pub(super) const MINUTE: Duration = Duration::from_secs(60);
/// An expiry far ahead, and one past.
pub(super) const LATER: &str = "2099-01-01T00:00:00Z";
const PAST: &str = "2001-01-01T00:00:00Z";

pub(super) fn plugin(ns: &TestNs, args: &[&str]) -> Result<Output> {
    ns.kubectl.plugin(&ns.name, args)
}

/// A fresh directory for this case's downloads.
pub(super) fn scratch(ns: &TestNs, what: &str) -> Result<PathBuf> {
    let dir = root()
        .join("target/e2e-downloads")
        .join(&ns.name)
        .join(what);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.parent().unwrap_or(&dir))?;
    Ok(dir)
}

/// Bytes that differ all along (not a run of one byte).
pub(super) fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect()
}

/// Runs Task `name` to Completed.
pub(super) async fn finished(ns: &TestNs, name: &str) -> Result<()> {
    ns.apply(&sh_task(name, r#"echo inline > "$LONGTASK_RESULT""#, ""))?;
    wait::condition(&tasks(&ns.client, &ns.name), name, "Complete", MINUTE).await?;
    Ok(())
}

pub(super) fn exited(out: &Output, code: i32, what: &str) -> Result<()> {
    ensure!(
        out.code == Some(code),
        "{what}: expected exit {code}, got {out}"
    );
    Ok(())
}

pub(super) fn same_file(path: &Path, want: &[u8]) -> Result<()> {
    let got = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    ensure!(
        got == want,
        "{}: {} bytes, not the {} uploaded",
        path.display(),
        got.len(),
        want.len()
    );
    Ok(())
}

/// `-o DIR` downloads every output under its name (directories made),
/// byte-exact; `--file` picks some; one `--file` goes to stdout; `get`
/// and `describe` show them; without -o the inline result is printed
/// as before, with a word on the files.
pub async fn plugin_result_downloads_outputs(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let store = Objects::start()?;
    let model = bytes(3 * 1024 * 1024 + 17, 1);
    let (a, b) = (bytes(5000, 2), bytes(0, 3));
    let listed: [(&str, &[u8]); 3] = [
        ("model.bin", &model),
        ("plots/a.png", &a),
        ("plots/deep/b.txt", &b),
    ];
    for (name, data) in &listed {
        store.put(name, data.to_vec());
    }
    finished(&ns, "train").await?;
    give_outputs(&ns, "train", &listed, &|n| store.url(n), LATER)?;

    let dir = scratch(&ns, "all")?;
    let out = plugin(
        &ns,
        &["result", "train", "-o", dir.to_str().unwrap_or_default()],
    )?;
    exited(&out, 0, "result train -o DIR")?;
    for (name, data) in &listed {
        same_file(&dir.join(name), data)?;
    }
    ensure!(
        out.stderr.contains("downloaded plots/a.png (4.9Ki)")
            && out.stderr.contains("downloaded 3 files, 3.0Mi to "),
        "one line per file and a summary on stderr (not a terminal): {out}"
    );
    let leftovers: Vec<_> = walk(&dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".part"))
        .collect();
    ensure!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    picks(&ns, &model, &a)?;
    shows(&ns, &model)
}

/// `--file` into a directory, and one `--file` to stdout.
fn picks(ns: &TestNs, model: &[u8], a: &[u8]) -> Result<()> {
    let some = scratch(ns, "some")?;
    let out = plugin(
        ns,
        &[
            "result",
            "train",
            "-o",
            some.to_str().unwrap_or_default(),
            "--file",
            "plots/a.png",
        ],
    )?;
    exited(&out, 0, "--file plots/a.png")?;
    same_file(&some.join("plots/a.png"), a)?;
    ensure!(
        walk(&some).len() == 1,
        "more than the one file: {:?}",
        walk(&some)
    );

    let one = plugin(ns, &["result", "train", "--file", "model.bin"])?;
    exited(&one, 0, "--file model.bin to stdout")?;
    ensure!(
        one.stdout == model,
        "stdout: {} bytes, not the model's {}",
        one.stdout.len(),
        model.len()
    );
    Ok(())
}

/// Without -o the inline result, as before, and a word on the files;
/// `get` and `describe` show them.
fn shows(ns: &TestNs, model: &[u8]) -> Result<()> {
    let inline = plugin(ns, &["result", "train"])?;
    exited(&inline, 0, "result train")?;
    ensure!(
        inline.stdout() == "inline\n" && inline.stderr.contains("also has output files (3 files, "),
        "the inline result, and a word on the files: {inline}"
    );
    let get = plugin(ns, &["get", "train"])?;
    ensure!(
        get.stdout().contains("OUTPUTS") && get.stdout().contains("3 files, "),
        "{get}"
    );
    let describe = plugin(ns, &["describe", "train"])?;
    let digest = longtask_e2e::objects::digest(model);
    let listed = describe.stdout();
    let line = listed
        .lines()
        .find(|l| l.trim_start().starts_with("model.bin "));
    ensure!(
        line.is_some_and(|l| l.contains(" 3.0Mi ") && l.ends_with(&digest)),
        "describe lists the files with size and digest: {describe}"
    );
    Ok(())
}

/// Every file below `dir`, as paths.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            found.extend(walk(&p));
        } else {
            found.push(p);
        }
    }
    found
}

/// Bytes that are not the listed ones, a name that climbs out, an
/// expired or missing grant, a user who may not read the Secret, a
/// running Task and unknown names: each exits 1 with a message naming
/// what, and nothing wrong is left as a file.
pub async fn plugin_result_refuses_bad_outputs(_c: Arc<Cluster>, ns: TestNs) -> Result<()> {
    let store = Objects::start()?;
    let good = bytes(70_000, 4);
    store.put("good.bin", good.clone());
    store.put("evil.bin", bytes(70_000, 5));
    finished(&ns, "swapped").await?;
    give_outputs(
        &ns,
        "swapped",
        &[("evil.bin", &bytes(70_000, 6)), ("good.bin", &good)],
        &|n| store.url(n),
        LATER,
    )?;
    wrong_bytes(&ns)?;
    climbing_name(&ns, &store).await?;
    grants(&ns, &store, &good).await?;
    refusals(&ns, &store).await
}

/// Bytes that are not the listed ones: nothing left in the directory,
/// and not all of them printed.
fn wrong_bytes(ns: &TestNs) -> Result<()> {
    let dir = scratch(ns, "swapped")?;
    let d = dir.to_str().unwrap_or_default();
    let out = plugin(ns, &["result", "swapped", "-o", d])?;
    exited(&out, 1, "a changed object")?;
    ensure!(
        out.stderr.contains("cannot download output \"evil.bin\"") && out.stderr.contains("sha256"),
        "the message names the file and the digest: {out}"
    );
    ensure!(
        walk(&dir).is_empty(),
        "files left after the mismatch: {:?}",
        walk(&dir)
    );
    let out = plugin(ns, &["result", "swapped", "--file", "evil.bin"])?;
    exited(&out, 1, "a changed object to stdout")?;
    ensure!(
        out.stderr
            .contains("output \"evil.bin\" is not what the Task uploaded"),
        "{out}"
    );
    ensure!(
        out.stdout.len() < 70_000,
        "all of the wrong bytes were printed: {}",
        out.stdout.len()
    );
    Ok(())
}

/// A name that climbs out of the directory is refused, nothing written.
async fn climbing_name(ns: &TestNs, store: &Objects) -> Result<()> {
    finished(ns, "climber").await?;
    give_outputs(
        ns,
        "climber",
        &[("../../escaped", b"x")],
        &|n| store.url(n),
        LATER,
    )?;
    let dir = scratch(ns, "climber")?;
    let out = plugin(
        ns,
        &[
            "result",
            "climber",
            "-o",
            dir.join("in").to_str().unwrap_or_default(),
        ],
    )?;
    exited(&out, 1, "a name with ..")?;
    ensure!(
        out.stderr.contains("refusing output \"../../escaped\""),
        "{out}"
    );
    ensure!(
        !dir.join("escaped").exists() && !dir.parent().unwrap_or(&dir).join("escaped").exists(),
        "written outside"
    );
    Ok(())
}

/// An expired grant and a missing Secret say which Secret, and that the
/// operator writes and renews it.
async fn grants(ns: &TestNs, store: &Objects, good: &[u8]) -> Result<()> {
    finished(ns, "stale").await?;
    give_outputs(ns, "stale", &[("good.bin", good)], &|n| store.url(n), PAST)?;
    let out = plugin(
        ns,
        &[
            "result",
            "stale",
            "-o",
            scratch(ns, "stale")?.to_str().unwrap_or_default(),
        ],
    )?;
    exited(&out, 1, "an expired grant")?;
    let secret = format!("{}/stale-outputs", ns.name);
    ensure!(
        out.stderr.contains(&format!(
            "the download links in the Secret {secret} expired at"
        )) && out.stderr.contains("the operator renews them"),
        "{out}"
    );

    finished(ns, "unsigned").await?;
    give_outputs(
        ns,
        "unsigned",
        &[("good.bin", good)],
        &|n| store.url(n),
        LATER,
    )?;
    ns.k(&["delete", "secret", "unsigned-outputs"])?;
    let out = plugin(ns, &["result", "unsigned", "--file", "good.bin"])?;
    exited(&out, 1, "no Secret")?;
    ensure!(
        out.stderr.contains(&format!(
            "the download Secret {}/unsigned-outputs does not exist",
            ns.name
        )),
        "{out}"
    );
    Ok(())
}

/// The rest of the refusals: a user without `get` on the Secret, a Task
/// still running, a Task without outputs, an unknown output name, and a
/// store that refuses.
async fn refusals(ns: &TestNs, store: &Objects) -> Result<()> {
    ns.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: task-reader\n\
         rules:\n- apiGroups: [longtask.dev]\n  resources: [tasks]\n  verbs: [get, list, watch]\n\
         - apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: task-reader\n\
         roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: task-reader\n\
         subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: task-reader\n",
    )?;
    let out = plugin(
        ns,
        &[
            "--as",
            "task-reader",
            "result",
            "swapped",
            "--file",
            "good.bin",
        ],
    )?;
    exited(&out, 1, "without get on the Secret")?;
    ensure!(
        out.stderr.contains(&format!(
            "forbidden: you may not get the Secret {ns}/swapped-outputs, which holds the download links of task swapped's outputs; ask for `get` on secrets/swapped-outputs in namespace {ns}",
            ns = ns.name
        )),
        "{out}"
    );
    ns.apply(&sh_task("busy", "sleep 300", ""))?;
    wait::condition(&tasks(&ns.client, &ns.name), "busy", "Running", MINUTE).await?;
    let out = plugin(ns, &["result", "busy", "--file", "x"])?;
    exited(&out, 1, "a running Task")?;
    ensure!(
        out.stderr.contains(
            "task busy is Running: its output files can be downloaded once it has finished"
        ),
        "{out}"
    );
    finished(ns, "plain").await?;
    let out = plugin(ns, &["result", "plain", "--file", "x"])?;
    exited(&out, 1, "a Task without outputs")?;
    ensure!(
        out.stderr.contains("task plain has no output files"),
        "{out}"
    );
    let out = plugin(ns, &["result", "swapped", "--file", "nope"])?;
    exited(&out, 1, "an unknown name")?;
    ensure!(
        out.stderr.contains(
            r#"task swapped has no output named "nope" (it has "evil.bin" and "good.bin")"#
        ),
        "{out}"
    );
    store_refuses(ns, store)
}

/// The store's own refusal is shown as it said it.
fn store_refuses(ns: &TestNs, store: &Objects) -> Result<()> {
    store.refuse("good.bin", 403, "AccessDenied");
    let out = plugin(ns, &["result", "swapped", "--file", "good.bin"])?;
    exited(&out, 1, "a store that refuses")?;
    ensure!(
        out.stderr
            .contains("the output store refused output \"good.bin\": HTTP 403: AccessDenied"),
        "{out}"
    );
    Ok(())
}
