//! Pure: who may talk to the UI server. It listens on 127.0.0.1 only, and
//! still every request must carry the token printed with the URL (as a
//! cookie once the first page set it), name this server in its Host
//! header (a page of another site that rebinds its DNS name to 127.0.0.1
//! sends its own name), and, when a browser says where a request comes
//! from (Origin), come from this server's own pages.

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
    /// No token, or a wrong one.
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
            Refusal::Token => {
                "refused: no token or a wrong one: open the URL that `kubectl longtask ui` printed"
                    .to_owned()
            }
        }
    }
}

/// What a request carries that the guard reads.
#[derive(Debug, Default)]
pub struct Seen<'a> {
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    /// The `Cookie` header(s).
    pub cookies: Vec<&'a str>,
    /// The query string, for `token=`.
    pub query: Option<&'a str>,
}

impl Guard {
    /// A guard with a fresh random token.
    pub fn new(port: u16) -> std::io::Result<Guard> {
        Ok(Guard {
            token: random_token()?,
            port,
        })
    }

    /// The cookie that carries the token: one name per port, since
    /// browsers share cookies across the ports of a host.
    pub fn cookie_name(&self) -> String {
        format!("longtask_ui_{}", self.port)
    }

    /// The `Set-Cookie` value after a request with the token in its URL.
    pub fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name(),
            self.token
        )
    }

    fn own(&self, host: &str) -> bool {
        [
            format!("127.0.0.1:{}", self.port),
            format!("localhost:{}", self.port),
        ]
        .iter()
        .any(|h| h == host)
    }

    /// Ok(true) when the token came in the URL (set the cookie then).
    pub fn check(&self, r: &Seen<'_>) -> Result<bool, Refusal> {
        let host = r.host.unwrap_or_default();
        if !self.own(host) {
            return Err(Refusal::Host(host.to_owned()));
        }
        if let Some(o) = r.origin {
            let site = o.strip_prefix("http://").filter(|h| self.own(h)).is_some();
            if !site {
                return Err(Refusal::Origin(o.to_owned()));
            }
        }
        let in_url = r
            .query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter_map(|kv| kv.strip_prefix("token="))
            .any(|t| same(t, &self.token));
        if in_url {
            return Ok(true);
        }
        let name = self.cookie_name();
        let in_cookie = r
            .cookies
            .iter()
            .flat_map(|c| c.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .any(|(k, v)| k == name && same(v, &self.token));
        if in_cookie {
            Ok(false)
        } else {
            Err(Refusal::Token)
        }
    }
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell how much of a guess was right.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// 32 random bytes from the kernel, as hex.
fn random_token() -> std::io::Result<String> {
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

    fn seen<'a>(
        host: &'a str,
        origin: Option<&'a str>,
        cookie: Option<&'a str>,
        query: Option<&'a str>,
    ) -> Seen<'a> {
        Seen {
            host: Some(host),
            origin,
            cookies: cookie.into_iter().collect(),
            query,
        }
    }

    #[test]
    fn the_token_comes_in_the_url_or_the_cookie() {
        let g = guard();
        assert_eq!(
            g.check(&seen("127.0.0.1:8123", None, None, Some("token=abc123"))),
            Ok(true)
        );
        assert_eq!(
            g.check(&seen(
                "localhost:8123",
                None,
                Some("a=b; longtask_ui_8123=abc123"),
                None
            )),
            Ok(false)
        );
        assert_eq!(
            g.check(&seen("127.0.0.1:8123", None, None, None)),
            Err(Refusal::Token)
        );
        assert_eq!(
            g.check(&seen("127.0.0.1:8123", None, None, Some("token=abc124"))),
            Err(Refusal::Token)
        );
        // Another port's cookie is another server's.
        assert_eq!(
            g.check(&seen(
                "127.0.0.1:8123",
                None,
                Some("longtask_ui_9000=abc123"),
                None
            )),
            Err(Refusal::Token)
        );
        assert_eq!(
            g.check(&seen("127.0.0.1:8123", None, None, Some("token=abc12"))),
            Err(Refusal::Token)
        );
    }

    #[test]
    fn foreign_hosts_and_origins_are_refused_even_with_the_token() {
        let g = guard();
        let q = Some("token=abc123");
        assert!(matches!(
            g.check(&seen("evil.example:8123", None, None, q)),
            Err(Refusal::Host(_))
        ));
        assert!(matches!(
            g.check(&seen("127.0.0.1:9999", None, None, q)),
            Err(Refusal::Host(_))
        ));
        assert!(matches!(
            g.check(&seen(
                "127.0.0.1:8123",
                Some("http://evil.example"),
                None,
                q
            )),
            Err(Refusal::Origin(_))
        ));
        assert!(matches!(
            g.check(&seen("127.0.0.1:8123", Some("null"), None, q)),
            Err(Refusal::Origin(_))
        ));
        assert_eq!(
            g.check(&seen(
                "127.0.0.1:8123",
                Some("http://localhost:8123"),
                None,
                q
            )),
            Ok(true)
        );
        let none = Seen::default();
        assert!(matches!(g.check(&none), Err(Refusal::Host(_))));
    }

    #[test]
    fn tokens_are_fresh_and_long() {
        let a = random_token().expect("urandom");
        let b = random_token().expect("urandom");
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
