//! `kubectl longtask ui`: a web page of the Tasks, served on 127.0.0.1
//! from this process, talking to the API server as the user (the same
//! kubeconfig, context and impersonation as every other command), so RBAC
//! decides what each person sees and may do. Every asset is in the binary.
//! The list is one watch pushed to the page as server-sent events of
//! trimmed rows (`rows.rs`); who may ask is `guard.rs`.

mod api;
mod guard;
mod rows;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::cli::UiArgs;
use crate::client::{Error, Kube};
pub use guard::Guard;

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// What every handler shares.
pub struct Ui {
    pub kube: Kube,
    /// `None`: every namespace (`-A`).
    pub namespace: Option<String>,
    pub context: String,
    pub guard: Guard,
}

pub async fn run(k: Kube, a: UiArgs, context: String) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", a.port)).await?;
    let port = listener.local_addr()?.port();
    let namespace = (!a.all_namespaces).then(|| k.namespace.clone());
    let ui = Arc::new(Ui {
        kube: k,
        namespace,
        context,
        guard: Guard::new(port)?,
    });
    let url = format!("http://127.0.0.1:{port}/?token={}", ui.guard.token);
    crate::out(format!("longtask ui: {url}\n(Ctrl-C stops it)\n"))?;
    if !a.no_browser {
        open_browser(&url);
    }
    axum::serve(listener, router(ui))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// The routes, behind the guard.
pub fn router(ui: Arc<Ui>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { page(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { page(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/app.css",
            get(|| async { page(APP_CSS, "text/css; charset=utf-8") }),
        )
        .route("/api/config", get(api::config))
        .route("/api/tasks/stream", get(api::list))
        .route("/api/tasks/{ns}/{name}/stream", get(api::task))
        .route("/api/tasks/{ns}/{name}/log", get(api::log))
        .route("/api/tasks/{ns}/{name}/result", get(api::result))
        .route("/api/tasks/{ns}/{name}/cancel", post(api::cancel))
        .route("/api/tasks/{ns}/{name}/rerun", post(api::rerun))
        .layer(middleware::from_fn_with_state(ui.clone(), guarded))
        .with_state(ui)
}

fn page(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-store"),
            // Nothing from anywhere else: no CDN, no inline script.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// Refuses what `Guard` refuses (403 with why); the first request with
/// the token in its URL gets the cookie and is sent on without it.
async fn guarded(State(ui): State<Arc<Ui>>, req: Request, next: Next) -> Response {
    let h = req.headers();
    let text = |h: &HeaderMap, name: header::HeaderName| {
        h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    let host = text(h, header::HOST);
    let origin = text(h, header::ORIGIN);
    let cookies: Vec<String> = h
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let seen = guard::Seen {
        host: host.as_deref(),
        origin: origin.as_deref(),
        cookies: cookies.iter().map(String::as_str).collect(),
        query: req.uri().query(),
    };
    match ui.guard.check(&seen) {
        Err(why) => (StatusCode::FORBIDDEN, why.message()).into_response(),
        // The page's URL loses the token (out of the history and of
        // screenshots); the cookie carries it from now on.
        Ok(true) if req.uri().path() == "/" => (
            StatusCode::SEE_OTHER,
            [
                (header::SET_COOKIE, ui.guard.set_cookie()),
                (header::LOCATION, "/".to_owned()),
            ],
        )
            .into_response(),
        Ok(true) => {
            let mut res = next.run(req).await;
            if let Ok(v) = ui.guard.set_cookie().parse() {
                res.headers_mut().insert(header::SET_COOKIE, v);
            }
            res
        }
        Ok(false) => next.run(req).await,
    }
}

/// Opens `url` in the user's browser (xdg-open, or open on macOS); a
/// machine without one just has the printed URL.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        crate::note!("no browser opened ({opener} not found): open the URL above");
    }
}
