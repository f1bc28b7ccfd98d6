//! The page's API. Each call is the user's own call to the API server
//! (their kubeconfig, their rights): the list is one watch of Tasks
//! pushed as server-sent events, a Task's page one watch of that Task and
//! one of its Events, its log the `logs -f` follower writing into the
//! event stream; cancel and rerun are the commands' own patches and
//! creates, and a refusal says which right is missing.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use axum::response::{IntoResponse, Response};
use crds::Task;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Event as KubeEvent;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event as Change, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde_json::json;
use tokio::sync::mpsc;

use super::rows;
use super::state::Ui;
use crate::client::{Error, Kube};
use crate::task::logs;
use crate::task::logs::sink::Sink;
use crate::task::{cancel as cancel_task, rerun as rerun_task, result as task_result, run};

type Events = Sse<KeepAliveStream<futures::stream::BoxStream<'static, Result<Event, Infallible>>>>;

fn sse(kind: &str, data: &impl Serialize) -> Event {
    Event::default()
        .event(kind)
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event(kind))
}

fn stream(s: impl Stream<Item = Event> + Send + 'static) -> Events {
    Sse::new(s.map(Ok::<Event, Infallible>).boxed()).keep_alive(KeepAlive::default())
}

/// An error and its causes, each once, as the commands print them.
fn text(e: &dyn std::error::Error) -> String {
    crate::print::chain(e)
}

/// The command's error as an answer: 403 for a missing right, 404 for a
/// missing Task, 409 for a result that is not there or not the accepted
/// bytes, or outputs as `outputs::Error::kind` says; the text is the one
/// the command prints.
pub(super) fn refused(e: &Error) -> Response {
    use crate::outputs::Kind;
    let code = match e {
        Error::Outputs(o) => match o.kind() {
            Kind::Forbidden => StatusCode::FORBIDDEN,
            Kind::Missing => StatusCode::NOT_FOUND,
            Kind::Conflict => StatusCode::CONFLICT,
            Kind::Failed => StatusCode::BAD_GATEWAY,
        },
        Error::Forbidden { .. } => StatusCode::FORBIDDEN,
        Error::NotFound { .. } | Error::NotInstalled => StatusCode::NOT_FOUND,
        Error::NoResult { .. } | Error::DigestMismatch { .. } | Error::AlreadyExists { .. } => {
            StatusCode::CONFLICT
        }
        Error::Usage(_) | Error::Refused { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::BAD_GATEWAY,
    };
    (code, Json(json!({ "error": text(e) }))).into_response()
}

pub(super) fn kube_in(ui: &Ui, namespace: &str) -> Kube {
    Kube {
        client: ui.kube.client.clone(),
        namespace: namespace.to_owned(),
    }
}

pub async fn config(State(ui): State<Arc<Ui>>) -> Json<serde_json::Value> {
    Json(json!({ "context": ui.context, "namespace": ui.namespace }))
}

/// The rows of every Task in scope: `reset` with all of them once the
/// watch has listed (and after each relist), then `upsert` and `delete`
/// as they change; `failure` when the API server refuses (the watch
/// tries again with backoff).
pub async fn list(State(ui): State<Arc<Ui>>) -> Events {
    let api: Api<Task> = match &ui.namespace {
        Some(ns) => Api::namespaced(ui.kube.client.clone(), ns),
        None => Api::all(ui.kube.client.clone()),
    };
    let scope = ui.namespace.clone();
    let mut listing: Option<Vec<rows::Row>> = None;
    let events = watcher(api, watcher::Config::default())
        .default_backoff()
        .filter_map(move |ev| {
            let out = match ev {
                Ok(Change::Init) => {
                    listing = Some(Vec::new());
                    None
                }
                Ok(Change::InitApply(t)) => {
                    listing.get_or_insert_default().push(rows::row(&t));
                    None
                }
                Ok(Change::InitDone) => {
                    let rows = listing.take().unwrap_or_default();
                    Some(sse("reset", &json!({ "rows": rows })))
                }
                Ok(Change::Apply(t)) => Some(sse("upsert", &rows::row(&t))),
                Ok(Change::Delete(t)) => Some(sse(
                    "delete",
                    &json!({ "key": format!("{}/{}", t.namespace().unwrap_or_default(), t.name_any()) }),
                )),
                Err(e) => Some(sse("failure", &json!({ "message": watch_failure(&e, scope.as_deref()) }))),
            };
            std::future::ready(out)
        });
    stream(events)
}

/// What a failed watch means to the person at the page.
fn watch_failure(e: &watcher::Error, namespace: Option<&str>) -> String {
    let refusal = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some((s.code, s.message.clone())),
        watcher::Error::WatchError(s) => Some((s.code, s.message.clone())),
        _ => None,
    };
    match refusal {
        Some((403, message)) => {
            let scope = namespace.map_or("in any namespace (-A)".to_owned(), |n| {
                format!("in namespace {n:?}")
            });
            format!("forbidden: you may not list or watch tasks {scope} ({message})")
        }
        Some((_, message)) if !message.is_empty() => {
            format!("the watch of Tasks failed, trying again: {message}")
        }
        _ => format!("the watch of Tasks failed, trying again: {}", text(e)),
    }
}

