//! CEL rules of the CRD for what the Job API would refuse later: so a Task
//! the operator cannot turn into a Job is refused at `kubectl apply`, with a
//! message naming the field. Each message expression repeats its rule's
//! test to name the offending entry (it is evaluated only when the rule
//! failed, so its `[0]` exists). What CEL cannot express is refused by the
//! API server when the operator creates the Job, and the Task then fails
//! with reason InvalidSpec.
//!
//! Cost: the API server prices a string concatenation with an operand of
//! no known size (`string(int)`, an element of a `filter` result) as if it
//! filled a whole request, and refuses the CRD. So the messages pick the
//! entry with the three-argument `map(x, test, message)` over the bounded
//! list or map itself, and the shard rule's message is static.

use kube::core::{Message, Rule};

/// An environment variable name as the API server accepts it since
/// RelaxedEnvironmentVariableValidation (GA in 1.34): one or more printable
/// ASCII characters other than '=' (RE2: ' '..'<' and '>'..'~').
const ENV_NAME: &str = "'^[ -<>-~]+$'";

/// Every `spec.env` name is one the API server accepts.
pub fn env_names() -> Rule {
    let bad = format!("!e.name.matches({ENV_NAME})");
    Rule::new(format!("self.all(e, e.name.matches({ENV_NAME}))")).message(Message::Expression(
        format!(
            "self.map(e, {bad}, 'spec.env: name \"' + e.name + '\" is not valid: use printable ASCII characters other than \"=\", e.g. MY_VAR')[0]"
        ),
    ))
}

/// No `spec.env` entry sets both a non-empty `value` and `valueFrom`.
pub fn env_value_or_value_from() -> Rule {
    let both = "has(e.valueFrom) && has(e.value) && e.value.size() > 0";
    Rule::new(format!("self.all(e, !({both}))")).message(Message::Expression(format!(
        "self.map(e, {both}, 'spec.env: \"' + e.name + '\" sets both value and valueFrom: give one of them')[0]"
    )))
}

/// Every `spec.env[].valueFrom` names exactly one source.
pub fn env_one_source() -> Rule {
    Rule::new(
        "self.all(e, !has(e.valueFrom) || [has(e.valueFrom.fieldRef), has(e.valueFrom.resourceFieldRef), has(e.valueFrom.configMapKeyRef), has(e.valueFrom.secretKeyRef), has(e.valueFrom.fileKeyRef)].filter(s, s).size() == 1)",
    )
    .message("spec.env: each valueFrom must name exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef")
}

/// Every value of `spec.resources.<map>` (requests or limits) is a
/// quantity of at least 0 (an integer or a string such as 500m or 1Gi).
pub fn quantities(map: &str) -> Rule {
    let ok = format!(
        "isQuantity(string(self.{map}[k])) && quantity(string(self.{map}[k])).compareTo(quantity('0')) >= 0"
    );
    Rule::new(format!("!has(self.{map}) || self.{map}.all(k, {ok})")).message(
        Message::Expression(format!(
            "self.{map}.map(k, !({ok}), 'spec.resources.{map}.' + k + ': \"' + string(self.{map}[k]) + '\" is not a quantity of at least 0, e.g. 500m, 2 or 1.5Gi')[0]"
        )),
    )
}

/// No request exceeds the limit of the same resource.
pub fn requests_within_limits() -> Rule {
    let above = "k in self.limits && isQuantity(string(self.requests[k])) && isQuantity(string(self.limits[k])) && quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) > 0";
    Rule::new(format!(
        "!has(self.requests) || !has(self.limits) || self.requests.all(k, !({above}))"
    ))
    .message(Message::Expression(format!(
        "self.requests.map(k, {above}, 'spec.resources.requests.' + k + ' (' + string(self.requests[k]) + ') is above spec.resources.limits.' + k + ' (' + string(self.limits[k]) + '): a request may not exceed its limit')[0]"
    )))
}

/// A sharded Task's pods take the host name `<name>-<index>`, which must
/// be a DNS-1123 label (no '.', at most 63 characters) for the largest
/// index, `shards - 1`; the Job API refuses the Job otherwise.
pub fn shard_names() -> Rule {
    Rule::new(
        "!has(self.spec.shards) || self.spec.shards <= 1 || (self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() + string(self.spec.shards - 1).size() <= 62)",
    )
    .message("metadata.name of a sharded Task may hold only lowercase letters, digits and '-' (no '.'), and <name>-<shards - 1> must fit in 63 characters (a name of at most 61 characters for up to 10 shards, 60 for 100, 59 for 1000): each shard pod takes the host name <name>-<index>")
}

