//! The download grant of a finished Task with outputs: one presigned GET
//! URL per output, replacing the upload grant in its Secret
//! `<task>-outputs` when it finishes (before the status write that shows
//! `status.outputs.downloadSecret`), and signed again every six days while
//! the Task is kept (`renew`, from `settle`). When the URLs cannot be
//! signed (the store or its credentials gone) the Task still finishes,
//! without `downloadSecret`, with a Warning Event; the next renewal tries
//! again.

use std::collections::BTreeMap;
use std::time::Duration;

use crds::outputs::{DOWNLOAD_KEY, DownloadGrant, OutputsStatus};
use crds::result::{config_map_name, keys};
use crds::{Task, TaskStatus};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use longtask_store::presign_get;
use tracing::{info, warn};

use crate::api;
use crate::context::Context;
use crate::job::build::{self, Identity};
use crate::outputs::grant;
use crate::outputs::report::{self, Outcome, Raw, Target};
use crate::reconcile::error::Error;
use crate::reconcile::read::Seen;
use crate::reconcile::{outputs, shard_reads, status_write};
use crate::status::events::{Note, reason};
use crate::status::observe;
use crate::status::{self, Desired};

/// Most bytes of presigned URLs one Secret holds (a Secret holds 1 MiB):
/// outputs past it get no URL, and the Task's Event says how many.
pub const MAX_GRANT_BYTES: usize = 900 * 1024;

/// When `desired` ends the Task with outputs: writes their download grant
/// and records its Secret in `desired`'s `status.outputs`.
pub async fn at_end(
    ctx: &Context,
    task: &Task,
    seen: &Seen,
    desired: &mut Desired,
) -> Result<(), Error> {
    let st = &desired.status;
    let terminal = st.phase.is_some_and(|p| p.is_terminal());
    let (Some(target), Some(job_uid), true) = (seen.outputs.as_ref(), st.job_uid.clone(), terminal)
    else {
        return Ok(());
    };
    if st
        .outputs
        .as_ref()
        .is_none_or(|o| o.download_secret.is_some())
    {
        return Ok(());
    }
    let finished = st
        .completed_at
        .as_ref()
        .map_or_else(Timestamp::now, |t| t.0);
    let obs = seen.observed(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        finished,
    ));
    let Some(Outcome::Listed(listing)) = status::outputs::outcome(task, &obs, &job_uid) else {
        return Ok(());
    };
    let written = write(ctx, task, target, &listing.names, finished).await?;
    if let (Some(name), Some(o)) = (written, desired.status.outputs.as_mut()) {
        o.download_secret = Some(name);
    }
    Ok(())
}

/// Signs the URLs of `names` (below `target`'s prefix) for the period of a
/// Task finished at `finished` and writes them into its Secret: the
/// Secret's name, or `None` (said in a Warning Event) when they cannot be.
async fn write(
    ctx: &Context,
    task: &Task,
    target: &Target,
    names: &[String],
    finished: Timestamp,
) -> Result<Option<String>, Error> {
    let id = build::identity(task)?;
    let period = grant::download(finished, Timestamp::now());
    let signed = match sign(ctx, target, names, period).await? {
        Ok(g) => g,
        Err(why) => return Ok(not_downloadable(ctx, task, why)),
    };
    let left_out = names.len() - signed.urls.len();
    let json = serde_json::to_vec(&signed).unwrap_or_default();
    let secret = build::outputs_secret(&id, BTreeMap::from([(DOWNLOAD_KEY.to_owned(), json)]));
    if let Err(why) = api::put_outputs_secret(ctx, &secret, id.uid).await? {
        return Ok(not_downloadable(ctx, task, why));
    }
    if left_out > 0 {
        let why = format!(
            "{left_out} of {} outputs have no download URL: their URLs do not fit in the \
             Secret {}",
            names.len(),
            secret.name_any()
        );
        not_downloadable(ctx, task, why);
    }
    info!(secret = %secret.name_any(), urls = signed.urls.len(), expires = %signed.expires, "wrote download URLs");
    Ok(Some(secret.name_any()))
}

/// The download grant of `names` for `period`, or why it cannot be signed.
async fn sign(
    ctx: &Context,
    target: &Target,
    names: &[String],
    period: grant::Download,
) -> Result<Result<DownloadGrant, String>, Error> {
    let Some(store) = ctx
        .caches
        .output_stores()
        .and_then(|s| s.get(&ObjectRef::new(&target.store)))
    else {
        return Ok(Err(format!("the OutputStore {} is gone", target.store)));
    };
    let (bucket, creds) = match outputs::signer(ctx, &store).await? {
        Ok(s) => s,
        Err(why) => return Ok(Err(why)),
    };
    let mut urls = BTreeMap::new();
    let mut budget = MAX_GRANT_BYTES;
    for name in names {
        let key = format!("{}{name}", target.prefix);
        let url = presign_get(&bucket, &creds, &key, period.signed, grant::MAX_VALIDITY);
        let cost = name.len() + url.len() + 8;
        if cost > budget {
            break;
        }
        budget -= cost;
        urls.insert(name.clone(), url);
    }
    Ok(Ok(DownloadGrant {
        expires: period.expires.to_string(),
        urls,
    }))
}