/// One Event of a Task, as its page shows it.
#[derive(Serialize)]
struct Happened {
    #[serde(rename = "type")]
    type_: String,
    reason: String,
    note: String,
    /// The last time it happened, RFC 3339.
    at: String,
    count: i32,
}

fn happened(e: &KubeEvent) -> Happened {
    let at = e
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref())
        .map(|t| t.0.to_string())
        .or_else(|| e.last_timestamp.as_ref().map(|t| t.0.to_string()))
        .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
        .or_else(|| e.first_timestamp.as_ref().map(|t| t.0.to_string()))
        .unwrap_or_default();
    Happened {
        type_: e.type_.clone().unwrap_or_default(),
        reason: e.reason.clone().unwrap_or_default(),
        note: e.message.clone().unwrap_or_default(),
        at,
        count: e
            .series
            .as_ref()
            .and_then(|s| s.count)
            .or(e.count)
            .unwrap_or(1),
    }
}

/// A Task's page: `task` (its row, spec and status) at each change,
/// `events` (all of its Events, oldest first) at each change of one,
/// `gone` when it does not exist (any more).
pub async fn task(State(ui): State<Arc<Ui>>, Path((ns, name)): Path<(String, String)>) -> Events {
    let client = ui.kube.client.clone();
    let by_name = format!("metadata.name={name}");
    let tasks: Api<Task> = Api::namespaced(client.clone(), &ns);
    let mut seen = false;
    let task_changes = watcher(tasks, watcher::Config::default().fields(&by_name))
        .default_backoff()
        .filter_map(move |ev| {
            let out = match ev {
                Ok(Change::Init) => {
                    seen = false;
                    None
                }
                Ok(Change::InitApply(t) | Change::Apply(t)) => {
                    seen = true;
                    Some(sse("task", &rows::detail(&t)))
                }
                Ok(Change::InitDone) => (!seen).then(|| sse("gone", &json!({}))),
                Ok(Change::Delete(_)) => Some(sse("gone", &json!({}))),
                Err(e) => Some(sse("failure", &json!({ "message": text(&e) }))),
            };
            std::future::ready(out)
        });
    let event_changes = event_changes(client, &ns, &name);
    stream(futures::stream::select(task_changes, event_changes))
}

/// `events` (all of Task `name`'s Events, oldest first) at each change of
/// one, for its page.
fn event_changes(
    client: kube::Client,
    ns: &str,
    name: &str,
) -> impl Stream<Item = Event> + Send + 'static {
    let kind = Task::kind(&());
    let about = format!("involvedObject.name={name},involvedObject.kind={kind}");
    let events: Api<KubeEvent> = Api::namespaced(client, ns);
    let mut all: BTreeMap<String, KubeEvent> = BTreeMap::new();
    let mut listing: Option<BTreeMap<String, KubeEvent>> = None;
    watcher(events, watcher::Config::default().fields(&about))
        .default_backoff()
        .filter_map(move |ev| {
            let key = |e: &KubeEvent| e.metadata.uid.clone().unwrap_or_else(|| e.name_any());
            let changed = match ev {
                Ok(Change::Init) => {
                    listing = Some(BTreeMap::new());
                    false
                }
                Ok(Change::InitApply(e)) => {
                    listing.get_or_insert_default().insert(key(&e), e);
                    false
                }
                Ok(Change::InitDone) => {
                    all = listing.take().unwrap_or_default();
                    true
                }
                Ok(Change::Apply(e)) => {
                    all.insert(key(&e), e);
                    true
                }
                Ok(Change::Delete(e)) => all.remove(&key(&e)).is_some(),
                // Events are a help, not the status: a refusal shows as
                // an empty history.
                Err(_) => false,
            };
            let out = changed.then(|| {
                let mut list: Vec<Happened> = all.values().map(happened).collect();
                list.sort_by(|a, b| a.at.cmp(&b.at));
                sse("events", &list)
            });
            std::future::ready(out)
        })
}

