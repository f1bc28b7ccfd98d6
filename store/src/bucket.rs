//! Where a bucket is and who signs for it.

use std::fmt;

use crate::client::StoreError;

/// Keys that sign requests: the store's own (the operator's), never a
/// worker's. `Debug` does not print the secret or the token.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Set for temporary credentials (STS); sent as `x-amz-security-token`.
    pub session_token: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// An S3 bucket at an endpoint: how its URLs are made and signed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// `http` or `https`.
    scheme: &'static str,
    /// `host[:port]` of the endpoint, as the Host header carries it (no
    /// default port).
    endpoint_host: String,
    bucket: String,
    region: String,
    path_style: bool,
}

impl Bucket {
    /// The bucket an `OutputStore` names.
    pub fn new(s3: &crds::outputs::S3Store) -> Result<Bucket, StoreError> {
        Bucket::from_parts(&s3.endpoint, &s3.bucket, s3.region(), s3.path_style())
    }

    /// A bucket from its parts: `endpoint` is `http(s)://host[:port]` with
    /// at most a trailing `/`.
    pub fn from_parts(
        endpoint: &str,
        bucket: &str,
        region: &str,
        path_style: bool,
    ) -> Result<Bucket, StoreError> {
        let invalid = |problem: &'static str| StoreError::Endpoint {
            endpoint: endpoint.to_string(),
            problem,
        };
        let (scheme, rest) = if let Some(rest) = endpoint.strip_prefix("https://") {
            ("https", rest)
        } else if let Some(rest) = endpoint.strip_prefix("http://") {
            ("http", rest)
        } else {
            return Err(invalid("it must start with http:// or https://"));
        };
        let host = rest.strip_suffix('/').unwrap_or(rest);
        if host.is_empty() {
            return Err(invalid("it has no host"));
        }
        if host
            .chars()
            .any(|c| matches!(c, '/' | '?' | '#' | '@') || c.is_whitespace() || c.is_control())
        {
            return Err(invalid("it must be scheme://host[:port], nothing more"));
        }
        if bucket.is_empty() || bucket.contains('/') || bucket.chars().any(char::is_control) {
            return Err(StoreError::BucketName {
                bucket: bucket.to_string(),
            });
        }
        // The Host header (and so the signature) leaves out a default port,
        // as the HTTP client does.
        let default_port = if scheme == "https" { ":443" } else { ":80" };
        let host = host.strip_suffix(default_port).unwrap_or(host);
        Ok(Bucket {
            scheme,
            endpoint_host: host.to_string(),
            bucket: bucket.to_string(),
            region: region.to_string(),
            path_style,
        })
    }

    /// `s3://<bucket>/<key>`.
    pub fn s3_url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        &self.bucket
    }

    /// The signing region.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The URL of the bucket itself: where POST uploads go.
    pub fn bucket_url(&self) -> String {
        format!("{}://{}{}", self.scheme, self.host(), self.bucket_path())
    }

    /// The URL of one object.
    pub fn object_url(&self, key: &str) -> String {
        format!("{}://{}{}", self.scheme, self.host(), self.object_path(key))
    }

    /// The Host header of requests to this bucket.
    pub(crate) fn host(&self) -> String {
        if self.path_style {
            self.endpoint_host.clone()
        } else {
            format!("{}.{}", self.bucket, self.endpoint_host)
        }
    }

    /// The path of the bucket: `/<bucket>` (path style) or `/`.
    pub(crate) fn bucket_path(&self) -> String {
        if self.path_style {
            format!("/{}", uri_encode(&self.bucket, false))
        } else {
            "/".to_string()
        }
    }

    /// The path of an object, URI-encoded as SigV4 wants it.
    pub(crate) fn object_path(&self, key: &str) -> String {
        let key = uri_encode(key, true);
        if self.path_style {
            format!("/{}/{key}", uri_encode(&self.bucket, false))
        } else {
            format!("/{key}")
        }
    }

    /// `scheme://host`, for URLs made from a path and a query.
    pub(crate) fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.host())
    }
}

/// SigV4's URI encoding: every byte but `A-Za-z0-9-._~` as `%XX`
/// (upper-case hex), and `/` kept in a path.
pub(crate) fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b))
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_style_and_virtual_host_urls() {
        let b = Bucket::from_parts("http://127.0.0.1:8333/", "out", "us-east-1", true).unwrap();
        assert_eq!(b.bucket_url(), "http://127.0.0.1:8333/out");
        assert_eq!(
            b.object_url("a b/c+d"),
            "http://127.0.0.1:8333/out/a%20b/c%2Bd"
        );
        assert_eq!(b.s3_url("k/x"), "s3://out/k/x");
        let v =
            Bucket::from_parts("https://s3.amazonaws.com:443", "out", "eu-west-1", false).unwrap();
        assert_eq!(v.bucket_url(), "https://out.s3.amazonaws.com/");
        assert_eq!(v.object_url("k"), "https://out.s3.amazonaws.com/k");
    }

    #[test]
    fn endpoints_that_are_not_just_an_origin_are_refused() {
        for bad in [
            "s3.local",
            "http://",
            "http://h/path",
            "http://u@h",
            "ftp://h",
        ] {
            assert!(
                matches!(
                    Bucket::from_parts(bad, "b", "r", true),
                    Err(StoreError::Endpoint { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            Bucket::from_parts("http://h", "a/b", "r", true),
            Err(StoreError::BucketName { .. })
        ));
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let c = Credentials {
            access_key_id: "AK".into(),
            secret_access_key: "SECRET".into(),
            session_token: Some("TOKEN".into()),
        };
        let shown = format!("{c:?}");
        assert!(shown.contains("AK") && !shown.contains("SECRET") && !shown.contains("TOKEN"));
    }
}
