//! One API call's failure (`CallError`), shared by the reconcilers (inside
//! their `ApiError`s) and the elector, and how an error is printed: each
//! link of its chain once.

use std::fmt;
use std::time::Duration;

/// Why one API call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The API server answered with an error, or the connection failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// No answer within the per-call timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

impl CallError {
    /// HTTP status of an API error, if any.
    pub fn code(&self) -> Option<u16> {
        match self {
            Self::Kube(kube::Error::Api(s)) => Some(s.code),
            _ => None,
        }
    }

    /// The API server's message when it refused the request for what it
    /// carries, so that sending it again cannot succeed: 400 BadRequest (it
    /// cannot decode it, e.g. a quantity such as "lots"), 413 (too large),
    /// 422 Invalid (validation failed). Never 403: RBAC, a quota or a
    /// terminating namespace say Forbidden, and they change without the
    /// request changing; nor 404 (a namespace gone), 409, 429 or 5xx.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            Self::Kube(kube::Error::Api(s)) if matches!(s.code, 400 | 413 | 422) => {
                Some(&s.message)
            }
            _ => None,
        }
    }

    /// The outcome label of `longtask_api_requests_total`.
    pub fn outcome(&self) -> &'static str {
        match (self, self.code()) {
            (Self::Timeout(_), _) => "timeout",
            (_, Some(404)) => "not_found",
            (_, Some(409)) => "conflict",
            (_, Some(403)) => "forbidden",
            (_, Some(c)) if c < 500 => "client_error",
            (_, Some(_)) => "server_error",
            (_, None) => "transport_error",
        }
    }

    /// The `CallError` at the root of `err`'s chain, if there is one.
    pub fn within<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a CallError> {
        let mut next = Some(err);
        while let Some(e) = next {
            if let Some(c) = e.downcast_ref::<CallError>() {
                return Some(c);
            }
            next = e.source();
        }
        None
    }
}

/// The outcome label of a call's result.
pub fn outcome<T>(res: &Result<T, CallError>) -> &'static str {
    res.as_ref().map_or_else(CallError::outcome, |_| "ok")
}

/// Prints an error and its sources, `outer: inner: root`. Errors here
/// never repeat their source in their own message, so each cause shows once.
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot get Job ns/t")]
    struct Outer(#[source] CallError);

    #[test]
    fn a_chain_prints_each_cause_once() {
        let e = Outer(CallError::Timeout(Duration::from_secs(3)));
        assert_eq!(
            Chain(&e).to_string(),
            "cannot get Job ns/t: no answer within 3s"
        );
        assert_eq!(
            CallError::within(&e).map(CallError::outcome),
            Some("timeout")
        );
    }
}
