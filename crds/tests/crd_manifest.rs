//! `manifests/crd.yaml` must be exactly what `crdgen` prints.

use kube::CustomResourceExt;

#[test]
fn manifest_matches_crdgen() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests/crd.yaml");
    let on_disk = std::fs::read_to_string(path).expect("read manifests/crd.yaml");
    let generated = crds::crd_yaml().expect("serialize CRD");
    assert!(
        on_disk == generated,
        "manifests/crd.yaml is stale: run `cargo run -q -p crds --bin crdgen > manifests/crd.yaml`"
    );
}

#[test]
fn crd_carries_the_contract() {
    let crd = crds::Task::crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("tasks.longtask.dev"));
    assert_eq!(
        crd.spec.names.short_names,
        Some(vec![crds::names::SHORT_NAME.to_string()])
    );
    let json = serde_json::to_string(&crd).expect("json");
    for needle in [
        r#""rule":"self.command == oldSelf.command && "#,
        r#"!has(oldSelf.cancel) || !oldSelf.cancel"#,
        r#""rule":"self.metadata.name.size() <= 63""#,
        r#""x-kubernetes-list-type":"map""#,
        r#""rule":"self.all(e, e.name.matches('^[ -<>-~]+$'))""#,
        r#""rule":"self.all(e, !(has(e.valueFrom) && has(e.value) && e.value.size() > 0))""#,
        r#"isQuantity(string(self.requests[k]))"#,
        r#"isQuantity(string(self.limits[k]))"#,
        r#".compareTo(quantity(string(self.limits[k])))"#,
        r#"self.metadata.name.size() + string(self.spec.shards - 1).size() <= 62"#,
        r#"self.spec.after.all(u, u.name != self.metadata.name)"#,
        r#""x-kubernetes-list-map-keys":["name"]"#,
        r#""minItems":1"#,
        r#""status":{}"#,
    ] {
        assert!(json.contains(needle), "CRD lacks {needle}");
    }
}

/// The API server prices a CEL rule over an unbounded string or map as if
/// it filled a whole request, and refuses the CRD when that is too much:
/// the rules over EnvVar and ResourceRequirements need these bounds.
#[test]
fn cel_inputs_are_bounded() {
    let crd = serde_json::to_value(crds::Task::crd()).expect("CRD as JSON");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    let env = &spec["env"];
    assert_eq!(env["maxItems"], 256);
    assert_eq!(
        env["items"]["properties"]["name"]["maxLength"],
        crds::bounds::MAX_ENV_NAME_LEN
    );
    for map in ["requests", "limits"] {
        let m = &spec["resources"]["properties"][map];
        assert_eq!(m["maxProperties"], crds::bounds::MAX_RESOURCES, "{map}");
        assert_eq!(
            m["additionalProperties"]["maxLength"],
            crds::bounds::MAX_QUANTITY_LEN,
            "{map}"
        );
        assert_eq!(
            m["additionalProperties"]["x-kubernetes-int-or-string"],
            true
        );
    }
    let rules = spec["resources"]["x-kubernetes-validations"]
        .as_array()
        .expect("rules on spec.resources");
    assert_eq!(rules.len(), 3);
    for r in rules {
        // Named offending entry: the message is an expression.
        assert!(r["messageExpression"].is_string(), "{r}");
    }
}

