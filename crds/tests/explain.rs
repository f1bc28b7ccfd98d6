//! `kubectl explain task.spec` must document every field with its default
//! (or say it is required), and give units where the field has some.

use kube::CustomResourceExt;

#[test]
fn every_spec_field_says_its_default() {
    let crd = serde_json::to_value(crds::Task::crd()).expect("CRD as JSON");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let props = spec["properties"].as_object().expect("spec properties");
    assert!(props.len() >= 8, "spec fields: {:?}", props.keys());
    for (name, p) in props {
        let doc = p["description"].as_str().unwrap_or_default();
        assert!(
            doc.contains("Default") || doc.contains("Required"),
            "spec.{name}: no default documented: {doc:?}"
        );
        if name.ends_with("Seconds") {
            assert!(
                doc.contains("seconds") || doc.contains("Seconds"),
                "spec.{name}: no unit: {doc:?}"
            );
        }
    }
}

#[test]
fn columns_and_short_name() {
    let crd = crds::Task::crd();
    assert_eq!(crd.spec.names.short_names, Some(vec!["lt".to_owned()]));
    let cols = crd.spec.versions[0]
        .additional_printer_columns
        .clone()
        .unwrap_or_default();
    let shown = |wide: bool| -> Vec<String> {
        cols.iter()
            .filter(|c| (c.priority.unwrap_or(0) > 0) == wide)
            .map(|c| c.name.clone())
            .collect()
    };
    for want in ["Phase", "Progress", "Attempts", "Reason", "Age"] {
        assert!(
            shown(false).iter().any(|c| c == want),
            "{want} not in {:?}",
            shown(false)
        );
    }
    assert_eq!(shown(true), ["Job", "Started", "Completed"]);
}
