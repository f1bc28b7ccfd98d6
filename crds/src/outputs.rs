//! Results by reference: the `OutputStore` resource, a Task's `outputs`
//! spec and status, and the files the operator, the worker and the plugin
//! exchange about them (the upload grant, the download grant, the worker's
//! report).
//!
//! The flow: an admin makes an `OutputStore` (cluster-scoped: an
//! S3-compatible endpoint, bucket, prefix and a Secret with its keys in the
//! operator's namespace). A Task that uses it gets, before its Job starts, a
//! Secret `<task>-outputs` holding an [`UploadGrant`] (passed to the worker
//! as `$LONGTASK_UPLOAD_GRANT` by a `secretKeyRef`): a signed POST policy
//! that lets its holder create objects under the Task's own key prefix
//! ([`object_prefix`]) and nowhere else, until it expires. The worker
//! uploads every file under `$LONGTASK_OUTPUTS` (and a result too large to
//! keep inline) with it and lists what it uploaded in its result ConfigMap
//! ([`OutputReport`] under [`crate::result::keys::OUTPUTS`]). The operator
//! copies that list into `status.outputs` and, once the Task has finished,
//! replaces the grant in the Secret with a [`DownloadGrant`]: one presigned
//! GET URL per output, which `kubectl longtask result` and the web page use
//! with the user's own right to read that Secret.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where Tasks' outputs go: an S3-compatible bucket, and which namespaces
/// may use it. Cluster-scoped: only cluster admins make or change stores.
// clippy reads the repeated `type_ = "string"` of the printer columns as
// duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "longtask.dev",
    version = "v1alpha1",
    kind = "OutputStore",
    plural = "outputstores",
    derive = "PartialEq",
    doc = "An S3-compatible object store that Tasks upload their output files to, by reference.",
    printcolumn(name = "Endpoint", type_ = "string", json_path = ".spec.s3.endpoint"),
    printcolumn(name = "Bucket", type_ = "string", json_path = ".spec.s3.bucket"),
    printcolumn(name = "Prefix", type_ = "string", json_path = ".spec.s3.prefix"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct OutputStoreSpec {
    /// The S3-compatible store (AWS S3, SeaweedFS, Ceph RGW, ...).
    pub s3: S3Store,

    /// Namespaces whose Tasks may use this store. Empty or absent: every
    /// namespace. A namespace picks its default store with the label
    /// `longtask.dev/output-store: <name>`; without one, the store named
    /// `default` is used, if it selects the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,

    /// Largest object one output file may become, in bytes. Default and
    /// maximum 5 GiB (an S3 POST upload's limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_OBJECT_BYTES))]
    pub max_file_bytes: Option<i64>,

    /// Most output files one Task may upload. Default 2000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_FILES))]
    pub max_files: Option<i32>,
}

/// An S3-compatible bucket and the credentials the operator uses for it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct S3Store {
    /// Base URL of the S3 API, e.g. `https://s3.eu-west-1.amazonaws.com`
    /// or `http://seaweedfs.storage:8333`. Workers, the operator and users
    /// downloading outputs all reach the store at this address.
    #[schemars(length(min = 1, max = 512), regex(pattern = r"^https?://[^/?#\s]+/?$"))]
    pub endpoint: String,

    /// The bucket. It must exist; longtask never creates or deletes buckets.
    #[schemars(
        length(min = 3, max = 63),
        regex(pattern = r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
    )]
    pub bucket: String,

    /// Signing region. Default `us-east-1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[a-z0-9-]+$"))]
    pub region: Option<String>,

    /// Key prefix for every object longtask writes, e.g. `longtask/`.
    /// Objects go to `<prefix><namespace>/<task>/<task uid>/<file>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), regex(pattern = r"^([A-Za-z0-9._-]+/)*$"))]
    pub prefix: Option<String>,

    /// Address buckets as `<endpoint>/<bucket>` (path style, what most
    /// self-hosted stores need) rather than `<bucket>.<host>`. Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_style: Option<bool>,

    /// Name of a Secret in the operator's namespace with the keys
    /// `accessKeyId` and `secretAccessKey` (and optionally `sessionToken`).
    /// Only the operator reads it; Task pods never see these credentials.
    #[schemars(length(min = 1, max = 253))]
    pub credentials_secret: String,
}

impl S3Store {
    /// The signing region.
    pub fn region(&self) -> &str {
        self.region.as_deref().unwrap_or(DEFAULT_REGION)
    }

