//! Which result ConfigMaps the reconciler trusts: the read step vets here
//! each result it reads as final. The labels say which Task and Job a
//! result claims; the writer stamp says which pod wrote it (the admission
//! policies make it true). Here the stamped pod is looked up and
//! `observe::check_writer` decides whether it is a pod of the Task's Job.

use crds::result::shard_config_map_name;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;

use crate::api;
use crate::api::error::ApiError;
use crate::context::Context;
use crate::status::observe::{self, WriterPod};

/// The Job whose pods may write a Task's results.
pub struct Fence<'a> {
    pub namespace: &'a str,
    /// The Job's (and Task's) name.
    pub job: &'a str,
    pub task_uid: &'a str,
    pub job_uid: &'a str,
    /// Pods of that Job already listed (may be empty).
    pub pods: &'a [Pod],
}

/// `Ok(Err(why))` when `cm` must not be trusted as a result of the fence's
/// Job (shard `shard`): labels of another Task or Job, no stamp, or a
/// stamped pod that is not (or cannot be shown to be) that Job's.
pub async fn vet(
    ctx: &Context,
    fence: &Fence<'_>,
    cm: &ConfigMap,
    shard: Option<u32>,
) -> Result<Result<(), String>, ApiError> {
    if let Some(why) = observe::foreign(cm, fence.task_uid, fence.job_uid) {
        return Ok(Err(why));
    }
    let Some(stamp) = observe::stamp(cm) else {
        return Ok(observe::check_writer(
            cm,
            WriterPod::Gone { rival: false },
            fence.job,
            fence.job_uid,
            shard,
        ));
    };
    let listed = fence
        .pods
        .iter()
        .find(|p| p.metadata.uid.as_deref() == Some(stamp.pod_uid.as_str()));
    let fetched;
    let writer = match listed {
        Some(p) => WriterPod::Found(p),
        None => match api::get_pod(ctx, fence.namespace, &stamp.pod).await? {
            Some(p) => {
                fetched = p;
                WriterPod::Found(&fetched)
            }
            None => {
                let rival = match observe::rival_job(fence.job, shard) {
                    Some(r) => api::get_job(ctx, fence.namespace, &r).await?.is_some(),
                    None => false,
                };
                WriterPod::Gone { rival }
            }
        },
    };
    Ok(observe::check_writer(
        cm,
        writer,
        fence.job,
        fence.job_uid,
        shard,
    ))
}

/// The shard results of `cms` that pass `vet`, and why the others did not.
pub async fn vet_shards(
    ctx: &Context,
    fence: &Fence<'_>,
    cms: Vec<ConfigMap>,
) -> Result<(Vec<ConfigMap>, Vec<String>), ApiError> {
    let mut kept = Vec::with_capacity(cms.len());
    let mut refused = Vec::new();
    for cm in cms {
        let name = cm.name_any();
        let shard = name
            .rsplit_once('-')
            .and_then(|(_, i)| i.parse::<u32>().ok())
            .filter(|i| shard_config_map_name(fence.job, *i) == name);
        match vet(ctx, fence, &cm, shard).await? {
            Ok(()) if shard.is_some() => kept.push(cm),
            Ok(()) => refused.push(format!("ConfigMap {name} is no shard result of this Task")),
            Err(why) => refused.push(why),
        }
    }
    Ok((kept, refused))
}
