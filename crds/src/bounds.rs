//! Size bounds the CRD schema puts on types longtask does not own (core/v1
//! EnvVar, ResourceRequirements and VolumeMount from k8s-openapi), so the API server's
//! cost estimate of the CEL rules over them stays within its budget: an
//! unbounded string or map is priced as if it filled a whole request
//! (3 MiB), and the API server refuses a CRD whose rules could cost more
//! than 10,000,000 units each.

use schemars::Schema;
use serde_json::{Map, Value};

/// Most retries a Task may ask for (`spec.retries`, the Job's backoffLimit).
pub const MAX_RETRIES: i32 = 10;

/// Most shards a Task may have (`spec.shards`, and so `spec.parallelism`).
pub const MAX_SHARDS: i32 = 1000;

/// Longest environment variable name a Task may give (the API server sets
/// no limit; this one only bounds the CEL cost).
pub const MAX_ENV_NAME_LEN: usize = 1024;

/// Most entries in `resources.requests`, and in `resources.limits`.
pub const MAX_RESOURCES: usize = 64;

/// Longest quantity string in `resources.requests` or `resources.limits`.
pub const MAX_QUANTITY_LEN: usize = 64;

/// Field transform of `spec.env`: bounds each entry's name.
pub fn env(schema: &mut Schema) {
    if let Some(Value::Object(items)) = schema.get_mut("items") {
        with_property(items, "name", &|name| {
            name.insert("maxLength".into(), MAX_ENV_NAME_LEN.into());
        });
    }
}

/// Longest `spec.volumeMounts[].mountPath` (Linux's PATH_MAX); bounds
/// the cost of the rules that match it.
pub const MAX_MOUNT_PATH_LEN: usize = 4096;

/// Field transform of `spec.volumeMounts`: bounds each entry's mountPath.
pub fn volume_mounts(schema: &mut Schema) {
    if let Some(Value::Object(items)) = schema.get_mut("items") {
        with_property(items, "mountPath", &|p| {
            p.insert("maxLength".into(), MAX_MOUNT_PATH_LEN.into());
        });
    }
}

/// Field transform of `spec.resources`: bounds the requests and limits
/// maps and each quantity in them.
pub fn resources(schema: &mut Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    for map in ["requests", "limits"] {
        with_property(obj, map, &|m| {
            m.insert("maxProperties".into(), MAX_RESOURCES.into());
            if let Some(Value::Object(q)) = m.get_mut("additionalProperties") {
                q.insert("maxLength".into(), MAX_QUANTITY_LEN.into());
            }
        });
    }
}

/// Calls `f` on property `name` of the object schema `obj`, also where it
/// wraps its object in anyOf/allOf/oneOf (as an optional field may).
fn with_property(obj: &mut Map<String, Value>, name: &str, f: &dyn Fn(&mut Map<String, Value>)) {
    if let Some(Value::Object(p)) = obj.get_mut("properties").and_then(|p| p.get_mut(name)) {
        f(p);
    }
    for key in ["anyOf", "allOf", "oneOf"] {
        if let Some(Value::Array(alts)) = obj.get_mut(key) {
            for a in alts.iter_mut() {
                if let Value::Object(o) = a {
                    with_property(o, name, f);
                }
            }
        }
    }
}

/// Field transform of a CronTask's `taskTemplate.spec`: the Task spec's
/// own rules, but not those comparing it with its old value (`oldSelf`):
/// a Task's spec is immutable, a template is edited.
pub fn without_transition_rules(schema: &mut Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let Some(Value::Array(rules)) = obj.get_mut("x-kubernetes-validations") else {
        return;
    };
    rules.retain(|r| {
        !r.get("rule")
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("oldSelf"))
    });
    if rules.is_empty() {
        obj.remove("x-kubernetes-validations");
    }
}