    /// The key prefix, possibly empty.
    pub fn prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or("")
    }

    /// Path-style addressing.
    pub fn path_style(&self) -> bool {
        self.path_style.unwrap_or(true)
    }
}

/// Keys of the credentials Secret an `OutputStore` names.
pub mod secret_keys {
    /// Access key id.
    pub const ACCESS_KEY_ID: &str = "accessKeyId";
    /// Secret access key.
    pub const SECRET_ACCESS_KEY: &str = "secretAccessKey";
    /// Optional session token (temporary credentials).
    pub const SESSION_TOKEN: &str = "sessionToken";
}

/// Signing region when a store names none.
pub const DEFAULT_REGION: &str = "us-east-1";
/// Largest object a POST upload may create (S3's limit): 5 GiB.
pub const MAX_OBJECT_BYTES: i64 = 5 * 1024 * 1024 * 1024;
/// Most output files a Task may have.
pub const MAX_FILES: i32 = 10_000;
/// Default most output files per Task.
pub const DEFAULT_MAX_FILES: i32 = 2000;
/// Longest output name (its path below `$LONGTASK_OUTPUTS`), in bytes.
pub const MAX_NAME_BYTES: usize = 512;
/// Name of the store used when neither the Task nor its namespace names one.
pub const DEFAULT_STORE: &str = "default";
/// Namespace label naming the namespace's default store.
pub const NAMESPACE_STORE_LABEL: &str = "longtask.dev/output-store";
/// Output name under which a result too large to keep inline is uploaded.
pub const RESULT_OUTPUT: &str = ".longtask/result";
/// Object metadata header carrying the sha256 (hex) of the object's bytes.
pub const SHA256_META: &str = "x-amz-meta-sha256";

/// Suffix of the per-Task Secret holding the upload, then download, grant.
pub const SECRET_SUFFIX: &str = "-outputs";
/// Key of the [`UploadGrant`] (JSON) in that Secret.
pub const UPLOAD_KEY: &str = "upload.json";
/// Key of the [`DownloadGrant`] (JSON) in that Secret.
pub const DOWNLOAD_KEY: &str = "download.json";
/// Name of the directory, below the worker's work dir, whose files are
/// uploaded (`$LONGTASK_OUTPUTS`).
pub const OUTPUTS_SUBDIR: &str = "outputs";

/// Name of a Task's outputs Secret.
pub fn secret_name(task_name: &str) -> String {
    format!("{task_name}{SECRET_SUFFIX}")
}

/// The key prefix of one Task's objects: `<store prefix><namespace>/<task>/<uid>/`.
/// The Task's UID in it keeps a Task made again under the same name from
/// ever sharing or overwriting an earlier one's objects.
pub fn object_prefix(store_prefix: &str, namespace: &str, task: &str, uid: &str) -> String {
    format!("{store_prefix}{namespace}/{task}/{uid}/")
}

/// The key prefix of one shard's objects in a sharded Task.
pub fn shard_prefix(task_prefix: &str, shard: Option<u32>) -> String {
    match shard {
        Some(i) => format!("{task_prefix}shard-{i}/"),
        None => task_prefix.to_string(),
    }
}

/// Why an output name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("the name is empty")]
    Empty,
    #[error("the name is {0} bytes, more than {MAX_NAME_BYTES}")]
    TooLong(usize),
    #[error("the name is not UTF-8")]
    NotUtf8,
    #[error("the name has a `.` or `..` component, or an empty one")]
    BadComponent,
    #[error("the name has a control character")]
    ControlCharacter,
}

/// Checks an output's name: its path relative to `$LONGTASK_OUTPUTS`,
/// components joined by `/`. Names become object keys and file names on
/// the machine of whoever downloads them, so `.`/`..`, empty components,
/// absolute paths and control characters are refused.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong(name.len()));
    }
    if name.chars().any(char::is_control) {
        return Err(NameError::ControlCharacter);
    }
    if name
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(NameError::BadComponent);
    }
    Ok(())
}

/// A Task's choice of output store (`spec.outputs`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputsSpec {
    /// The `OutputStore` to upload to. Default: the namespace's
    /// (label `longtask.dev/output-store`), else the store named `default`.
    /// A store that does not exist or does not select the namespace fails
    /// the Task before it runs (reason `OutputStoreUnavailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub store: Option<String>,

    /// `false` opts this Task out: no `$LONGTASK_OUTPUTS`, and a result over
    /// the inline limit fails the Task as `ResultTooLarge`. Default true
    /// (when a store applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// What the Task uploaded (`status.outputs`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputsStatus {
    /// The `OutputStore` used.
    pub store: String,
    /// `s3://<bucket>/<key prefix>`: where this Task's objects are.
    pub location: String,
    /// Number of output files.
    pub count: i32,
    /// Their total size in bytes.
    pub total_bytes: i64,
    /// Their total size for people, e.g. `2.0Gi` (the `Outputs` column).
    pub size: String,
    /// Each output file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_FILES))]
    pub files: Vec<OutputFile>,
    /// The Secret holding the presigned download URLs (`<task>-outputs`),
    /// once the Task has finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_secret: Option<String>,
}

