//! Normalising the chart's and kustomize's renders so that only the
//! intended differences go away, and a field-by-field diff of the rest.
//!
//! The intended differences, each checked before it is removed:
//! - the chart's objects carry Helm's four labels (helm.sh/chart,
//!   app.kubernetes.io/managed-by, /instance, /version);
//! - the chart's CRDs carry helm.sh/resource-policy: keep (crds.keep);
//! - the chart renders no Namespace: Helm installs into a release namespace
//!   (`helm install --create-namespace`, or one made beforehand);
//! - kustomize sets metadata.namespace on the cluster-scoped kinds it does
//!   not know (the admission policies); the API server drops it.

use std::collections::BTreeMap;

use serde_json::Value;

/// kind, namespace ("" when cluster-scoped), name → object.
pub type Objects = BTreeMap<(String, String, String), Value>;

const HELM_LABELS: &[&str] = &[
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
];

const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "FlowSchema",
];

fn str_of<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

pub fn by_key(objs: Vec<Value>) -> Objects {
    let mut out = Objects::new();
    for o in objs {
        let key = (
            str_of(&o, "/kind").to_owned(),
            str_of(&o, "/metadata/namespace").to_owned(),
            str_of(&o, "/metadata/name").to_owned(),
        );
        assert!(out.insert(key.clone(), o).is_none(), "{key:?} twice");
    }
    out
}

/// The chart's render without Helm's labels (present on every object) and,
/// when `crds_keep`, the CRDs' keep annotation (present on each).
pub fn chart(objs: Vec<Value>, release_ns: &str, crds_keep: bool) -> Objects {
    let mut objs = objs;
    for o in &mut objs {
        let kind = str_of(o, "/kind").to_owned();
        let name = str_of(o, "/metadata/name").to_owned();
        let cluster_scoped = CLUSTER_SCOPED.contains(&kind.as_str());
        let meta = o["metadata"].as_object_mut().unwrap();
        if cluster_scoped {
            assert!(
                meta.get("namespace").is_none(),
                "{kind} {name} has a namespace"
            );
        } else {
            assert_eq!(meta["namespace"], release_ns, "{kind} {name}");
        }
        let labels = meta
            .get_mut("labels")
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{kind} {name} has no labels"));
        for l in HELM_LABELS {
            assert!(labels.remove(*l).is_some(), "{kind} {name} lacks label {l}");
        }
        if kind == "CustomResourceDefinition" && crds_keep {
            let ann = meta["annotations"].as_object_mut().unwrap();
            assert_eq!(ann.remove("helm.sh/resource-policy").unwrap(), "keep");
            if ann.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    by_key(objs)
}

/// kustomize's render without the Namespace object (when `with_namespace`,
/// checked to be longtask-system, restricted) and without the namespace it
/// puts on cluster-scoped kinds.
pub fn kustomize(objs: Vec<Value>, with_namespace: bool) -> Objects {
    let mut out = Vec::new();
    let mut namespaces = 0;
    for mut o in objs {
        let kind = str_of(&o, "/kind").to_owned();
        if kind == "Namespace" {
            assert_eq!(o["metadata"]["name"], "longtask-system");
            assert_eq!(
                o["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
                "restricted"
            );
            namespaces += 1;
            continue;
        }
        if CLUSTER_SCOPED.contains(&kind.as_str()) {
            o["metadata"].as_object_mut().unwrap().remove("namespace");
        }
        out.push(o);
    }
    assert_eq!(namespaces, usize::from(with_namespace), "Namespace objects");
    by_key(out)
}

/// Appends one line per differing leaf (a JSON pointer under `at`).
pub fn diff(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let null = Value::Null;
                let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                diff(
                    &path,
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{at}/{i}"), p, q, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{at}: chart {a} != kustomize {b}")),
    }
}
