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