/// The spec-immutability rule is one hand-kept line in `task.rs`: it must
/// compare every field of the spec with its old value but `cancel` (which
/// its own rule lets go from false to true), so a field added to the spec
/// and forgotten there fails here, naming it. Required fields compare
/// directly; optional ones also agree on being set.
#[test]
fn immutability_rule_covers_every_spec_field() {
    let crd = serde_json::to_value(crds::Task::crd()).expect("CRD as JSON");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let required: Vec<&str> = spec["required"]
        .as_array()
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let fields: Vec<&str> = spec["properties"]
        .as_object()
        .expect("spec properties")
        .keys()
        .map(String::as_str)
        .collect();
    assert!(fields.len() > 15, "spec fields: {fields:?}");
    // Every schema field is in exactly one of the two lists, with the
    // schema's own required flag; no list names a field that is gone.
    let listed = |f: &str| {
        let im = crds::rules::IMMUTABLE_SPEC_FIELDS
            .iter()
            .find(|(n, _)| *n == f);
        let mu = crds::rules::MUTABLE_SPEC_FIELDS.contains(&f);
        (im, mu)
    };
    let mut wrong = Vec::new();
    for f in &fields {
        match listed(f) {
            (Some((_, req)), false) if *req == required.contains(f) => {}
            (Some(_), false) => wrong.push(format!("{f}: its required flag differs from the schema's")),
            (None, true) => {}
            (None, false) => wrong.push(format!(
                "{f}: in neither list: add it to IMMUTABLE_SPEC_FIELDS, or to MUTABLE_SPEC_FIELDS with its own rule and why"
            )),
            (Some(_), true) => wrong.push(format!("{f}: in both lists")),
        }
    }
    let gone = crds::rules::IMMUTABLE_SPEC_FIELDS
        .iter()
        .map(|(n, _)| *n)
        .chain(crds::rules::MUTABLE_SPEC_FIELDS)
        .filter(|n| !fields.contains(n));
    wrong.extend(gone.map(|n| format!("{n}: listed but not in the spec")));
    assert!(
        wrong.is_empty(),
        "crds/src/rules.rs's spec field lists disagree with TaskSpec:\n{}",
        wrong.join("\n")
    );
    // The rule in the CRD is the generated one: one clause per immutable
    // field, each of the shape its flag asks for.
    let rule = spec["x-kubernetes-validations"]
        .as_array()
        .expect("rules on spec")
        .iter()
        .filter_map(|r| r["rule"].as_str())
        .find(|r| r.starts_with("self.command == oldSelf.command"))
        .expect("the immutability rule");
    for (f, req) in crds::rules::IMMUTABLE_SPEC_FIELDS {
        let want = if req {
            format!("self.{f} == oldSelf.{f}")
        } else {
            format!(
                "has(self.{f}) ? has(oldSelf.{f}) && self.{f} == oldSelf.{f} : !has(oldSelf.{f})"
            )
        };
        assert!(rule.contains(&want), "{f}: want `{want}` in the rule");
    }
    let clauses: Vec<&str> = rule.split(" && (").collect();
    assert_eq!(clauses.len(), crds::rules::IMMUTABLE_SPEC_FIELDS.len());
    assert!(!rule.contains("cancel"), "cancel may change (its own rule)");
}

/// `spec.after` is a list-map keyed by name (the API server refuses a name
/// listed twice), bounded so the root rule that compares each name with
/// the Task's own stays within the CEL cost budget, and each name is one a
/// Task may have.
#[test]
fn after_is_a_bounded_map_of_task_names() {
    let crd = serde_json::to_value(crds::Task::crd()).expect("CRD as JSON");
    let after = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["after"];
    assert_eq!(after["x-kubernetes-list-type"], "map");
    assert_eq!(after["x-kubernetes-list-map-keys"][0], "name");
    assert_eq!(after["maxItems"], crds::after::MAX_UPSTREAMS);
    // At least the issue's fan-in of 500.
    assert!(after["maxItems"].as_u64() >= Some(500));
    let name = &after["items"]["properties"]["name"];
    assert_eq!(name["maxLength"], crds::names::MAX_NAME_LEN);
    assert!(name["pattern"].is_string());
    assert_eq!(after["items"]["required"][0], "name");
    let cond = &after["items"]["properties"]["condition"];
    assert_eq!(cond["default"], "Succeeded");
    assert_eq!(cond["enum"], serde_json::json!(["Succeeded", "Finished"]));
}
