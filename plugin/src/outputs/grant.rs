//! The download links of a finished Task's outputs: the [`DownloadGrant`]
//! under `download.json` in the Secret `<task>-outputs`, read with the
//! user's own credentials (who may `get` that Secret may download), and
//! refused once expired.

use std::collections::BTreeMap;

use crds::outputs::{DOWNLOAD_KEY, DownloadGrant, secret_name};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{Api, Client};

use super::Error;

/// The links of one Task's outputs, valid until `expires`.
#[derive(Clone, Debug, PartialEq)]
pub struct Links {
    pub task: String,
    pub namespace: String,
    pub secret: String,
    pub expires: Timestamp,
    urls: BTreeMap<String, String>,
}

/// How long before their expiry links are read again rather than used: a
/// download started with a link that is about to expire may not get its
/// first byte in time.
pub const RENEW_BEFORE: SignedDuration = SignedDuration::from_secs(30);

/// Reads the links of task `task`'s outputs, in `namespace`, as the user
/// (`client` is theirs). Not a `client::Kube`: that module's errors wrap
/// this one's, so `outputs` stays below it.
pub async fn read(client: &Client, namespace: &str, task: &str) -> Result<Links, Error> {
    let secret = secret_name(task);
    let found = Api::<Secret>::namespaced(client.clone(), namespace)
        .get(&secret)
        .await;
    let s = found.map_err(|e| refused(task, namespace, &secret, e))?;
    parse(task, namespace, &s, Timestamp::now())
}

/// The API server's refusal of the Secret, as a message that names it and
/// the right the user lacks.
fn refused(task: &str, namespace: &str, secret: &str, e: kube::Error) -> Error {
    match &e {
        kube::Error::Api(s) if s.code == 404 => Error::SecretMissing {
            task: task.to_owned(),
            namespace: namespace.to_owned(),
            secret: secret.to_owned(),
        },
        kube::Error::Api(s) if s.code == 403 => Error::SecretForbidden {
            task: task.to_owned(),
            namespace: namespace.to_owned(),
            secret: secret.to_owned(),
            message: s.message.clone(),
        },
        _ => Error::SecretRead {
            namespace: namespace.to_owned(),
            secret: secret.to_owned(),
            source: Box::new(e),
        },
    }
}

/// Pure: the links `secret` holds, refused when absent, malformed or
/// expired at `now`.
pub fn parse(task: &str, namespace: &str, secret: &Secret, now: Timestamp) -> Result<Links, Error> {
    let name = secret
        .metadata
        .name
        .clone()
        .unwrap_or_else(|| secret_name(task));
    let raw = secret.data.as_ref().and_then(|d| d.get(DOWNLOAD_KEY));
    let Some(raw) = raw.filter(|r| !r.0.is_empty()) else {
        return Err(Error::GrantMissing {
            task: task.to_owned(),
            namespace: namespace.to_owned(),
            secret: name,
            key: DOWNLOAD_KEY,
        });
    };
    let grant: DownloadGrant =
        serde_json::from_slice(&raw.0).map_err(|source| Error::GrantInvalid {
            namespace: namespace.to_owned(),
            secret: name.clone(),
            key: DOWNLOAD_KEY,
            source,
        })?;
    let expired = || Error::GrantExpired {
        namespace: namespace.to_owned(),
        secret: name.clone(),
        expires: grant.expires.clone(),
    };
    // An expiry that cannot be read is taken as past: the links cannot be
    // shown to be valid.
    let expires: Timestamp = grant.expires.parse().map_err(|_| expired())?;
    if expires <= now {
        return Err(expired());
    }
    Ok(Links {
        task: task.to_owned(),
        namespace: namespace.to_owned(),
        secret: name,
        expires,
        urls: grant.urls,
    })
}

