//! Pure: who may talk to the UI server. It listens on 127.0.0.1 only, and
//! still every request must name this server in its Host header (a page
//! of another site that rebinds its DNS name to 127.0.0.1 sends its own
//! name) and, when a browser says where a request comes from (Origin),
//! come from this server's own pages. Every API request must also carry
//! the token in the `X-Longtask-Token` header: never a cookie (browsers
//! send a cookie of 127.0.0.1 to every port of it, so to every other local
//! server) and never the URL's query (server logs, Referer). A plain HTML
//! form cannot set a header, and a page of another origin that tries
//! meets a CORS preflight this server refuses. The three static assets
//! carry no data and are served without the token. So are one-time
//! download links (`/download/<64 hex>`, `download.rs`): a browser's own
//! download cannot send a header, and the link's random ticket, good once
//! for 60 s and issued only to a request with the token, is the secret.

use axum::http::{HeaderMap, HeaderName, header};

/// The header every API request carries the token in.
pub const TOKEN_HEADER: HeaderName = HeaderName::from_static("x-longtask-token");

/// The paths served without the token: the page and its script and
/// style, the same bytes for everyone.
const STATIC: [&str; 3] = ["/", "/app.js", "/app.css"];

/// What the server checks requests against.
#[derive(Clone, Debug)]
pub struct Guard {
    pub token: String,
    pub port: u16,
}

/// Why a request is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The Host header names another server (DNS rebinding), or none.
    Host(String),
    /// The Origin header names another site (a cross-site request).
    Origin(String),
    /// No token header, or a wrong one.
    Token,
}

impl Refusal {
    /// The text of the 403 answer.
    pub fn message(&self) -> String {
        match self {
            Refusal::Host(h) => format!(
                "refused: Host {h:?} is not this server (127.0.0.1 or localhost with its port)"
            ),
            Refusal::Origin(o) => {
                format!("refused: a request from {o:?}, not from this server's own pages")
            }
            Refusal::Token => format!(
                "refused: no token or a wrong one in the {TOKEN_HEADER} header: \
                 open the URL that `kubectl longtask ui` printed"
            ),
        }
    }
}

impl Guard {
    /// A guard with a fresh random token.
    pub fn new(port: u16) -> std::io::Result<Guard> {
        Ok(Guard {
            token: random_token()?,
            port,
        })
    }

    /// The page's URL with the token in its fragment, which a browser
    /// never sends to any server; the page's script moves it into the
    /// tab's session storage and out of the address bar.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/#token={}", self.port, self.token)
    }

    fn own(&self, host: &str) -> bool {
        [
            format!("127.0.0.1:{}", self.port),
            format!("localhost:{}", self.port),
        ]
        .iter()
        .any(|h| h == host)
    }

    /// Whether a request for `path` with `headers` may be answered. Only
    /// the headers named here are read: a cookie or a `token=` in the
    /// query counts for nothing.
    pub fn check(&self, path: &str, headers: &HeaderMap) -> Result<(), Refusal> {
        let text = |name: &HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
        let host = text(&header::HOST).unwrap_or_default();
        if !self.own(host) {
            return Err(Refusal::Host(host.to_owned()));
        }
        if let Some(o) = text(&header::ORIGIN) {
            let site = o.strip_prefix("http://").filter(|h| self.own(h)).is_some();
            if !site {
                return Err(Refusal::Origin(o.to_owned()));
            }
        }
        if STATIC.contains(&path) || ticket_path(path) {
            return Ok(());
        }
        let mut given = headers.get_all(&TOKEN_HEADER).iter();
        match (given.next(), given.next()) {
            (Some(t), None) if same(t.as_bytes(), self.token.as_bytes()) => Ok(()),
            _ => Err(Refusal::Token),
        }
    }
}

