//! Reading a sharded Task's results, bounded: a tenant can label any
//! number of ConfigMaps with a Task's UID, so the read never takes them by
//! label alone. A paginated metadata-only LIST finds which of the Task's
//! own shard names exist (at most `spec.shards` of them); each is then
//! read by its exact name, and once `MAX_SHARD_READ_BYTES` are held the
//! rest are kept without their result (as a result too large to store),
//! so the Task fails `ResultTooLarge` naming them instead of the operator
//! running out of memory.

use std::collections::{BTreeMap, BTreeSet};

use crds::names::labels;
use crds::result::{encodings, keys, shard_config_map_name};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ListParams;

use crate::api;
use crate::api::error::ApiError;
use crate::context::Context;

/// The most bytes of shard results (data and binaryData) one reconcile
/// holds for a Task: far below the operator's 256 Mi limit, and far more
/// than the 32 KiB of shard results its status keeps.
pub const MAX_SHARD_READ_BYTES: usize = 32 * 1024 * 1024;

/// Names asked for per page of the metadata LIST.
const PAGE: u32 = 200;

/// Shard `i` when `cm_name` is exactly the result name of shard `i` of
/// Task `task` and `i < shards`.
pub fn shard_index(task: &str, cm_name: &str, shards: i32) -> Option<u32> {
    let (_, i) = cm_name.rsplit_once('-')?;
    let i = i.parse::<u32>().ok()?;
    let within = i64::from(i) < i64::from(shards);
    (within && shard_config_map_name(task, i) == cm_name).then_some(i)
}

/// The bytes a ConfigMap's content takes.
pub fn content_bytes(cm: &ConfigMap) -> usize {
    let data: usize = cm
        .data
        .iter()
        .flatten()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    let binary: usize = cm
        .binary_data
        .iter()
        .flatten()
        .map(|(k, v)| k.len() + v.0.len())
        .sum();
    data + binary
}

/// `cm` without its result: its exit code and metadata stay (the writer
/// stamp is still checked), the result is marked as not stored.
pub fn without_result(mut cm: ConfigMap) -> ConfigMap {
    let data = cm.data.take().unwrap_or_default();
    let mut slim = BTreeMap::new();
    if let Some(code) = data.get(keys::EXIT_CODE) {
        slim.insert(keys::EXIT_CODE.to_owned(), code.clone());
    }
    slim.insert(
        keys::RESULT_ENCODING.to_owned(),
        encodings::OMITTED.to_owned(),
    );
    cm.data = Some(slim);
    cm.binary_data = None;
    cm
}

/// The result ConfigMaps of the shards of Task `name` (UID `task_uid`,
/// `shards` shards), bounded as the module says.
pub async fn read(
    ctx: &Context,
    namespace: &str,
    name: &str,
    task_uid: &str,
    shards: i32,
) -> Result<Vec<ConfigMap>, ApiError> {
    let present = present(ctx, namespace, name, task_uid, shards).await?;
    let mut out = Vec::with_capacity(present.len());
    let mut held = 0usize;
    for i in present {
        let Some(cm) = api::get_result(ctx, namespace, &shard_config_map_name(name, i)).await?
        else {
            continue;
        };
        let size = content_bytes(&cm);
        if held.saturating_add(size) > MAX_SHARD_READ_BYTES {
            out.push(without_result(cm));
        } else {
            held += size;
            out.push(cm);
        }
    }
    Ok(out)
}

/// Which of Task `name`'s shard result names exist, from a paginated
/// LIST of metadata only (by the Task UID and shard labels).
async fn present(
    ctx: &Context,
    namespace: &str,
    name: &str,
    task_uid: &str,
    shards: i32,
) -> Result<BTreeSet<u32>, ApiError> {
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
    let selector = format!("{}={task_uid},{}", labels::TASK_UID, labels::SHARD);
    let mut lp = ListParams::default().labels(&selector).limit(PAGE);
    let mut found = BTreeSet::new();
    loop {
        let page = api::call(ctx, "list", cms.list_metadata(&lp))
            .await
            .map_err(|source| ApiError::ListResults {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                source,
            })?;
        found.extend(
            page.items
                .iter()
                .filter_map(|m| shard_index(name, m.metadata.name.as_deref()?, shards)),
        );
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => return Ok(found),
        }
    }
}