/// One uploaded file.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputFile {
    /// Path below `$LONGTASK_OUTPUTS` (`.longtask/result` for a result too
    /// large to keep inline).
    pub name: String,
    /// Size in bytes.
    pub size: i64,
    /// `sha256:<hex>` of the bytes.
    pub digest: String,
    /// `s3://<bucket>/<key>`.
    pub url: String,
}

/// The worker's account of its uploads, JSON under `outputs` in the result
/// ConfigMap.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OutputReport {
    /// Every file uploaded and verified, in name order.
    #[serde(default)]
    pub files: Vec<UploadedFile>,
    /// Set when the upload failed: the files above are then not presented
    /// as the Task's outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<OutputError>,
}

/// One uploaded file, as the worker reports it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UploadedFile {
    /// Name below `$LONGTASK_OUTPUTS`.
    pub name: String,
    /// Full object key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Lower-case hex sha256 of the bytes.
    pub sha256: String,
}

/// Why uploading failed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OutputError {
    /// One of the `Output*` [`crate::Reason`]s.
    pub reason: String,
    /// What failed, for people (names the file).
    pub message: String,
}

/// A signed S3 POST policy: lets its holder create objects whose key starts
/// with `key_prefix`, of at most `max_file_bytes`, until `expires`.
/// JSON under [`UPLOAD_KEY`] in the Task's outputs Secret.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UploadGrant {
    /// URL to POST the form to (the bucket's URL).
    pub url: String,
    /// `s3://<bucket>/` for status URLs.
    pub bucket_url: String,
    /// Every key must start with this.
    pub key_prefix: String,
    /// Form fields to send before `key` and the file, as signed
    /// (`policy`, `x-amz-algorithm`, `x-amz-credential`, `x-amz-date`,
    /// `x-amz-signature`, and `x-amz-security-token` if any).
    pub fields: BTreeMap<String, String>,
    /// RFC 3339 time the policy expires.
    pub expires: String,
    /// Largest file the policy allows.
    pub max_file_bytes: u64,
    /// Most files the worker may upload.
    pub max_files: u32,
}

/// Presigned GET URLs of a finished Task's outputs. JSON under
/// [`DOWNLOAD_KEY`] in the Task's outputs Secret.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DownloadGrant {
    /// RFC 3339 time the URLs expire; the operator renews them before.
    pub expires: String,
    /// Output name -> presigned URL.
    pub urls: BTreeMap<String, String>,
}

/// Size for people in binary units, one decimal: `0`, `512`, `1.5Ki`, `2.0Gi`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if bytes < 1024 {
        return bytes.to_string();
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1}{}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_cannot_escape_or_surprise() {
        assert_eq!(check_name("model.bin"), Ok(()));
        assert_eq!(check_name("plots/a b.png"), Ok(()));
        assert_eq!(check_name(""), Err(NameError::Empty));
        for bad in ["../x", "a/../b", "/abs", "a//b", "a/", "./a", "a/."] {
            assert_eq!(check_name(bad), Err(NameError::BadComponent), "{bad}");
        }
        assert_eq!(check_name("a\nb"), Err(NameError::ControlCharacter));
        let long = "x".repeat(MAX_NAME_BYTES + 1);
        assert_eq!(
            check_name(&long),
            Err(NameError::TooLong(MAX_NAME_BYTES + 1))
        );
    }

    #[test]
    fn prefixes_carry_namespace_name_and_uid() {
        let p = object_prefix("lt/", "ns", "train", "u-1");
        assert_eq!(p, "lt/ns/train/u-1/");
        assert_eq!(shard_prefix(&p, Some(3)), "lt/ns/train/u-1/shard-3/");
        assert_eq!(shard_prefix(&p, None), p);
    }

    #[test]
    fn sizes_for_people() {
        assert_eq!(human_size(0), "0");
        assert_eq!(human_size(1023), "1023");
        assert_eq!(human_size(1536), "1.5Ki");
        assert_eq!(human_size(2 * 1024 * 1024 * 1024), "2.0Gi");
    }
}