/// `/download/` and a ticket: 64 lower-case hex digits, nothing more.
fn ticket_path(path: &str) -> bool {
    path.strip_prefix("/download/").is_some_and(|t| {
        t.len() == 64
            && t.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 32 random bytes from the kernel, as hex.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut buf = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard {
            token: "abc123".into(),
            port: 8123,
        }
    }

    /// Request headers from name-value pairs.
    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                HeaderName::from_bytes(n.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    const HOST: (&str, &str) = ("host", "127.0.0.1:8123");

    #[test]
    fn the_api_takes_the_token_in_its_header_only() {
        let g = guard();
        let api = "/api/tasks/ns/t/cancel";
        assert_eq!(
            g.check(api, &headers(&[HOST, ("x-longtask-token", "abc123")])),
            Ok(())
        );
        assert_eq!(
            g.check(
                "/api/config",
                &headers(&[("host", "localhost:8123"), ("X-Longtask-Token", "abc123")])
            ),
            Ok(())
        );
        // The old ways in: the cookie the first page set, and the token
        // in the query (the path seen here never includes it anyway).
        for cookie in ["longtask_ui_8123=abc123", "a=b; longtask_ui_8123=abc123"] {
            assert_eq!(
                g.check(api, &headers(&[HOST, ("cookie", cookie)])),
                Err(Refusal::Token),
                "{cookie}"
            );
        }
        assert_eq!(
            g.check(&format!("{api}?token=abc123"), &headers(&[HOST])),
            Err(Refusal::Token)
        );
        // Nothing, a wrong token, a prefix of it, or two of them.
        for bad in [
            &[][..],
            &["abc124"],
            &["abc12"],
            &["abc1234"],
            &["abc123", "x"],
        ] {
            let mut h = headers(&[HOST]);
            for t in bad {
                h.append(&TOKEN_HEADER, t.parse().expect("value"));
            }
            assert_eq!(g.check(api, &h), Err(Refusal::Token), "{bad:?}");
        }
    }

    #[test]
    fn a_same_origin_post_without_the_header_is_refused() {
        // What a form on a page of this very origin would send.
        let g = guard();
        let h = headers(&[
            HOST,
            ("origin", "http://127.0.0.1:8123"),
            ("content-type", "application/x-www-form-urlencoded"),
            ("cookie", "longtask_ui_8123=abc123"),
        ]);
        assert_eq!(g.check("/api/tasks/ns/t/cancel", &h), Err(Refusal::Token));
    }

    #[test]
    fn static_assets_need_no_token_but_this_host() {
        let g = guard();
        for path in STATIC {
            assert_eq!(g.check(path, &headers(&[HOST])), Ok(()), "{path}");
            assert!(matches!(
                g.check(path, &headers(&[("host", "evil.example:8123")])),
                Err(Refusal::Host(_))
            ));
        }
        // Anything else is not a static asset, whatever it looks like.
        for path in ["/app.js/", "/index.html", "/api/", "//", "/favicon.ico"] {
            assert_eq!(
                g.check(path, &headers(&[HOST])),
                Err(Refusal::Token),
                "{path}"
            );
        }
    }

    #[test]
    fn download_links_need_no_token_but_this_host_and_a_ticket() {
        let g = guard();
        let ticket = format!("/download/{}", "0a".repeat(32));
        assert_eq!(g.check(&ticket, &headers(&[HOST])), Ok(()));
        assert!(matches!(
            g.check(&ticket, &headers(&[("host", "evil.example:8123")])),
            Err(Refusal::Host(_))
        ));
        assert!(matches!(
            g.check(
                &ticket,
                &headers(&[HOST, ("origin", "http://evil.example")])
            ),
            Err(Refusal::Origin(_))
        ));
        for path in [
            "/download/".to_owned(),
            format!("/download/{}", "0A".repeat(32)),
            format!("/download/{}", "0a".repeat(31)),
            format!("/download/{}/x", "0a".repeat(32)),
            format!("/download/{}x", "0a".repeat(32)),
            format!("/api/download/{}", "0a".repeat(32)),
        ] {
            assert_eq!(
                g.check(&path, &headers(&[HOST])),
                Err(Refusal::Token),
                "{path}"
            );
        }
    }

    #[test]
    fn foreign_hosts_and_origins_are_refused_even_with_the_token() {
        let g = guard();
        let t = ("x-longtask-token", "abc123");
        let api = "/api/config";
        assert!(matches!(
            g.check(api, &headers(&[("host", "evil.example:8123"), t])),
            Err(Refusal::Host(_))
        ));
        assert!(matches!(
            g.check(api, &headers(&[("host", "127.0.0.1:9999"), t])),
            Err(Refusal::Host(_))
        ));
        assert!(matches!(
            g.check(api, &headers(&[HOST, ("origin", "http://evil.example"), t])),
            Err(Refusal::Origin(_))
        ));
        // Another port of this machine is another origin.
        assert!(matches!(
            g.check(
                api,
                &headers(&[HOST, ("origin", "http://127.0.0.1:9000"), t])
            ),
            Err(Refusal::Origin(_))
        ));
        assert!(matches!(
            g.check(api, &headers(&[HOST, ("origin", "null"), t])),
            Err(Refusal::Origin(_))
        ));
        assert_eq!(
            g.check(
                api,
                &headers(&[HOST, ("origin", "http://localhost:8123"), t])
            ),
            Ok(())
        );
        assert!(matches!(
            g.check("/", &HeaderMap::new()),
            Err(Refusal::Host(_))
        ));
    }

    #[test]
    fn the_url_carries_the_token_in_its_fragment() {
        let g = guard();
        assert_eq!(g.url(), "http://127.0.0.1:8123/#token=abc123");
    }

    #[test]
    fn tokens_are_fresh_and_long() {
        let a = random_token().expect("urandom");
        let b = random_token().expect("urandom");
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
