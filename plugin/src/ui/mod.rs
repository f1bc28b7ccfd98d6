//! `kubectl longtask ui`: a web page of the Tasks, served on 127.0.0.1
//! from this process, talking to the API server as the user (the same
//! kubeconfig, context and impersonation as every other command), so RBAC
//! decides what each person sees and may do. Every asset is in the binary.
//! The list is one watch pushed to the page as a stream of server-sent
//! events of trimmed rows (`rows.rs`); who may ask is `guard.rs`; how the
//! browser is opened without the token on a command line, `opener.rs`;
//! output files through one-time links, `download.rs` (their tickets,
//! `tickets.rs`). The handlers share `state::Ui`; this module builds it
//! and routes to them, and none of them imports from it. What the page
//! does to a Task is `task/`, as the commands do it.

mod api;
mod download;
mod guard;
mod opener;
mod rows;
mod state;
mod tickets;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::cli::UiArgs;
use crate::client::{Error, Kube};
use guard::Guard;
use state::Ui;

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

pub async fn run(k: Kube, a: UiArgs, context: String) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", a.port)).await?;
    let port = listener.local_addr()?.port();
    let namespace = (!a.all_namespaces).then(|| k.namespace.clone());
    let ui = Arc::new(Ui {
        kube: k,
        namespace,
        context,
        guard: Guard::new(port)?,
        http: crate::outputs::fetch::client()?,
        downloads: tickets::Tickets::default(),
    });
    let url = ui.guard.url();
    // The terminal is the user's own: the URL with its token is printed.
    crate::print::out(format!("longtask ui: {url}\n(Ctrl-C stops it)\n"))?;
    // Held until the server stops: dropping it removes the file.
    let _opened = if a.no_browser {
        None
    } else {
        open_browser(&url)
    };
    let (said, heard) = tokio::sync::oneshot::channel();
    let serving = axum::serve(listener, router(ui)).with_graceful_shutdown(async {
        stopped().await;
        let _ = said.send(());
    });
    // An open page holds its event streams open for good, and a graceful
    // shutdown waits for them: once stopped, the server has a moment to
    // finish what is in flight and is then dropped, streams and all.
    let grace = async {
        match heard.await {
            Ok(()) => tokio::time::sleep(std::time::Duration::from_secs(2)).await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        served = serving.into_future() => served?,
        () = grace => {}
    }
    Ok(())
}

/// Ctrl-C, a `kill` or the terminal closing: each stops the server
/// gracefully, so the redirect file is removed.
async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
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
        .route("/api/tasks/{ns}/{name}/download", post(download::ticket))
        .route("/download/{ticket}", get(download::redeem))
        .fallback(|| async { StatusCode::NOT_FOUND })
        .layer(middleware::from_fn_with_state(ui.clone(), guarded))
        .layer(middleware::from_fn(hardened))
        .with_state(ui)
}

fn page(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// Refuses what `Guard` refuses (403 with why).
async fn guarded(State(ui): State<Arc<Ui>>, req: Request, next: Next) -> Response {
    match ui.guard.check(req.uri().path(), req.headers()) {
        Err(why) => (StatusCode::FORBIDDEN, why.message()).into_response(),
        Ok(()) => next.run(req).await,
    }
}

/// The headers every answer carries, refusals, errors, JSON and streams
/// included: no type sniffing, no caching, no Referer, and nothing loaded
/// from anywhere else (no CDN, no inline script).
async fn hardened(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
        ),
    );
    res
}

/// Opens the page in the user's browser (xdg-open, or open on macOS)
/// through a private redirect file, never with the token as an argument;
/// a machine without an opener just has the printed URL.
fn open_browser(url: &str) -> Option<opener::Redirect> {
    let unique = match guard::random_token() {
        Ok(t) => t.chars().take(16).collect::<String>(),
        Err(e) => {
            crate::print::note!("no browser opened ({e}): open the URL above");
            return None;
        }
    };
    let redirect = match opener::Redirect::write(url, &unique) {
        Ok(r) => r,
        Err(e) => {
            crate::print::note!(
                "no browser opened ({}): open the URL above",
                crate::print::chain(&e)
            );
            return None;
        }
    };
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(redirect.url())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Reaped when it exits, so no zombie is left while the server runs.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(_) => crate::print::note!("no browser opened ({opener} not found): open the URL above"),
    }
    Some(redirect)
}
