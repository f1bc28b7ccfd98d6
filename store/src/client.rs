//! The admin client: the operator's (and the tests' and the bench's) calls
//! with the store's own keys. Every call is bounded by the client's
//! timeout; none is retried here (the operator's collector tries again on
//! its next pass).

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use crds::Reason;
use reqwest::Method;

use crate::bucket::{Bucket, Credentials};
use crate::hex;
use crate::http::{self, RequestError};
use crate::sign::{self, Request};
use crate::xml;

/// Most keys one DeleteObjects request may name (S3's limit).
const DELETE_BATCH: usize = 1000;

/// What an admin call (or making a [`Bucket`]) failed at.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("endpoint {endpoint:?} is invalid: {problem}")]
    Endpoint {
        endpoint: String,
        problem: &'static str,
    },
    #[error("bucket name {bucket:?} is invalid")]
    BucketName { bucket: String },
    #[error("making the HTTP client failed")]
    HttpClient(#[source] reqwest::Error),
    #[error("listing s3://{bucket}/{prefix} failed")]
    List {
        bucket: String,
        prefix: String,
        #[source]
        source: RequestError,
    },
    #[error("refusing to delete a whole bucket ({bucket}): the prefix is empty")]
    EmptyPrefix { bucket: String },
    #[error("deleting the objects under s3://{bucket}/{prefix} failed")]
    DeletePrefix {
        bucket: String,
        prefix: String,
        #[source]
        source: RequestError,
    },
    #[error("checking bucket {bucket} failed")]
    HeadBucket {
        bucket: String,
        #[source]
        source: RequestError,
    },
    #[error("creating bucket {bucket} failed")]
    CreateBucket {
        bucket: String,
        #[source]
        source: RequestError,
    },
    #[error("putting s3://{bucket}/{key} failed")]
    Put {
        bucket: String,
        key: String,
        #[source]
        source: RequestError,
    },
    #[error("getting s3://{bucket}/{key} failed")]
    Get {
        bucket: String,
        key: String,
        #[source]
        source: RequestError,
    },
}

impl StoreError {
    /// The failed request, when the store was asked.
    pub fn request(&self) -> Option<&RequestError> {
        match self {
            StoreError::List { source, .. }
            | StoreError::DeletePrefix { source, .. }
            | StoreError::HeadBucket { source, .. }
            | StoreError::CreateBucket { source, .. }
            | StoreError::Put { source, .. }
            | StoreError::Get { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The `Output*` reason this failure stands for.
    pub fn reason(&self) -> Reason {
        match self.request() {
            Some(RequestError::Status {
                status: 404, code, ..
            }) if code == "NotFound" => match self {
                StoreError::HeadBucket { .. } => Reason::OutputBucketMissing,
                _ => Reason::OutputUploadFailed,
            },
            Some(e) => e.reason(),
            None => Reason::OutputStoreUnavailable,
        }
    }
}

/// What [`Client::list`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Objects, in key order.
    pub objects: Vec<ObjectInfo>,
    /// With a delimiter: the common prefixes ("directories").
    pub prefixes: Vec<String>,
}

/// One object of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    pub key: String,
    pub size: u64,
}

/// A client with the store's keys.
#[derive(Clone, Debug)]
pub struct Client {
    bucket: Bucket,
    creds: Credentials,
    http: reqwest::Client,
    timeout: Duration,
}

/// An admin request before it is signed.
struct Call {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl Client {
    /// A client whose every call (connecting, sending, reading the answer)
    /// ends within `timeout`. Call [`crate::install_crypto_provider`] first
    /// for an `https` store.
    pub fn new(
        bucket: Bucket,
        creds: Credentials,
        timeout: Duration,
    ) -> Result<Client, StoreError> {
        crate::install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .build()
            .map_err(StoreError::HttpClient)?;
        Ok(Client {
            bucket,
            creds,
            http,
            timeout,
        })
    }

    /// The bucket this client works on.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// Every object under `prefix` (following continuation tokens), and
    /// with a `delimiter` the common prefixes below it.
    pub async fn list(&self, prefix: &str, delimiter: Option<char>) -> Result<Listing, StoreError> {
        let failed = |source| StoreError::List {
            bucket: self.bucket.name().to_string(),
            prefix: prefix.to_string(),
            source,
        };
        let mut listing = Listing::default();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![
                ("list-type".to_string(), "2".to_string()),
                ("prefix".to_string(), prefix.to_string()),
            ];
            if let Some(d) = delimiter {
                query.push(("delimiter".to_string(), d.to_string()));
            }
            if let Some(t) = token.take() {
                query.push(("continuation-token".to_string(), t));
            }
            let call = self.call(Method::GET, self.bucket.bucket_path(), query);
            let body = self.text(call).await.map_err(failed)?;
            let page = xml::list_page(&body).map_err(|e| failed(RequestError::Parse(e)))?;
            listing.objects.extend(
                page.objects
                    .into_iter()
                    .map(|(key, size)| ObjectInfo { key, size }),
            );
            listing.prefixes.extend(page.prefixes);
            match page.next_token {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => return Ok(listing),
            }
        }
    }

