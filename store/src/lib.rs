//! Results by reference: the small S3 client longtask needs, and nothing more.
//!
//! - [`sign`]: AWS Signature V4, pure. [`upload_grant`] signs the POST
//!   policy that is a Task's only right on the store (create objects under
//!   its own key prefix, each at most `max_file_bytes`, until it expires);
//!   [`presign_get`] signs a download URL of one object.
//! - [`Client`]: the operator's admin client (list, delete a prefix, check
//!   the bucket), which alone holds the store's keys. Tests and the bench
//!   also create buckets and put and get objects with it.
//! - [`upload_file`]: the worker's side: one file streamed from disk as a
//!   browser-form POST with a grant, its sha256 computed before (it goes in
//!   the form, ahead of the file) and again while sending.
//! - [`download`]: the plugin's side: one presigned URL streamed to a file,
//!   size and digest checked before the file takes its name.
//!
//! Why not the `object_store` crate: it has no POST-policy upload, which is
//! our tenancy mechanism (the worker never holds keys wider than its own
//! Task's prefix), its S3 client pulls aws-lc-rs and chrono, and we would
//! still need our own SigV4 for the policy.
//!
//! One POST creates one object of at most 5 GiB (S3's limit). Multipart
//! uploads are not used: a POST policy cannot authorize their parts (each
//! UploadPart is a signed PUT, which would need the store's keys or one
//! presigned URL per part from the operator while the worker runs).
//!
//! TLS: reqwest is built without a crypto provider; a binary calls
//! [`install_crypto_provider`] (rustls with ring, as kube uses) before it
//! makes an HTTP client.

mod bucket;
mod client;
mod download;
mod hex;
mod http;
pub mod sign;
mod upload;
mod xml;

pub use bucket::{Bucket, Credentials};
pub use client::{Client, Listing, ObjectInfo, StoreError};
pub use download::{DownloadError, download};
pub use http::RequestError;
pub use sign::{MAX_PRESIGN, presign_get, presign_put, upload_grant};
pub use upload::{Change, UploadError, UploadOptions, Uploaded, upload_file};

/// Installs rustls' ring crypto provider as the process default, once;
/// later calls (or a provider another crate installed) are left alone.
/// Every client this crate builds calls it first (reqwest's
/// `rustls-no-provider` panics at build without one).
pub fn install_crypto_provider() {
    // An error only says a provider is already installed: fine either way.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// An HTTP client for [`download`]: connecting, and each read of the
/// answer, bounded by `timeout`, never the whole transfer.
pub fn http_client(timeout: std::time::Duration) -> Result<reqwest::Client, reqwest::Error> {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .build()
}

/// An HTTP client for [`upload_file`]: only connecting is bounded here.
/// reqwest's read timeout runs from the request's start until the answer's
/// headers, so it would cut any upload that takes longer; each attempt of
/// [`upload_file`] is bounded by its [`UploadOptions`] instead.
pub fn upload_client(
    connect_timeout: std::time::Duration,
) -> Result<reqwest::Client, reqwest::Error> {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
}
