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
        r#""minItems":1"#,
        r#""status":{}"#,
    ] {
        assert!(json.contains(needle), "CRD lacks {needle}");
    }
}
