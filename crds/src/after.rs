//! Tasks that wait for other Tasks (`spec.after`): the upstream entry of
//! the spec, what the status records of the upstreams it saw, and the
//! environment through which the worker hands the upstreams' results to
//! the program (`$LONGTASK_INPUTS`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most upstreams one Task may wait for (`spec.after`).
pub const MAX_UPSTREAMS: usize = 1000;

/// One Task this Task waits for.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Upstream {
    /// The upstream Task's name, in this Task's namespace. It may not
    /// exist yet: the Task then waits for it to be created (see
    /// `startTimeoutSeconds`). Not this Task's own name. Required.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub name: String,

    // Documented on `UpstreamCondition`: schemars takes the enum's doc.
    #[serde(default)]
    pub condition: UpstreamCondition,
}

impl Upstream {
    /// An upstream named `name` that must succeed.
    pub fn succeeded(name: &str) -> Upstream {
        Upstream {
            name: name.to_owned(),
            condition: UpstreamCondition::Succeeded,
        }
    }
}

/// What the upstream must reach before this Task starts: Succeeded (it
/// Completed; if it Fails instead, this Task fails at once with reason
/// UpstreamFailed, without a pod) or Finished (Completed or Failed: this
/// Task runs either way). Default: Succeeded.
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    JsonSchema,
    strum::IntoStaticStr,
)]
pub enum UpstreamCondition {
    /// The upstream Completed.
    #[default]
    Succeeded,
    /// The upstream Completed or Failed.
    Finished,
}

impl UpstreamCondition {
    /// The condition as written in the spec.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// An upstream as this Task saw it while it waited.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamSeen {
    /// The upstream's name (an entry of `spec.after`).
    pub name: String,
    /// Its UID when first seen: an upstream that is gone later, or has
    /// another UID (deleted and created again), fails this Task with
    /// reason UpstreamDeleted.
    pub uid: String,
}

/// The environment of the worker container that carries the upstreams'
/// results, which the worker turns into files under `$LONGTASK_INPUTS`
/// (and removes from the program's environment).
pub mod inputs {
    /// The upstreams' names, in `spec.after` order, joined by ','.
    pub const NAMES: &str = "LONGTASK_INPUT_NAMES";
    /// What the program sees: the directory holding one directory per
    /// upstream, `<upstream>/result` and `<upstream>/exit-code`.
    pub const DIR: &str = "LONGTASK_INPUTS";
    /// Prefix of the per-upstream variables below.
    pub const PREFIX: &str = "LONGTASK_INPUT_";
    /// File name of an upstream's result under its directory.
    pub const RESULT_FILE: &str = "result";
    /// File name of an upstream's exit code under its directory.
    pub const EXIT_CODE_FILE: &str = "exit-code";

    /// The variable holding the result of the `i`-th upstream (0-based, in
    /// `spec.after` order), from its result ConfigMap.
    pub fn result_var(i: usize) -> String {
        format!("{PREFIX}{i}_RESULT")
    }

    /// The variable holding the exit code of the `i`-th upstream.
    pub fn exit_code_var(i: usize) -> String {
        format!("{PREFIX}{i}_EXIT_CODE")
    }
}
