//! The upstreams' results (`spec.after`), handed to the program as files:
//! `$LONGTASK_INPUTS/<upstream>/result` and `$LONGTASK_INPUTS/<upstream>/exit-code`.
//!
//! The operator puts each upstream's result and exit code in the worker's
//! environment, read by the kubelet from the upstream's result ConfigMap
//! as the pod starts (so the pod reads nothing but what its own spec
//! names, in its own namespace). The worker writes them into its private
//! run directory, and the program gets the directory instead of the
//! variables (`run::spawn` removes them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crds::after::inputs;

use crate::say;

/// Writes the upstreams' files under `run_dir/inputs`; returns the
/// directory to hand the program as `$LONGTASK_INPUTS`, or `None` when the
/// Task has no upstreams (or no directory could be made, which it says).
/// An upstream without a result (it left none, or it is stored
/// compressed) gets no `result` file; one without an exit code no
/// `exit-code` file; its directory exists either way.
pub fn prepare(vars: &HashMap<String, String>, run_dir: Option<&Path>) -> Option<PathBuf> {
    let names = vars.get(inputs::NAMES).filter(|n| !n.is_empty())?;
    let Some(run_dir) = run_dir else {
        say("no writable directory: the upstreams' results are not handed to the program");
        return None;
    };
    let dir = run_dir.join("inputs");
    for (i, name) in names.split(',').enumerate() {
        // Task names: never a path of more than one part.
        if name.is_empty() || name.starts_with('.') || name.contains('/') {
            say(&format!(
                "upstream name {name:?} is not a Task name; skipped"
            ));
            continue;
        }
        let files = [
            (inputs::result_var(i), inputs::RESULT_FILE),
            (inputs::exit_code_var(i), inputs::EXIT_CODE_FILE),
        ];
        let up = dir.join(name);
        let written = std::fs::create_dir_all(&up).and_then(|()| {
            for (var, file) in &files {
                if let Some(v) = vars.get(var) {
                    std::fs::write(up.join(file), v)?;
                }
            }
            Ok(())
        });
        if let Err(e) = written {
            say(&format!("cannot write the inputs of upstream {name}: {e}"));
        }
    }
    Some(dir)
}

/// True for the variables that carry the upstreams' results to the worker:
/// the program gets files instead.
pub fn is_carrier(var: &str) -> bool {
    var.starts_with(inputs::PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_upstream_gets_its_files() {
        let base = std::env::temp_dir().join(format!("longtask-inputs-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let vars = HashMap::from([
            (inputs::NAMES.to_owned(), "a,b.c,../x,none".to_owned()),
            (inputs::result_var(0), "42\n".to_owned()),
            (inputs::exit_code_var(0), "0".to_owned()),
            (inputs::exit_code_var(1), "3".to_owned()),
            (inputs::result_var(2), "escape".to_owned()),
        ]);
        let dir = prepare(&vars, Some(&base)).expect("a directory");
        let read = |p: &str| std::fs::read_to_string(dir.join(p)).ok();
        assert_eq!(read("a/result").as_deref(), Some("42\n"));
        assert_eq!(read("a/exit-code").as_deref(), Some("0"));
        assert_eq!(read("b.c/result"), None, "no result: no file");
        assert_eq!(read("b.c/exit-code").as_deref(), Some("3"));
        assert!(dir.join("none").is_dir(), "an upstream that left nothing");
        assert!(!base.join("x").exists(), "no path out of the directory");
        assert!(prepare(&HashMap::new(), Some(&base)).is_none());
        assert!(is_carrier(&inputs::result_var(7)) && !is_carrier(inputs::DIR));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
