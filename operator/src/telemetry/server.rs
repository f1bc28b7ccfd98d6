//! A minimal HTTP/1.1 server for `/metrics`, `/healthz` and `/readyz`.
//! Each listener answers all three paths; one request per connection.
//!
//! Any pod that reaches the port may connect (a NetworkPolicy is what
//! keeps others off), so a listener holds at most [`MAX_CONNECTIONS`] at
//! once and closes any beyond them at once, and a connection has
//! [`READ_TIMEOUT`] to send its request head and [`WRITE_TIMEOUT`] to take
//! the answer: idle or trickling clients cannot hold the slots for longer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tracing::{debug, info, warn};

use crate::telemetry::metrics::Metrics;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Connections one listener serves at once (a scrape and a probe or two
/// need a handful).
pub const MAX_CONNECTIONS: usize = 64;
/// Time a connection has to send its whole request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a connection has to take the whole answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How much one listener takes from its clients.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_connections: usize,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: MAX_CONNECTIONS,
            read_timeout: READ_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
        }
    }
}

/// Parses a listen address; `off` or an empty string disables the listener.
pub fn parse_addr(s: &str) -> Result<Option<SocketAddr>, String> {
    match s.trim() {
        "" | "off" | "none" => Ok(None),
        a => a
            .parse()
            .map(Some)
            .map_err(|e| format!("invalid listen address {a:?}: {e}")),
    }
}

/// Binds `addr` (port 0 picks a free port, which is logged) and serves forever.
pub async fn serve(
    what: &'static str,
    addr: SocketAddr,
    metrics: Arc<Metrics>,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    info!(server = what, addr = %listener.local_addr()?, "listening");
    tokio::spawn(accept_loop(listener, metrics, Limits::default()));
    Ok(())
}

