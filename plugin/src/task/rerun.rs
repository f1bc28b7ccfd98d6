//! A rerun: a new Task with the spec of an existing one (not cancelled),
//! its labels, and the label longtask.dev/rerun-of naming the origin, for
//! `rerun` and the web page. Without a new name the API server picks
//! `NAME-rerun-<5 random characters>` (generateName).

use crds::Task;
use crds::names::labels;

/// The new Task: `new_name`, else a generated `ORIGIN-rerun-xxxxx`.
pub fn build(origin: &Task, new_name: Option<&str>) -> Task {
    let from = origin.metadata.name.clone().unwrap_or_default();
    let mut spec = origin.spec.clone();
    spec.cancel = false;
    let mut t = Task::new(new_name.unwrap_or_default(), spec);
    if new_name.is_none() {
        t.metadata.name = None;
        // The API server keeps at most 58 characters of it and adds 5.
        t.metadata.generate_name = Some(format!("{from}-rerun-"));
    }
    // Labels travel (e.g. a Kueue queue name); annotations may be another
    // tool's bookkeeping (last-applied-configuration) and do not.
    let mut l = origin.metadata.labels.clone().unwrap_or_default();
    l.insert(labels::RERUN_OF.to_owned(), from);
    t.metadata.labels = Some(l);
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::task;
    use crds::Phase;

    fn cancelled_origin() -> Task {
        let mut o = task("nightly").phase(Phase::Failed).shards(3).build();
        o.spec.cancel = true;
        o.metadata.labels = Some([("kueue.x-k8s.io/queue-name".to_owned(), "q".to_owned())].into());
        o.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
        o
    }

    #[test]
    fn same_spec_not_cancelled_with_the_origin_label() {
        let o = cancelled_origin();
        let t = build(&o, None);
        assert_eq!(t.metadata.name, None);
        assert_eq!(t.metadata.generate_name.as_deref(), Some("nightly-rerun-"));
        assert_eq!(
            (t.metadata.namespace.as_ref(), t.metadata.uid.as_ref()),
            (None, None)
        );
        assert!(t.status.is_none() && t.metadata.annotations.is_none());
        assert!(!t.spec.cancel);
        let mut want = o.spec.clone();
        want.cancel = false;
        assert_eq!(t.spec, want);
        let l = t.metadata.labels.expect("labels");
        assert_eq!(l[labels::RERUN_OF], "nightly");
        assert_eq!(l["kueue.x-k8s.io/queue-name"], "q");
    }

    #[test]
    fn a_given_name_is_used() {
        let t = build(&cancelled_origin(), Some("again"));
        assert_eq!(t.metadata.name.as_deref(), Some("again"));
        assert_eq!(t.metadata.generate_name, None);
    }
}