impl Links {
    /// The link of output `file`: an http(s) URL, or why there is none.
    pub fn url(&self, file: &str) -> Result<&str, Error> {
        let url = self.urls.get(file).ok_or_else(|| Error::NoLink {
            namespace: self.namespace.clone(),
            secret: self.secret.clone(),
            file: file.to_owned(),
        })?;
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("http" | "https") => Ok(url),
            _ => Err(Error::BadLink {
                namespace: self.namespace.clone(),
                secret: self.secret.clone(),
                file: file.to_owned(),
            }),
        }
    }

    /// True when the links expire within [`RENEW_BEFORE`] of `now`.
    pub fn expiring(&self, now: Timestamp) -> bool {
        self.expires.duration_since(now) < RENEW_BEFORE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{NOW, at, now};
    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;

    fn secret(data: Option<&[u8]>) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("t-outputs".into()),
                ..ObjectMeta::default()
            },
            data: data.map(|d| BTreeMap::from([(DOWNLOAD_KEY.to_owned(), ByteString(d.to_vec()))])),
            ..Secret::default()
        }
    }

    fn grant(expires_at: i64, urls: &[(&str, &str)]) -> Vec<u8> {
        serde_json::to_vec(&DownloadGrant {
            expires: at(expires_at).to_string(),
            urls: urls
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
        .expect("json")
    }

    #[test]
    fn a_valid_grant_gives_each_files_link() {
        let g = grant(NOW + 3600, &[("a", "https://s3/b/k?X-Amz-Signature=1")]);
        let links = parse("t", "ns", &secret(Some(&g)), now()).expect("valid");
        assert_eq!(
            links.url("a").expect("a"),
            "https://s3/b/k?X-Amz-Signature=1"
        );
        assert!(!links.expiring(now()));
        assert!(links.expiring(at(NOW + 3590)));
        let e = links.url("b").expect_err("none").to_string();
        assert_eq!(
            e,
            r#"the Secret ns/t-outputs has no download link for output "b""#
        );
    }

    #[test]
    fn expired_missing_and_malformed_grants_say_which_secret() {
        let old = grant(NOW - 1, &[("a", "https://x")]);
        let e = parse("t", "ns", &secret(Some(&old)), now()).expect_err("expired");
        let text = e.to_string();
        assert!(
            text.starts_with("the download links in the Secret ns/t-outputs expired at")
                && text.contains("the operator renews them"),
            "{text}"
        );
        let e = parse("t", "ns", &secret(None), now()).expect_err("no key");
        assert!(matches!(e, Error::GrantMissing { .. }), "{e}");
        assert!(e.to_string().contains("holds no download.json yet"), "{e}");
        let e = parse("t", "ns", &secret(Some(b"{")), now()).expect_err("bad json");
        assert!(matches!(e, Error::GrantInvalid { .. }), "{e}");
        let bad_time = br#"{"expires":"soon","urls":{}}"#;
        let e = parse("t", "ns", &secret(Some(bad_time)), now()).expect_err("bad time");
        assert!(matches!(e, Error::GrantExpired { .. }), "{e}");
    }

    #[test]
    fn only_http_links_are_followed() {
        let g = grant(
            NOW + 60,
            &[("a", "file:///etc/passwd"), ("b", "HTTP://x/y")],
        );
        let links = parse("t", "ns", &secret(Some(&g)), now()).expect("valid");
        assert!(matches!(links.url("a"), Err(Error::BadLink { .. })));
        assert_eq!(links.url("b").expect("b"), "HTTP://x/y");
    }

    fn answer(code: u16) -> kube::Error {
        let s: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": code, "reason": "x", "message": "secrets \"t-outputs\" is forbidden",
        }))
        .expect("status");
        kube::Error::Api(Box::new(s))
    }

    #[test]
    fn refusals_name_the_secret_and_the_right() {
        let e = refused("t", "ns", "t-outputs", answer(403)).to_string();
        assert!(
            e.starts_with("forbidden: you may not get the Secret ns/t-outputs")
                && e.contains("ask for `get` on secrets/t-outputs in namespace ns"),
            "{e}"
        );
        let e = refused("t", "ns", "t-outputs", answer(404)).to_string();
        assert!(
            e.starts_with("the download Secret ns/t-outputs does not exist"),
            "{e}"
        );
    }
}