/// Says why a Task's outputs cannot be downloaded: logged, and a Warning
/// Event on the Task. Always `None` (no Secret to show).
fn not_downloadable(ctx: &Context, task: &Task, why: String) -> Option<String> {
    warn!(namespace = %task.namespace().unwrap_or_default(), task = %task.name_any(), %why, "no download URLs");
    let note = Note {
        warning: true,
        reason: reason::OUTPUTS_NOT_DOWNLOADABLE,
        action: "SignDownloads",
        message: why,
    };
    api::publish(ctx, task, vec![note]);
    None
}

/// A finished Task's download URLs, signed again at the start of each
/// period of six days (see `outputs::grant`), or at once when its status
/// shows no download Secret yet (they could not be written when it
/// finished; then tried again every `RETRY`): when to look again, if the
/// Task keeps outputs.
pub async fn renew(ctx: &Context, task: &Task, now: Timestamp) -> Result<Option<Duration>, Error> {
    let Some((st, o, finished)) = kept_outputs(task) else {
        return Ok(None);
    };
    let period = grant::download(finished, now);
    let missing = o.download_secret.is_none();
    let renewal = period.due && period.signed != finished;
    if (missing || renewal)
        && let Some(target) = Target::parse(&o.store, &o.location)
        && let Some(names) = names(ctx, task, st, &target).await?
    {
        let written = write(ctx, task, &target, &names, finished).await?;
        match (missing, written) {
            (true, Some(secret)) => record(ctx, task, secret).await?,
            (true, None) => return Ok(Some(RETRY)),
            (false, _) => {}
        }
    }
    Ok(Some(grant::until(now, period.next)))
}

/// How soon a finished Task whose download URLs could not be written is
/// looked at again.
pub const RETRY: Duration = Duration::from_secs(3600);

/// Shows `secret` as the download Secret in the status of the finished
/// `task` (read whole: the cache keeps finished Tasks slimmed).
async fn record(ctx: &Context, task: &Task, secret: String) -> Result<(), Error> {
    let id = build::identity(task)?;
    let Some(full) = api::get_task(ctx, id.namespace, id.name).await? else {
        return Ok(());
    };
    let Some(mut st) = full.status.clone().filter(|_| full.uid() == task.uid()) else {
        return Ok(());
    };
    if let Some(o) = st.outputs.as_mut() {
        o.download_secret = Some(secret);
    }
    status_write::status(ctx, &full, st).await?;
    Ok(())
}

/// The status, outputs and finish time of a finished Task that keeps
/// outputs (at least one file).
fn kept_outputs(task: &Task) -> Option<(&TaskStatus, &OutputsStatus, Timestamp)> {
    let st = task.status.as_ref()?;
    let o = st.outputs.as_ref().filter(|o| o.count > 0)?;
    Some((st, o, st.completed_at.as_ref()?.0))
}

/// Every output's name of a finished Task, from the reports in its
/// results (read again: the status may list only some); `None` when they
/// are gone or no longer check out.
async fn names(
    ctx: &Context,
    task: &Task,
    st: &TaskStatus,
    target: &Target,
) -> Result<Option<Vec<String>>, Error> {
    let id = build::identity(task)?;
    let Some(job_uid) = st.job_uid.as_deref() else {
        return Ok(None);
    };
    let cms = match task.spec.is_sharded() {
        true => shard_reads::read(ctx, id.namespace, id.name, id.uid, task.spec.shards).await?,
        false => api::get_result(ctx, id.namespace, &config_map_name(id.name))
            .await?
            .into_iter()
            .collect(),
    };
    Ok(listed(&id, job_uid, &cms, task.spec.is_sharded(), target))
}

/// The names the reports of `cms` list, fenced by Task and Job.
fn listed(
    id: &Identity<'_>,
    job_uid: &str,
    cms: &[k8s_openapi::api::core::v1::ConfigMap],
    sharded: bool,
    target: &Target,
) -> Option<Vec<String>> {
    let mut raws = Vec::new();
    for cm in cms {
        let shard = cm
            .labels()
            .get(crds::names::labels::SHARD)
            .and_then(|s| s.parse().ok());
        if let (Ok(data), true) = (
            observe::fenced(Some(cm), id.uid, job_uid),
            sharded == shard.is_some(),
        ) && let Some(json) = data.get(keys::OUTPUTS)
        {
            raws.push(Raw { shard, json });
        }
    }
    match report::read(&raws, Some(target)) {
        Some(Outcome::Listed(l)) => Some(l.names),
        _ => None,
    }
}
