//! AWS Signature Version 4 for S3, pure: no clock, no network.
//!
//! Three forms are used: the POST policy of an [`UploadGrant`] (the
//! base64 policy is the string to sign), query-string presigning (download
//! URLs, and upload URLs for the bench's plain-PUT baseline), and the
//! `Authorization` header of the admin client's requests.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use crds::outputs::{SHA256_META, UploadGrant};
use jiff::Timestamp;
use ring::hmac;

use crate::bucket::{Bucket, Credentials, uri_encode};
use crate::hex;

/// Longest life of a presigned URL: S3 refuses longer (7 days).
pub const MAX_PRESIGN: Duration = Duration::from_secs(7 * 24 * 3600);

const ALGORITHM: &str = "AWS4-HMAC-SHA256";
const SERVICE: &str = "s3";
/// The payload hash of requests whose body is not signed (presigned URLs).
pub(crate) const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// A signature's date and scope.
struct Scope<'a> {
    /// `YYYYMMDDTHHMMSSZ`.
    amz_date: String,
    /// `YYYYMMDD`.
    date: String,
    region: &'a str,
    service: &'a str,
}

impl<'a> Scope<'a> {
    fn new(now: Timestamp, region: &'a str, service: &'a str) -> Scope<'a> {
        Scope {
            amz_date: now.strftime("%Y%m%dT%H%M%SZ").to_string(),
            date: now.strftime("%Y%m%d").to_string(),
            region,
            service,
        }
    }

    /// `<date>/<region>/<service>/aws4_request`.
    fn scope(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            self.date, self.region, self.service
        )
    }

    /// `<access key id>/<scope>`: the credential field.
    fn credential(&self, creds: &Credentials) -> String {
        format!("{}/{}", creds.access_key_id, self.scope())
    }

    /// The key derived from the secret for this scope.
    fn signing_key(&self, secret: &str) -> hmac::Key {
        let mut key = format!("AWS4{secret}").into_bytes();
        for part in [
            self.date.as_str(),
            self.region,
            self.service,
            "aws4_request",
        ] {
            let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), part.as_bytes());
            key = tag.as_ref().to_vec();
        }
        hmac::Key::new(hmac::HMAC_SHA256, &key)
    }

    /// Hex HMAC of `string_to_sign` with the derived key.
    fn sign(&self, secret: &str, string_to_sign: &str) -> String {
        hex::encode(hmac::sign(&self.signing_key(secret), string_to_sign.as_bytes()).as_ref())
    }

    /// The string to sign of a canonical request.
    fn string_to_sign(&self, canonical_request: &str) -> String {
        format!(
            "{ALGORITHM}\n{}\n{}\n{}",
            self.amz_date,
            self.scope(),
            hex::sha256(canonical_request.as_bytes())
        )
    }
}

/// A request to sign: method, URI-encoded path, raw query parameters and
/// headers (names lower-case).
pub(crate) struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a [(String, String)],
    pub headers: &'a [(String, String)],
    pub payload_hash: &'a str,
}

/// The canonical query string: names and values encoded, sorted. Requests
/// send exactly this string, so what is signed is what is sent.
pub(crate) fn canonical_query(query: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, false), uri_encode(v, false)))
        .collect();
    pairs.sort();
    let joined: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    joined.join("&")
}

impl Request<'_> {
    fn canonical_query(&self) -> String {
        canonical_query(self.query)
    }

    /// `host;range;x-amz-date`: the signed header names, sorted.
    fn signed_headers(&self) -> String {
        let mut names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        names.sort_unstable();
        names.join(";")
    }

    fn canonical(&self) -> String {
        let mut headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.trim()))
            .collect();
        headers.sort_unstable();
        let mut out = format!(
            "{}\n{}\n{}\n",
            self.method,
            self.path,
            self.canonical_query()
        );
        for (k, v) in headers {
            out.push_str(&format!("{k}:{v}\n"));
        }
        out.push_str(&format!(
            "\n{}\n{}",
            self.signed_headers(),
            self.payload_hash
        ));
        out
    }
}

/// The `Authorization` header of `req`, signed at `now`. `req.headers`
/// must hold `host` and `x-amz-date` (= [`amz_date`] of `now`), and the
/// request must send exactly those headers.
pub(crate) fn authorization(
    bucket: &Bucket,
    creds: &Credentials,
    now: Timestamp,
    req: &Request<'_>,
) -> String {
    let scope = Scope::new(now, bucket.region(), SERVICE);
    let signature = scope.sign(
        &creds.secret_access_key,
        &scope.string_to_sign(&req.canonical()),
    );
    format!(
        "{ALGORITHM} Credential={},SignedHeaders={},Signature={signature}",
        scope.credential(creds),
        req.signed_headers()
    )
}

