//! GETs of output objects by their presigned links: the HTTP client, and
//! an answer checked before its first byte is used (status 200, the
//! length `status.outputs` lists). The bytes themselves go through
//! [`super::checked`] (to stdout, to a browser) or the store crate's
//! `download` (to a file).

use std::time::Duration;

use crds::outputs::OutputFile;

use super::Error;

/// The client for the store: connects in 10 s, and gives up on an answer
/// silent for 60 s; no limit on a whole download (outputs reach 5 GiB).
/// TLS is rustls with ring's provider, installed here once.
pub fn client() -> Result<reqwest::Client, Error> {
    longtask_store::install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("kubectl-longtask/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(Error::HttpClient)
}

/// Starts the GET of `file` at `url`: the answer, once the store said 200
/// with the length the status lists.
pub async fn open(
    http: &reqwest::Client,
    url: &str,
    file: &OutputFile,
) -> Result<reqwest::Response, Error> {
    let res = http.get(url).send().await.map_err(|source| Error::Fetch {
        file: file.name.clone(),
        source,
    })?;
    let status = res.status();
    if !status.is_success() {
        let body = res.text().await.unwrap_or_default();
        return Err(Error::StoreRefused {
            file: file.name.clone(),
            status: status.as_u16(),
            why: s3_error(&body),
        });
    }
    let size = u64::try_from(file.size).unwrap_or_default();
    match res.content_length() {
        Some(n) if n != size => Err(Error::SizeMismatch {
            file: file.name.clone(),
            expected: size,
            actual: n.to_string(),
        }),
        _ => Ok(res),
    }
}

/// Pure: what an S3 error answer says (`<Code>` and `<Message>`), or the
/// start of another body; control characters made visible.
pub fn s3_error(body: &str) -> String {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = body.find(&open)? + open.len();
        let len = body[start..].find(&close)?;
        Some(body[start..start + len].trim().to_owned())
    };
    let text = match (tag("Code"), tag("Message")) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c,
        _ => body.trim().chars().take(200).collect(),
    };
    crate::safe::visible(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_errors_are_read_from_their_xml() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>Request has expired</Message><Key>k</Key></Error>"#;
        assert_eq!(s3_error(xml), "AccessDenied: Request has expired");
        assert_eq!(
            s3_error("<Error><Code>NoSuchKey</Code></Error>"),
            "NoSuchKey"
        );
        assert_eq!(s3_error("  bad gateway\u{1b}[2J "), "bad gateway^[[2J");
        assert_eq!(s3_error(&"x".repeat(500)).len(), 200);
    }
}
