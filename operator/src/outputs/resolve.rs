//! Pure: which `OutputStore` a Task uploads to, decided when its Job is
//! about to be made. `spec.outputs.enabled: false` opts out; else the
//! store `spec.outputs.store` names, else the one its namespace's label
//! `longtask.dev/output-store` names, else the store `default`. A store
//! the Task or its namespace names must exist, select the namespace and
//! have complete credentials, or the Task fails before it runs
//! (`OutputStoreUnavailable`); the implicit `default` applies only where
//! it exists and selects the namespace, and otherwise no store does (the
//! behaviour before stores existed).

use std::collections::BTreeMap;
use std::sync::Arc;

use crds::Task;
use crds::outputs::{DEFAULT_STORE, NAMESPACE_STORE_LABEL, OutputStore, secret_keys};
use k8s_openapi::ByteString;
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};
use longtask_store::Credentials;

/// Who named the store a Task uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// `spec.outputs.store`.
    Task,
    /// The namespace's label `longtask.dev/output-store`.
    Namespace,
    /// Nobody: the store `default`, if it applies.
    Default,
}

/// The store a Task asks for, and who named it; `None` when it opted out.
/// `ns_labels` is `None` when the operator reads no Namespace (it watches
/// one namespace): then only the Task or the default can name one.
pub fn wanted(
    task: &Task,
    ns_labels: Option<&BTreeMap<String, String>>,
) -> Option<(String, Named)> {
    let spec = task.spec.outputs.clone().unwrap_or_default();
    if spec.enabled == Some(false) {
        return None;
    }
    if let Some(name) = spec.store {
        return Some((name, Named::Task));
    }
    match ns_labels.and_then(|l| l.get(NAMESPACE_STORE_LABEL)) {
        Some(name) if !name.is_empty() => Some((name.clone(), Named::Namespace)),
        _ => Some((DEFAULT_STORE.to_owned(), Named::Default)),
    }
}

/// What applies to a Task.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolution {
    /// No store: the Task runs without `$LONGTASK_OUTPUTS`.
    None,
    /// This store, its credentials still to be checked (`credentials`).
    Use(Arc<OutputStore>),
    /// The Task fails before it runs: why, for its status.
    Unavailable(String),
}

/// The store `task` (in a namespace labelled `ns_labels`) uses, given the
/// stores the cache holds (`lookup` by name). `ns_labels` is `None` where
/// no Namespace is read: a store that selects namespaces then selects none.
pub fn resolve(
    task: &Task,
    ns_labels: Option<&BTreeMap<String, String>>,
    lookup: impl Fn(&str) -> Option<Arc<OutputStore>>,
) -> Resolution {
    let Some((name, named)) = wanted(task, ns_labels) else {
        return Resolution::None;
    };
    let namespace = task.namespace().unwrap_or_default();
    let who = match named {
        Named::Task => "spec.outputs.store names",
        Named::Namespace => "the namespace's label longtask.dev/output-store names",
        Named::Default => return default(lookup(&name), ns_labels),
    };
    let Some(store) = lookup(&name) else {
        return Resolution::Unavailable(format!(
            "{who} the OutputStore {name}, which does not exist"
        ));
    };
    match selects(&store, ns_labels) {
        Ok(true) => Resolution::Use(store),
        Ok(false) => Resolution::Unavailable(format!(
            "{who} the OutputStore {name}, whose namespaceSelector does not select the \
             namespace {namespace}"
        )),
        Err(why) => Resolution::Unavailable(format!(
            "{who} the OutputStore {name}, whose namespaceSelector is invalid: {why}"
        )),
    }
}

/// The implicit store `default`: used where it exists and selects the
/// namespace, and silently not otherwise.
fn default(
    store: Option<Arc<OutputStore>>,
    ns_labels: Option<&BTreeMap<String, String>>,
) -> Resolution {
    match store {
        Some(s) if selects(&s, ns_labels) == Ok(true) => Resolution::Use(s),
        _ => Resolution::None,
    }
}

/// True when `store` serves a namespace labelled `ns_labels` (an empty or
/// absent selector serves every namespace); `Err` for a selector that does
/// not parse. Unknown labels (`None`) match only an empty selector.
pub fn selects(
    store: &OutputStore,
    ns_labels: Option<&BTreeMap<String, String>>,
) -> Result<bool, String> {
    let Some(sel) = store.spec.namespace_selector.clone() else {
        return Ok(true);
    };
    let sel = Selector::try_from(sel).map_err(|e| e.to_string())?;
    if sel.selects_all() {
        return Ok(true);
    }
    Ok(ns_labels.is_some_and(|l| sel.matches(l)))
}

/// The credentials in the data of the Secret `secret` (in the operator's
/// namespace `namespace`) that store `store` names; `data` is `None` when
/// the Secret does not exist. `Err` says what is wrong, for a status.
pub fn credentials(
    store: &str,
    secret: &str,
    namespace: &str,
    data: Option<&BTreeMap<String, ByteString>>,
) -> Result<Credentials, String> {
    let Some(data) = data else {
        return Err(format!(
            "the credentials Secret {namespace}/{secret} of OutputStore {store} does not exist"
        ));
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        match data.get(key) {
            None => Ok(None),
            Some(v) => match std::str::from_utf8(&v.0) {
                Ok(s) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
                Ok(_) => Ok(None),
                Err(_) => Err(format!(
                    "the key {key} of the credentials Secret {namespace}/{secret} of \
                     OutputStore {store} is not UTF-8"
                )),
            },
        }
    };
    let required = |key: &str| -> Result<String, String> {
        text(key)?.ok_or_else(|| {
            format!(
                "the credentials Secret {namespace}/{secret} of OutputStore {store} has no \
                 key {key} (it needs {} and {})",
                secret_keys::ACCESS_KEY_ID,
                secret_keys::SECRET_ACCESS_KEY
            )
        })
    };
    Ok(Credentials {
        access_key_id: required(secret_keys::ACCESS_KEY_ID)?,
        secret_access_key: required(secret_keys::SECRET_ACCESS_KEY)?,
        session_token: text(secret_keys::SESSION_TOKEN)?,
    })
}
