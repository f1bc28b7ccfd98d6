//! The connection, as kubectl makes it (kubeconfig, context, namespace),
//! and the errors a user sees, each saying what to do.

use std::path::PathBuf;

use crds::Task;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::cli::Global;

/// Everything a command fails with; `main` prints it and exits 1 (or the
/// code `exit_code` gives).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot load the kubeconfig{}: {source}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Kubeconfig {
        path: Option<PathBuf>,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot build the API client: {0}")]
    Client(#[source] kube::Error),
    #[error(
        "longtask is not installed in this cluster (no tasks.longtask.dev API): install it with `kubectl apply --server-side -k manifests/` from a longtask checkout"
    )]
    NotInstalled,
    #[error("task {name:?} not found in namespace {namespace:?}")]
    NotFound { namespace: String, name: String },
    #[error("forbidden: you may not {verb} {resource} in namespace {namespace:?} ({message})")]
    Forbidden {
        verb: &'static str,
        resource: &'static str,
        namespace: String,
        message: String,
    },
    #[error("cannot {verb} {resource}: the API server refused: {message}")]
    Refused {
        verb: &'static str,
        resource: &'static str,
        message: String,
    },
    #[error("cannot {verb} {resource}: {source}")]
    Api {
        verb: &'static str,
        resource: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error(
        "task {name} already exists in namespace {namespace:?}; use rerun or pick another name"
    )]
    AlreadyExists { namespace: String, name: String },
    #[error(
        "refusing the result of task {name}: {source_name} has digest {actual}, but {against} says {expected}: these are not the bytes the operator accepted"
    )]
    DigestMismatch {
        name: String,
        source_name: String,
        against: String,
        expected: String,
        actual: String,
    },
    #[error("no result for task {name}: {why}")]
    NoResult { name: String, why: String },
    #[error(transparent)]
    Outputs(Box<crate::outputs::Error>),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Not an error to print: the command's outcome as an exit code (a
    /// failed Task, a timeout).
    #[error("exit {0}")]
    Exit(i32),
}

impl From<crate::outputs::Error> for Error {
    fn from(e: crate::outputs::Error) -> Error {
        Error::Outputs(Box::new(e))
    }
}

impl Error {
    /// Names the call that failed, turning the API server's answers into
    /// the messages above.
    pub fn api(
        verb: &'static str,
        resource: &'static str,
        namespace: &str,
        name: Option<&str>,
        e: kube::Error,
    ) -> Error {
        match &e {
            kube::Error::Api(s)
                if s.code == 404
                    && s.reason == "NotFound"
                    && name.is_some()
                    && !s
                        .message
                        .contains("the server could not find the requested resource") =>
            {
                Error::NotFound {
                    namespace: namespace.to_owned(),
                    name: name.unwrap_or_default().to_owned(),
                }
            }
            kube::Error::Api(s) if s.code == 404 => Error::NotInstalled,
            kube::Error::Api(s) if s.code == 403 => Error::Forbidden {
                verb,
                resource,
                namespace: namespace.to_owned(),
                message: s.message.clone(),
            },
            // Invalid, Conflict…: the server's own message says it all.
            kube::Error::Api(s) if !s.message.is_empty() => Error::Refused {
                verb,
                resource,
                message: s.message.clone(),
            },
            _ => Error::Api {
                verb,
                resource,
                source: e,
            },
        }
    }
}

/// The kubeconfig context in use (`--context`, else the kubeconfig's
/// current one), for showing; empty when it cannot be read.
pub fn context_name(g: &Global) -> String {
    if let Some(c) = &g.context {
        return c.clone();
    }
    let kc = match &g.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    };
    kc.ok().and_then(|k| k.current_context).unwrap_or_default()
}

/// The client and the namespace commands work in.
pub struct Kube {
    pub client: Client,
    pub namespace: String,
}

impl Kube {
    pub async fn connect(g: &Global) -> Result<Kube, Error> {
        let options = KubeConfigOptions {
            context: g.context.clone(),
            ..KubeConfigOptions::default()
        };
        let config = match &g.kubeconfig {
            Some(path) => {
                let kc = Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
                    path: Some(path.clone()),
                    source,
                })?;
                Config::from_custom_kubeconfig(kc, &options).await
            }
            None => Config::from_kubeconfig(&options).await,
        }
        .map_err(|source| Error::Kubeconfig { path: None, source })?;
        let mut config = config;
        if let Some(user) = &g.as_user {
            config.auth_info.impersonate = Some(user.clone());
        }
        if !g.as_group.is_empty() {
            config.auth_info.impersonate_groups = Some(g.as_group.clone());
        }
        let namespace = g
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config).map_err(Error::Client)?;
        Ok(Kube { client, namespace })
    }

    /// Tasks of the current namespace.
    pub fn tasks(&self) -> Api<Task> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Tasks of every namespace.
    pub fn all_tasks(&self) -> Api<Task> {
        Api::all(self.client.clone())
    }

    /// Task `name`, or `NotFound` / `NotInstalled` as the server says.
    pub async fn task(&self, name: &str) -> Result<Task, Error> {
        self.tasks()
            .get(name)
            .await
            .map_err(|e| Error::api("get", "tasks", &self.namespace, Some(name), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: u16, reason: &str, message: &str) -> kube::Error {
        let s: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": code, "reason": reason, "message": message,
        }))
        .expect("status");
        kube::Error::Api(Box::new(s))
    }

    #[test]
    fn server_answers_become_plain_messages() {
        let e = Error::api(
            "get",
            "tasks",
            "ns",
            Some("t"),
            answer(404, "NotFound", "tasks \"t\" not found"),
        );
        assert_eq!(e.to_string(), "task \"t\" not found in namespace \"ns\"");
        let e = Error::api(
            "list",
            "tasks",
            "ns",
            None,
            answer(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
        );
        assert!(matches!(e, Error::NotInstalled));
        let e = Error::api(
            "create",
            "tasks",
            "ns",
            None,
            answer(403, "Forbidden", "no"),
        );
        assert!(
            e.to_string()
                .starts_with("forbidden: you may not create tasks in namespace \"ns\""),
            "{e}"
        );
        let e = Error::api(
            "create",
            "tasks",
            "ns",
            None,
            answer(422, "Invalid", "metadata.name: Invalid value"),
        );
        assert_eq!(
            e.to_string(),
            "cannot create tasks: the API server refused: metadata.name: Invalid value"
        );
    }

    fn get(e: kube::Error) -> String {
        Error::api("get", "tasks", "ns", Some("t"), e).to_string()
    }

    // The e2e cluster always has the CRD, so the message for a cluster
    // without it is pinned here, from the API server's two 404s.
    #[test]
    fn missing_task_and_missing_crd_are_told_apart() {
        let task = answer(404, "NotFound", "tasks.longtask.dev \"t\" not found");
        assert_eq!(get(task), "task \"t\" not found in namespace \"ns\"");
        let crd = answer(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        let msg = get(crd);
        assert!(
            msg.starts_with("longtask is not installed in this cluster")
                && msg.contains("kubectl apply --server-side -k manifests/"),
            "{msg}"
        );
        let refused = answer(403, "Forbidden", "tasks is forbidden");
        assert_eq!(
            get(refused),
            "forbidden: you may not get tasks in namespace \"ns\" (tasks is forbidden)"
        );
    }
}