    /// Deletes every object under `prefix` (which must not be empty);
    /// returns how many were deleted.
    pub async fn delete_prefix(&self, prefix: &str) -> Result<u64, StoreError> {
        if prefix.is_empty() {
            return Err(StoreError::EmptyPrefix {
                bucket: self.bucket.name().to_string(),
            });
        }
        let listing = self.list(prefix, None).await?;
        let keys: Vec<String> = listing.objects.into_iter().map(|o| o.key).collect();
        let mut deleted = 0u64;
        for batch in keys.chunks(DELETE_BATCH) {
            self.delete_batch(batch)
                .await
                .map_err(|source| StoreError::DeletePrefix {
                    bucket: self.bucket.name().to_string(),
                    prefix: prefix.to_string(),
                    source,
                })?;
            deleted += batch.len() as u64;
        }
        Ok(deleted)
    }

    /// One quiet DeleteObjects request; an object it could not delete fails it.
    async fn delete_batch(&self, keys: &[String]) -> Result<(), RequestError> {
        let body = xml::delete_body(keys);
        let digest = ring::digest::digest(&ring::digest::SHA256, body.as_bytes());
        let mut call = self.call(
            Method::POST,
            self.bucket.bucket_path(),
            vec![("delete".to_string(), String::new())],
        );
        // S3 wants an integrity header on DeleteObjects; ring has no MD5,
        // so the sha256 checksum header stands in for Content-MD5.
        call.headers.push((
            "x-amz-checksum-sha256".to_string(),
            base64::engine::general_purpose::STANDARD.encode(digest.as_ref()),
        ));
        call.headers.push((
            "x-amz-sdk-checksum-algorithm".to_string(),
            "SHA256".to_string(),
        ));
        call.body = Bytes::from(body);
        let answer = self.text(call).await?;
        let errors = xml::delete_errors(&answer).map_err(RequestError::Parse)?;
        match errors.into_iter().next() {
            None => Ok(()),
            Some((key, code, message)) => Err(RequestError::Status {
                status: 200,
                code,
                message: format!("{key}: {message}"),
            }),
        }
    }

    /// Succeeds if the bucket exists and these keys may use it.
    pub async fn head_bucket(&self) -> Result<(), StoreError> {
        let call = self.call(Method::HEAD, self.bucket.bucket_path(), Vec::new());
        self.execute(call)
            .await
            .map(drop)
            .map_err(|source| StoreError::HeadBucket {
                bucket: self.bucket.name().to_string(),
                source,
            })
    }

    /// Creates the bucket (tests and the bench; longtask never creates
    /// buckets in a real store).
    pub async fn create_bucket(&self) -> Result<(), StoreError> {
        let mut call = self.call(Method::PUT, self.bucket.bucket_path(), Vec::new());
        if self.bucket.region() != crds::outputs::DEFAULT_REGION {
            call.body = Bytes::from(format!(
                "<CreateBucketConfiguration><LocationConstraint>{}</LocationConstraint>\
                 </CreateBucketConfiguration>",
                self.bucket.region()
            ));
        }
        self.execute(call)
            .await
            .map(drop)
            .map_err(|source| StoreError::CreateBucket {
                bucket: self.bucket.name().to_string(),
                source,
            })
    }

    /// Puts one object (tests and the bench).
    pub async fn put(&self, key: &str, body: Bytes) -> Result<(), StoreError> {
        let mut call = self.call(Method::PUT, self.bucket.object_path(key), Vec::new());
        call.body = body;
        self.execute(call)
            .await
            .map(drop)
            .map_err(|source| StoreError::Put {
                bucket: self.bucket.name().to_string(),
                key: key.to_string(),
                source,
            })
    }

    /// Gets one object whole (tests and the bench).
    pub async fn get(&self, key: &str) -> Result<Bytes, StoreError> {
        let failed = |source| StoreError::Get {
            bucket: self.bucket.name().to_string(),
            key: key.to_string(),
            source,
        };
        let call = self.call(Method::GET, self.bucket.object_path(key), Vec::new());
        let resp = self.execute(call).await.map_err(failed)?;
        resp.bytes()
            .await
            .map_err(|e| failed(RequestError::ReadBody(e)))
    }

    fn call(&self, method: Method, path: String, query: Vec<(String, String)>) -> Call {
        Call {
            method,
            path,
            query,
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    /// Signs and sends `call`; a non-success answer is an error.
    async fn execute(&self, call: Call) -> Result<reqwest::Response, RequestError> {
        let now = jiff::Timestamp::now();
        let payload_hash = hex::sha256(&call.body);
        let mut headers = call.headers;
        headers.push(("host".to_string(), self.bucket.host()));
        headers.push(("x-amz-content-sha256".to_string(), payload_hash.clone()));
        headers.push(("x-amz-date".to_string(), sign::amz_date(now)));
        if let Some(token) = &self.creds.session_token {
            headers.push(("x-amz-security-token".to_string(), token.clone()));
        }
        let req = Request {
            method: call.method.as_str(),
            path: &call.path,
            query: &call.query,
            headers: &headers,
            payload_hash: &payload_hash,
        };
        let authorization = sign::authorization(&self.bucket, &self.creds, now, &req);
        let mut url = format!("{}{}", self.bucket.origin(), call.path);
        if !call.query.is_empty() {
            url.push('?');
            url.push_str(&sign::canonical_query(&call.query));
        }
        let mut builder = self.http.request(call.method, url);
        // The client sets Host itself, from the URL; the rest go as signed.
        for (name, value) in headers.iter().filter(|(n, _)| n != "host") {
            builder = builder.header(name, value);
        }
        builder = builder
            .header("authorization", authorization)
            .body(call.body);
        http::check(http::send(builder, self.timeout).await?).await
    }

    /// [`Client::execute`], then the answer's body as text.
    async fn text(&self, call: Call) -> Result<String, RequestError> {
        let resp = self.execute(call).await?;
        http::text(resp, self.timeout).await
    }
}