/// The page's sink: each line, note and header an event of the stream.
struct Channel(mpsc::UnboundedSender<Event>);

impl Channel {
    fn send(&self, kind: &str, data: serde_json::Value) -> Result<(), Error> {
        // The page went away: stop following.
        self.0
            .send(sse(kind, &data))
            .map_err(|_| Error::Io(std::io::ErrorKind::BrokenPipe.into()))
    }
}

impl Sink for Channel {
    fn line(&self, prefix: &str, line: &[u8]) -> Result<(), Error> {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\n', '\r']);
        self.send("line", json!({ "text": format!("{prefix}{text}") }))
    }
    fn note(&self, text: &str) -> Result<(), Error> {
        self.send("note", json!({ "text": text }))
    }
    fn header(&self, text: &str) -> Result<(), Error> {
        self.send("pod", json!({ "title": text }))
    }
}

/// Aborts the follower when the page's stream is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A Task's log as `kubectl longtask logs -f --all-attempts` follows it:
/// `pod` before each attempt's lines, `line` for each, `note` for ours
/// (waiting, the tail kept in the status once the pods are gone), `end`.
pub async fn log(State(ui): State<Arc<Ui>>, Path((ns, name)): Path<(String, String)>) -> Response {
    let k = kube_in(&ui, &ns);
    let task = match k.task(&name).await {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let sink = Arc::new(Channel(tx.clone()));
    let follower = tokio::spawn(async move {
        if let Err(e) = logs::follow_into(&k, task, sink).await {
            let _ = tx.send(sse(
                "note",
                &json!({ "text": format!("the log stopped: {}", text(&e)) }),
            ));
        }
        let _ = tx.send(sse("end", &json!({})));
    });
    let events =
        futures::stream::unfold((rx, AbortOnDrop(follower)), |(mut rx, guard)| async move {
            rx.recv().await.map(|e| (e, (rx, guard)))
        });
    stream(events).into_response()
}

/// The exact bytes of the result (gzip decoded, digest checked), as a
/// download; the digest the operator accepted in `X-Longtask-Digest`.
pub async fn result(
    State(ui): State<Arc<Ui>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let k = kube_in(&ui, &ns);
    let task = match k.task(&name).await {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    match task_result::bytes(&k, &task, None).await {
        Ok(bytes) => {
            let digest = crds::result::digest(&bytes);
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
                    (
                        header::CONTENT_DISPOSITION,
                        format!("attachment; filename=\"{name}.result\""),
                    ),
                    (header::HeaderName::from_static("x-longtask-digest"), digest),
                ],
                bytes,
            )
                .into_response()
        }
        Err(e) => refused(&e),
    }
}

/// Sets spec.cancel, as `kubectl longtask cancel` does.
pub async fn cancel(
    State(ui): State<Arc<Ui>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let k = kube_in(&ui, &ns);
    let t = match k.task(&name).await {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    if let Some(line) = cancel_task::already(&t) {
        return Json(json!({ "message": line })).into_response();
    }
    let patch = json!({ "spec": { "cancel": true } });
    match k
        .tasks()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Json(json!({ "message": format!("task/{name} cancelled") })).into_response(),
        Err(e) => refused(&Error::api("patch", "tasks", &ns, Some(&name), e)),
    }
}

/// A new Task with the same spec, as `kubectl longtask rerun` makes it;
/// answers its name.
pub async fn rerun(
    State(ui): State<Arc<Ui>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let k = kube_in(&ui, &ns);
    let origin = match k.task(&name).await {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    let t = rerun_task::build(&origin, None);
    match run::create_with(&k, &t, &PostParams::default()).await {
        Ok(created) => {
            let new = created.name_any();
            Json(json!({ "message": format!("task/{new} created"), "name": new })).into_response()
        }
        Err(e) => refused(&e),
    }
}
