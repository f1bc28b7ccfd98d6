//! One request to the store: what can fail, which failures are worth
//! another try, and which [`Reason`] each one is for a Task.

use std::time::Duration;

use crds::Reason;

use crate::xml::{self, XmlError};

/// Most bytes of an error answer read (S3's are well under 1 KiB).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// What failed in one request to the store.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("the store could not be reached: {0}")]
    Send(#[source] reqwest::Error),
    #[error("the store did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the store answered {status} {code}: {message}")]
    Status {
        status: u16,
        /// S3's error code (`AccessDenied`, `NoSuchBucket`, ...), or empty.
        code: String,
        message: String,
    },
    #[error("reading the store's answer failed")]
    ReadBody(#[source] reqwest::Error),
    #[error("the store's answer is not the XML expected")]
    Parse(#[source] XmlError),
}

impl RequestError {
    /// The reason a Task fails with when this error ends its upload.
    pub fn reason(&self) -> Reason {
        match self {
            RequestError::Send(_) | RequestError::Timeout(_) | RequestError::ReadBody(_) => {
                Reason::OutputStoreUnreachable
            }
            RequestError::Parse(_) => Reason::OutputUploadFailed,
            RequestError::Status {
                status,
                code,
                message,
            } => status_reason(*status, code, message),
        }
    }

    /// Whether another try may succeed: the store unreachable, slow, busy
    /// or failing inside; not a refusal.
    pub fn is_transient(&self) -> bool {
        match self {
            RequestError::Send(e) => !e.is_builder(),
            RequestError::Timeout(_) | RequestError::ReadBody(_) => true,
            RequestError::Parse(_) => false,
            RequestError::Status { status, code, .. } => {
                code == "SlowDown"
                    || *status == 429
                    || (*status >= 500 && !matches!(status, 501 | 505 | 507))
            }
        }
    }

    /// The HTTP status, when the store answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            RequestError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The reason of an error answer.
fn status_reason(status: u16, code: &str, message: &str) -> Reason {
    match code {
        "AccessDenied"
        | "InvalidAccessKeyId"
        | "SignatureDoesNotMatch"
        | "ExpiredToken"
        | "InvalidToken"
        | "TokenRefreshRequired"
        | "RequestTimeTooSkewed" => {
            return Reason::OutputAccessDenied;
        }
        "NoSuchBucket" => return Reason::OutputBucketMissing,
        "EntityTooLarge" | "QuotaExceeded" | "InsufficientStorage" | "MaxMessageLengthExceeded" => {
            return Reason::OutputQuotaExceeded;
        }
        _ => {}
    }
    // A policy's content-length-range refusal, as stores word it.
    if message.contains("content-length-range")
        || message.contains("exceeds the maximum allowed size")
    {
        return Reason::OutputQuotaExceeded;
    }
    match status {
        401 | 403 => Reason::OutputAccessDenied,
        413 | 507 => Reason::OutputQuotaExceeded,
        429 | 502..=504 => Reason::OutputStoreUnreachable,
        _ => Reason::OutputUploadFailed,
    }
}

/// Sends `req` within `timeout`.
pub(crate) async fn send(
    req: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<reqwest::Response, RequestError> {
    match tokio::time::timeout(timeout, req.send()).await {
        Err(_) => Err(RequestError::Timeout(timeout)),
        Ok(Err(e)) if e.is_timeout() => Err(RequestError::Timeout(timeout)),
        Ok(Err(e)) => Err(RequestError::Send(e)),
        Ok(Ok(resp)) => Ok(resp),
    }
}

/// `resp` if it is a success; else its error, read from the body.
pub(crate) async fn check(resp: reqwest::Response) -> Result<reqwest::Response, RequestError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let body = read_limited(resp, MAX_ERROR_BODY).await.unwrap_or_default();
    let (mut code, message) = xml::error(&String::from_utf8_lossy(&body));
    // HEAD answers have no body: a 404 on a bucket is NoSuchBucket.
    if code.is_empty() && status.as_u16() == 404 {
        code = "NotFound".into();
    }
    Err(RequestError::Status {
        status: status.as_u16(),
        code,
        message,
    })
}

/// At most `limit` bytes of `resp`'s body.
async fn read_limited(mut resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, RequestError> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(RequestError::ReadBody)? {
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

/// The whole body of a successful answer, as text, within `timeout`.
pub(crate) async fn text(
    resp: reqwest::Response,
    timeout: Duration,
) -> Result<String, RequestError> {
    match tokio::time::timeout(timeout, resp.text()).await {
        Err(_) => Err(RequestError::Timeout(timeout)),
        Ok(r) => r.map_err(RequestError::ReadBody),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, code: &str, message: &str) -> RequestError {
        RequestError::Status {
            status,
            code: code.into(),
            message: message.into(),
        }
    }

    #[test]
    fn reasons_of_answers() {
        let cases = [
            (
                status(403, "AccessDenied", "Invalid according to Policy"),
                Reason::OutputAccessDenied,
            ),
            (
                status(403, "SignatureDoesNotMatch", ""),
                Reason::OutputAccessDenied,
            ),
            (status(400, "ExpiredToken", ""), Reason::OutputAccessDenied),
            (status(404, "NoSuchBucket", ""), Reason::OutputBucketMissing),
            (
                status(400, "EntityTooLarge", ""),
                Reason::OutputQuotaExceeded,
            ),
            (
                status(
                    400,
                    "",
                    "Policy Condition failed: [\"content-length-range\", 0, 10]",
                ),
                Reason::OutputQuotaExceeded,
            ),
            (status(507, "", ""), Reason::OutputQuotaExceeded),
            (status(503, "SlowDown", ""), Reason::OutputStoreUnreachable),
            (status(500, "InternalError", ""), Reason::OutputUploadFailed),
            (
                status(400, "InvalidArgument", ""),
                Reason::OutputUploadFailed,
            ),
            (
                RequestError::Timeout(Duration::from_secs(1)),
                Reason::OutputStoreUnreachable,
            ),
        ];
        for (err, reason) in cases {
            assert_eq!(err.reason(), reason, "{err}");
        }
    }

    #[test]
    fn which_failures_are_tried_again() {
        assert!(status(503, "SlowDown", "").is_transient());
        assert!(status(500, "InternalError", "").is_transient());
        assert!(status(429, "", "").is_transient());
        assert!(RequestError::Timeout(Duration::from_secs(1)).is_transient());
        assert!(!status(403, "AccessDenied", "").is_transient());
        assert!(!status(404, "NoSuchBucket", "").is_transient());
        assert!(!status(507, "", "").is_transient());
        assert!(!status(400, "EntityTooLarge", "").is_transient());
    }
}