/// Accepts forever: a connection past the cap is closed unanswered.
pub async fn accept_loop(listener: TcpListener, metrics: Arc<Metrics>, limits: Limits) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        match listener.accept().await {
            Ok((sock, peer)) => match slots.clone().try_acquire_owned() {
                Ok(slot) => {
                    let metrics = metrics.clone();
                    tokio::spawn(async move {
                        handle(sock, metrics, limits).await;
                        drop(slot);
                    });
                }
                Err(_) => debug!(%peer, "connection cap reached; closed"),
            },
            Err(e) => {
                warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn handle(mut sock: TcpStream, metrics: Arc<Metrics>, limits: Limits) {
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    let read = async {
        while len < buf.len() {
            let n = sock.read(&mut buf[len..]).await?;
            if n == 0 {
                break;
            }
            len += n;
            if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    };
    if !matches!(
        tokio::time::timeout(limits.read_timeout, read).await,
        Ok(Ok(()))
    ) {
        return;
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or(path);
    let (code, ctype, body) = route(path, &metrics);
    let reply = format!(
        "HTTP/1.1 {code}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n\
         x-content-type-options: nosniff\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        sock.write_all(reply.as_bytes()).await?;
        sock.shutdown().await
    };
    match tokio::time::timeout(limits.write_timeout, write).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => debug!(error = %e, "cannot answer HTTP request"),
        Err(_) => debug!("client too slow to take the answer; closed"),
    }
}

fn route(path: &str, metrics: &Metrics) -> (&'static str, &'static str, String) {
    match path {
        "/metrics" => ("200 OK", OPENMETRICS, metrics.encode()),
        "/healthz" | "/livez" => ("200 OK", "text/plain", "ok\n".to_owned()),
        "/readyz" if metrics.is_ready() => ("200 OK", "text/plain", "ready\n".to_owned()),
        "/readyz" => (
            "503 Service Unavailable",
            "text/plain",
            "caches not synced\n".to_owned(),
        ),
        _ => ("404 Not Found", "text/plain", "not found\n".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("off"), Ok(None));
        assert_eq!(parse_addr(""), Ok(None));
        assert!(parse_addr("127.0.0.1:0").is_ok_and(|a| a.is_some()));
        assert!(parse_addr("nope").is_err());
    }

    #[test]
    fn routes() {
        let m = Metrics::new();
        assert_eq!(route("/readyz", &m).0, "503 Service Unavailable");
        m.set_ready();
        assert_eq!(route("/readyz", &m).0, "200 OK");
        let (_, ctype, body) = route("/metrics", &m);
        assert_eq!(ctype, OPENMETRICS);
        assert!(body.contains("longtask_reconciles_total"), "{body}");
        assert!(body.ends_with("# EOF\n"));
    }

    /// GET `path` on a new connection: the whole answer ("" if closed
    /// unanswered).
    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let head = format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n");
        // A refused connection may be reset before or after the write.
        let _ = s.write_all(head.as_bytes()).await;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Time until the server closes `s` (reads EOF or a reset).
    async fn closed_after(mut s: tokio::net::tcp::OwnedReadHalf) -> Duration {
        let t0 = tokio::time::Instant::now();
        let mut b = [0u8; 64];
        loop {
            match s.read(&mut b).await {
                Ok(0) | Err(_) => return t0.elapsed(),
                Ok(_) => {}
            }
        }
    }

    /// Every answer says nosniff: a browser never takes the text for
    /// something it could run.
    #[tokio::test]
    async fn answers_say_nosniff() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(accept_loop(
            listener,
            Arc::new(Metrics::new()),
            Limits::default(),
        ));
        for path in ["/metrics", "/healthz", "/readyz", "/nope"] {
            let got = get(addr, path).await;
            let head = got.split("\r\n\r\n").next().unwrap();
            assert!(
                head.lines()
                    .any(|l| l.eq_ignore_ascii_case("x-content-type-options: nosniff")),
                "{path}: {head}"
            );
        }
    }

    #[tokio::test]
    async fn cap_and_timeouts() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = Limits {
            max_connections: 4,
            read_timeout: Duration::from_secs(1),
            write_timeout: Duration::from_secs(1),
        };
        tokio::spawn(accept_loop(listener, Arc::new(Metrics::new()), limits));
        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200 OK"));
        // Every slot held: three idle connections and a slowloris that
        // sends one byte of a head that never ends every 100 ms for 5 s.
        let mut held = Vec::new();
        for _ in 0..3 {
            let (r, w) = TcpStream::connect(addr).await.unwrap().into_split();
            held.push((tokio::spawn(closed_after(r)), w));
        }
        let (r, mut w) = TcpStream::connect(addr).await.unwrap().into_split();
        let trickled = tokio::spawn(closed_after(r));
        tokio::spawn(async move {
            for _ in 0..50 {
                if w.write_all(b"x").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        // The fifth is closed at once, unanswered.
        let t0 = tokio::time::Instant::now();
        assert_eq!(get(addr, "/healthz").await, "");
        assert!(
            t0.elapsed() < Duration::from_millis(900),
            "{:?}",
            t0.elapsed()
        );
        // The held ones are closed after the read timeout, the trickling
        // one too, long before its 5 s of bytes.
        let within = |h: tokio::task::JoinHandle<Duration>| async move {
            tokio::time::timeout(Duration::from_secs(8), h)
                .await
                .expect("still open after 8 s")
                .unwrap()
        };
        for (h, _w) in held {
            let after = within(h).await;
            assert!(
                after >= Duration::from_millis(900),
                "idle closed after {after:?}"
            );
            assert!(
                after < Duration::from_secs(3),
                "idle closed after {after:?}"
            );
        }
        let after = within(trickled).await;
        assert!(
            after < Duration::from_secs(3),
            "slowloris held on for {after:?}"
        );
        // Slots are given back: more requests in a row than the cap.
        for _ in 0..10 {
            let got = get(addr, "/metrics").await;
            assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
            assert!(got.ends_with("# EOF\n"), "{got}");
        }
    }
}