/// No `spec.after` entry names the Task itself (it would wait for ever).
/// At the root: the rule needs `metadata.name`. Each comparison is of two
/// names of at most 63 characters over at most `MAX_UPSTREAMS` entries.
pub fn after_not_self() -> Rule {
    Rule::new("!has(self.spec.after) || self.spec.after.all(u, u.name != self.metadata.name)")
        .message("spec.after may not name the Task itself: a Task cannot wait for its own end")
}

/// Every entry of an exit-code list (`spec.failOnExitCodes`) is 0 to 255.
pub fn exit_codes_in_range() -> Rule {
    Rule::new("self.all(c, c >= 0 && c <= 255)").message(
        "spec.failOnExitCodes: exit codes are 1 to 255 (128+N for a program killed by signal N)",
    )
}

/// Matches a mount path that, normalised (repeated '/' and '.' components
/// dropped, relative taken from '/'), is /longtask or /longtask-bin or
/// under one: `//longtask-bin`, `/./longtask-bin`, `longtask-bin/`.
/// `(?s)` lets the tail hold a newline too.
const RESERVED_MOUNT: &str = "'(?s)^([.]?/)*(longtask|longtask-bin)(/.*)?$'";

/// No `spec.volumeMounts` entry is at or under a directory longtask mounts
/// (compared normalised, see [`RESERVED_MOUNT`]).
pub fn mounts_outside_reserved() -> Rule {
    Rule::new(format!("self.all(m, !m.mountPath.matches({RESERVED_MOUNT}))")).message(
        "spec.volumeMounts: /longtask (the work directory) and /longtask-bin (the worker) are mounted by longtask: mount volumes elsewhere",
    )
}

/// No mount path has a '..' component: where it leads depends on what is
/// mounted above it, so it could not be compared with the reserved paths.
pub fn mounts_without_dotdot() -> Rule {
    Rule::new("self.all(m, !m.mountPath.matches('(^|/)[.][.](/|$)'))").message(
        "spec.volumeMounts: a mountPath may not hold a '..' component: write the path it leads to",
    )
}

/// Every field of a Task's spec that may not change once the Task exists,
/// with whether the schema requires it (compared directly) or not (then old
/// and new must also agree on its being set). All fields but `cancel`,
/// which `MUTABLE_SPEC_FIELDS` lists with why. A field added to `TaskSpec`
/// must be in one of the two lists: a test in crds/tests/crd_manifest.rs
/// compares them with the generated schema and names a missing field.
pub const IMMUTABLE_SPEC_FIELDS: [(&str, bool); 21] = [
    ("command", true),
    ("args", false),
    ("env", false),
    ("resources", false),
    ("timeoutSeconds", false),
    ("startTimeoutSeconds", false),
    ("retries", false),
    ("ttlSecondsAfterFinished", false),
    ("failOnExitCodes", false),
    ("deleteAfterSeconds", false),
    ("priority", false),
    ("shards", false),
    ("parallelism", false),
    ("image", false),
    ("imagePullPolicy", false),
    ("volumeMounts", false),
    ("workingDir", false),
    ("securityContext", false),
    ("podTemplate", false),
    ("outputs", false),
    ("after", false),
];

/// The spec fields that may change, each with its own rule: `cancel` only
/// from false to true (a Task is cancelled by setting it).
pub const MUTABLE_SPEC_FIELDS: [&str; 1] = ["cancel"];

/// A Task's spec is immutable but for `MUTABLE_SPEC_FIELDS`: one clause per
/// field of `IMMUTABLE_SPEC_FIELDS`. A Task runs once; to run it again, the
/// user creates it again.
pub fn spec_immutable() -> Rule {
    let clauses: Vec<String> = IMMUTABLE_SPEC_FIELDS
        .iter()
        .map(|(f, required)| {
            if *required {
                format!("self.{f} == oldSelf.{f}")
            } else {
                format!(
                    "(has(self.{f}) ? has(oldSelf.{f}) && self.{f} == oldSelf.{f} : !has(oldSelf.{f}))"
                )
            }
        })
        .collect();
    Rule::new(clauses.join(" && "))
        .message("spec is immutable: delete the Task and create it again to run it again")
}