/// `YYYYMMDDTHHMMSSZ`, the form of `x-amz-date`.
pub(crate) fn amz_date(now: Timestamp) -> String {
    now.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// The POST policy that lets its holder create objects under `key_prefix`
/// in `bucket`, each of at most `max_file_bytes`, from `now` until
/// `expires`, every object carrying an `x-amz-meta-sha256` field. The
/// grant's `max_files` is for the worker to keep: a policy cannot count.
pub fn upload_grant(
    bucket: &Bucket,
    creds: &Credentials,
    key_prefix: &str,
    max_file_bytes: u64,
    max_files: u32,
    now: Timestamp,
    expires: Timestamp,
) -> UploadGrant {
    let scope = Scope::new(now, bucket.region(), SERVICE);
    let credential = scope.credential(creds);
    let mut conditions = vec![
        serde_json::json!({ "bucket": bucket.name() }),
        serde_json::json!(["starts-with", "$key", key_prefix]),
        serde_json::json!(["content-length-range", 0, max_file_bytes]),
        serde_json::json!(["starts-with", format!("${SHA256_META}"), ""]),
        serde_json::json!({ "x-amz-algorithm": ALGORITHM }),
        serde_json::json!({ "x-amz-credential": credential }),
        serde_json::json!({ "x-amz-date": scope.amz_date }),
    ];
    if let Some(token) = &creds.session_token {
        conditions.push(serde_json::json!({ "x-amz-security-token": token }));
    }
    let policy = serde_json::json!({
        "expiration": expires.strftime("%Y-%m-%dT%H:%M:%S.000Z").to_string(),
        "conditions": conditions,
    });
    let policy = base64::engine::general_purpose::STANDARD.encode(policy.to_string());
    let signature = scope.sign(&creds.secret_access_key, &policy);
    let mut fields = BTreeMap::from([
        ("policy".to_string(), policy),
        ("x-amz-algorithm".to_string(), ALGORITHM.to_string()),
        ("x-amz-credential".to_string(), credential),
        ("x-amz-date".to_string(), scope.amz_date.clone()),
        ("x-amz-signature".to_string(), signature),
    ]);
    if let Some(token) = &creds.session_token {
        fields.insert("x-amz-security-token".to_string(), token.clone());
    }
    UploadGrant {
        url: bucket.bucket_url(),
        bucket_url: bucket.s3_url(""),
        key_prefix: key_prefix.to_string(),
        fields,
        expires: expires.to_string(),
        max_file_bytes,
        max_files,
    }
}

/// A URL that GETs `key` without credentials until `now + expires_in`
/// (capped at [`MAX_PRESIGN`]).
pub fn presign_get(
    bucket: &Bucket,
    creds: &Credentials,
    key: &str,
    now: Timestamp,
    expires_in: Duration,
) -> String {
    presign("GET", bucket, creds, key, now, expires_in)
}

/// A URL that PUTs `key` without credentials until `now + expires_in`
/// (capped at [`MAX_PRESIGN`]). Not given to Tasks (a PUT URL names one
/// key, and cannot bound the size): the bench's plain-HTTP baseline.
pub fn presign_put(
    bucket: &Bucket,
    creds: &Credentials,
    key: &str,
    now: Timestamp,
    expires_in: Duration,
) -> String {
    presign("PUT", bucket, creds, key, now, expires_in)
}

fn presign(
    method: &str,
    bucket: &Bucket,
    creds: &Credentials,
    key: &str,
    now: Timestamp,
    expires_in: Duration,
) -> String {
    let scope = Scope::new(now, bucket.region(), SERVICE);
    let expires = expires_in.min(MAX_PRESIGN).as_secs().max(1);
    let mut query = vec![
        ("X-Amz-Algorithm".to_string(), ALGORITHM.to_string()),
        ("X-Amz-Credential".to_string(), scope.credential(creds)),
        ("X-Amz-Date".to_string(), scope.amz_date.clone()),
        ("X-Amz-Expires".to_string(), expires.to_string()),
        ("X-Amz-SignedHeaders".to_string(), "host".to_string()),
    ];
    if let Some(token) = &creds.session_token {
        query.push(("X-Amz-Security-Token".to_string(), token.clone()));
    }
    let path = bucket.object_path(key);
    let headers = [("host".to_string(), bucket.host())];
    let req = Request {
        method,
        path: &path,
        query: &query,
        headers: &headers,
        payload_hash: UNSIGNED_PAYLOAD,
    };
    let signature = scope.sign(
        &creds.secret_access_key,
        &scope.string_to_sign(&req.canonical()),
    );
    format!(
        "{}{path}?{}&X-Amz-Signature={signature}",
        bucket.origin(),
        req.canonical_query()
    )
}

#[cfg(test)]
mod tests {
    //! Vectors from AWS's documentation (the example keys, dates and
    //! expected signatures of the S3 SigV4 pages) and a published POST
    //! policy signed with the same example keys.
    use super::*;

    fn aws_example() -> (Bucket, Credentials) {
        let bucket = Bucket::from_parts(
            "https://s3.amazonaws.com",
            "examplebucket",
            "us-east-1",
            false,
        )
        .unwrap();
        let creds = Credentials {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        (bucket, creds)
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn get_object_with_authorization_header() {
        // S3 docs, "Example: GET Object" (header-based SigV4).
        let (bucket, creds) = aws_example();
        let now = ts("2013-05-24T00:00:00Z");
        let headers = [
            ("host".to_string(), bucket.host()),
            ("range".to_string(), "bytes=0-9".to_string()),
            ("x-amz-content-sha256".to_string(), hex::sha256(b"")),
            ("x-amz-date".to_string(), amz_date(now)),
        ];
        let path = bucket.object_path("test.txt");
        let req = Request {
            method: "GET",
            path: &path,
            query: &[],
            headers: &headers,
            payload_hash: &hex::sha256(b""),
        };
        assert_eq!(
            authorization(&bucket, &creds, now, &req),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,\
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn presigned_get_url() {
        // S3 docs, query-string authentication example (86400 s).
        let (bucket, creds) = aws_example();
        let url = presign_get(
            &bucket,
            &creds,
            "test.txt",
            ts("2013-05-24T00:00:00Z"),
            Duration::from_secs(86400),
        );
        assert_eq!(
            url,
            "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256\
             &X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request\
             &X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\
             &X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
        );
    }

    #[test]
    fn presigned_urls_live_at_most_seven_days() {
        let (bucket, creds) = aws_example();
        let url = presign_get(
            &bucket,
            &creds,
            "k",
            ts("2013-05-24T00:00:00Z"),
            Duration::from_secs(30 * 24 * 3600),
        );
        assert!(url.contains("X-Amz-Expires=604800&"), "{url}");
    }

    #[test]
    fn post_policy_signature() {
        // A published POST-policy example (the AWS example keys, 2013-08-06,
        // us-east-1): the base64 policy is the string signed.
        let policy = "eyJleHBpcmF0aW9uIjoiMjAxMy0wOC0wNlQxMjowMDowMC4wMDBaIiwiY29uZGl0aW9ucyI6W3siYWNsIjoicHVibGljLXJlYWQifSxbInN0YXJ0cy13aXRoIiwiJENvbnRlbnQtVHlwZSIsImltYWdlLyJdLFsic3RhcnRzLXdpdGgiLCIka2V5IiwidXNlci91c2VyMS8iXSxbInN0YXJ0cy13aXRoIiwiJHgtYW16LW1ldGEtdGFnIiwiIl0seyJ4LWFtei1tZXRhLXV1aWQiOiIxNDM2NTEyMzY1MTI3NCJ9LHsiYnVja2V0IjoiZXhhbXBsZWJ1Y2tldCJ9LHsieC1hbXotYWxnb3JpdGhtIjoiQVdTNC1ITUFDLVNIQTI1NiJ9LHsieC1hbXotY3JlZGVudGlhbCI6IkFLSUFJT1NGT0ROTjdFWEFNUExFLzIwMTMwODA2L3VzLWVhc3QtMS9zMy9hd3M0X3JlcXVlc3QifSx7IngtYW16LWRhdGUiOiIyMDEzMDgwNlQxMjAwMDBaIn1dfQ==";
        let (_, creds) = aws_example();
        let scope = Scope::new(ts("2013-08-06T12:00:00Z"), "us-east-1", "s3");
        assert_eq!(
            scope.sign(&creds.secret_access_key, policy),
            "5bc8a7be4a6fc6445b94d0f4096f8cf3dfa00303529f8a68ea7dc0c23bb83cd9"
        );
    }

    #[test]
    fn upload_grant_policy_binds_prefix_size_and_digest_field() {
        let (bucket, mut creds) = aws_example();
        creds.session_token = Some("TOKEN".into());
        let now = ts("2015-12-29T00:00:00Z");
        let grant = upload_grant(
            &bucket,
            &creds,
            "lt/ns/t/uid/",
            1000,
            7,
            now,
            ts("2015-12-30T12:00:00Z"),
        );
        assert_eq!(grant.url, "https://examplebucket.s3.amazonaws.com/");
        assert_eq!(grant.bucket_url, "s3://examplebucket/");
        assert_eq!(grant.expires, "2015-12-30T12:00:00Z");
        assert_eq!((grant.max_file_bytes, grant.max_files), (1000, 7));
        let policy = base64::engine::general_purpose::STANDARD
            .decode(&grant.fields["policy"])
            .unwrap();
        let policy: serde_json::Value = serde_json::from_slice(&policy).unwrap();
        assert_eq!(
            policy,
            serde_json::json!({
                "expiration": "2015-12-30T12:00:00.000Z",
                "conditions": [
                    {"bucket": "examplebucket"},
                    ["starts-with", "$key", "lt/ns/t/uid/"],
                    ["content-length-range", 0, 1000],
                    ["starts-with", "$x-amz-meta-sha256", ""],
                    {"x-amz-algorithm": "AWS4-HMAC-SHA256"},
                    {"x-amz-credential": "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request"},
                    {"x-amz-date": "20151229T000000Z"},
                    {"x-amz-security-token": "TOKEN"},
                ]
            })
        );
        let scope = Scope::new(now, "us-east-1", "s3");
        assert_eq!(
            grant.fields["x-amz-signature"],
            scope.sign(&creds.secret_access_key, &grant.fields["policy"])
        );
        assert_eq!(grant.fields["x-amz-security-token"], "TOKEN");
        assert_eq!(grant.fields.len(), 6);
    }
}
