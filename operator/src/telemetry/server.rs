//! A minimal HTTP/1.1 server for `/metrics`, `/healthz` and `/readyz`.
//! Each listener answers all three paths; one request per connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, info, warn};

use crate::telemetry::metrics::Metrics;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

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
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((sock, _)) => {
                    tokio::spawn(handle(sock, metrics.clone()));
                }
                Err(e) => {
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok(())
}

async fn handle(mut sock: TcpStream, metrics: Arc<Metrics>) {
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
        tokio::time::timeout(Duration::from_secs(5), read).await,
        Ok(Ok(()))
    ) {
        return;
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or(path);
    let (code, ctype, body) = route(path, &metrics);
    let reply = format!(
        "HTTP/1.1 {code}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    if let Err(e) = sock.write_all(reply.as_bytes()).await {
        debug!(error = %e, "cannot answer HTTP request");
    }
    let _ = sock.shutdown().await;
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
}
