//! The read step: the Task's Job (found, or started under the caps), then
//! what `read_plan::reads` asks for — its pods and result ConfigMaps — with any
//! result read as final vetted against the Job it must come from.

use crds::Task;
use crds::result::config_map_name;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::reflector::ObjectRef;

use crate::api;
use crate::context::Context;
use crate::job::build::Identity;
use crate::outputs::report::Target;
use crate::queue::Wait;
use crate::reconcile::admit::{self, Admission};
use crate::reconcile::error::Error;
use crate::reconcile::read_plan::{self, Find};
use crate::reconcile::{outputs, result_trust, shard_reads};
use crate::status::kueue;
use crate::status::observe::{self, Observed, Ownership};

/// What became of the Task's Job.
pub enum Found {
    /// The Job with the Task's name, if there is one (ours or not).
    Job(Option<Box<Job>>),
    /// The Task waits for a slot.
    Wait(Wait),
    /// The Task cannot start (the API server refused to create the Job
    /// for its content, or its output store is unavailable): why.
    Refused(crate::status::Refusal),
}

/// Finds the Task's Job, or starts it when the Task may start.
pub async fn job(ctx: &Context, task: &Task, id: &Identity<'_>) -> Result<Found, Error> {
    let look_first = match read_plan::find(task) {
        Find::Get => return Ok(Found::Job(recorded_job(ctx, task, id).await?.map(Box::new))),
        Find::GetThenStart => true,
        // Waiting, as the caches show: no API call at all.
        Find::Start if let Some(wait) = admit::waits_from_cache(ctx, task) => {
            return Ok(Found::Wait(wait));
        }
        // Under a cap, a Job may exist already: look first.
        Find::Start => admit::capped(ctx, id.namespace).await?,
    };
    if look_first && let Some(j) = api::get_job(ctx, id.namespace, id.name).await? {
        return Ok(Found::Job(Some(Box::new(j))));
    }
    Ok(match admit::start(ctx, task).await? {
        Admission::Started(j) => Found::Job(Some(j)),
        Admission::Wait(w) => Found::Wait(w),
        Admission::Refused(why) => Found::Refused(why),
    })
}

/// The Job of a Task that had one: from the Job cache when the cache
/// holds the very Job the status records (the watch wakes the Task on each
/// change of it, so a newer one is on its way), else from the API server
/// (just created, replaced, gone, or the cache not synced yet).
async fn recorded_job(ctx: &Context, task: &Task, id: &Identity<'_>) -> Result<Option<Job>, Error> {
    let recorded = task.status.as_ref().and_then(|s| s.job_uid.as_deref());
    let cached = ctx
        .queue
        .jobs()
        .and_then(|store| store.get(&ObjectRef::new(id.name).within(id.namespace)))
        .filter(|j| recorded.is_some() && j.metadata.uid.as_deref() == recorded);
    if let Some(j) = cached {
        ctx.metrics.cache_read("job");
        return Ok(Some(Job::clone(&j)));
    }
    Ok(api::get_job(ctx, id.namespace, id.name).await?)
}

/// Everything one reconcile read about a Task that has (or had) a Job.
pub struct Seen {
    pub job: Option<Job>,
    /// Pods of the Task's own Job.
    pub pods: Vec<Pod>,
    /// `pods` are the live ones only (from the pod cache).
    pub pods_live_only: bool,
    /// Pods that left the cache disrupted (see `Observed::departed`).
    pub departed: Vec<Pod>,
    /// Why the API server refuses that Job's pods, when it has none.
    pub pod_refused: Option<String>,
    /// `<task>-result`, if read and present.
    pub result: Option<ConfigMap>,
    /// Why `result` is not accepted as the Job's final result.
    pub refused: Option<String>,
    /// The shards' results that checked out.
    pub shards: Vec<ConfigMap>,
    /// Every result ConfigMap refused, and why (for a Warning Event).
    pub refusals: Vec<String>,
    /// Kueue's Workload of the Job, when read (`None`: not read, or Kueue
    /// is not installed).
    pub kueue: Option<kueue::Seen>,
    /// Where the Task's outputs go, when its result is read as final and
    /// it has an output store.
    pub outputs: Option<Target>,
}

impl Seen {
    /// The status logic's view of what was read.
    pub fn observed(&self, now: Time) -> Observed<'_> {
        Observed {
            job: self.job.as_ref(),
            result: self.result.as_ref(),
            refused: self.refused.clone(),
            pod_refused: self.pod_refused.clone(),
            pods: &self.pods,
            pods_live_only: self.pods_live_only,
            departed: &self.departed,
            shard_results: &self.shards,
            kueue: self.kueue.as_ref(),
            outputs: self.outputs.as_ref(),
            now,
        }
    }
}

/// Reads what the status of `task` needs besides its Job.
pub async fn cluster(
    ctx: &Context,
    task: &Task,
    id: &Identity<'_>,
    job: Option<Box<Job>>,
) -> Result<Seen, Error> {
    let job = job.map(|j| *j);
    let reads = read_plan::reads(task, job.as_ref());
    let ours = job
        .as_ref()
        .filter(|j| observe::ownership(j, id.uid) == Ownership::Ours);
    // One round trip where the order does not matter.
    let ((read, result), shards, kueue) = futures::try_join!(
        pods_then_result(ctx, id, ours, &reads),
        async {
            Ok(match reads.shard_results {
                true => {
                    shard_reads::read(ctx, id.namespace, id.name, id.uid, task.spec.shards).await?
                }
                false => Vec::new(),
            })
        },
        async {
            Ok(match ours.filter(|_| reads.workload) {
                Some(j) => api::job_workload(ctx, id.namespace, j).await?,
                None => None,
            })
        },
    )?;
    let pod_refused = match ours {
        Some(j) if reads.pods && read.pods.is_empty() => refusal(ctx, j),
        _ => None,
    };
    let mut seen = Seen {
        kueue,
        job: None,
        pods: read.pods,
        pods_live_only: read.live_only,
        departed: read.departed,
        pod_refused,
        result,
        refused: None,
        shards: Vec::new(),
        refusals: Vec::new(),
        outputs: reads.fence.and(outputs::target(ctx, task, job.as_ref())),
    };
    if let Some(job_uid) = reads.fence {
        vet(ctx, id, job_uid, &mut seen, shards).await?;
    } else {
        seen.shards = shards;
    }
    seen.job = job;
    Ok(seen)
}

/// The pods of the Job `ours` (with whether they are the live ones only),
/// then the result, as `reads` asks. The pods come before the result: a
/// worker writes its result before it exits, so a pod seen finished has
/// its result visible to a read sent after (the two read at once could
/// find the pod stopped and the result not yet written, and end a
/// cancelled Task "without result").
async fn pods_then_result(
    ctx: &Context,
    id: &Identity<'_>,
    ours: Option<&Job>,
    reads: &read_plan::Reads<'_>,
) -> Result<(Pods, Option<ConfigMap>), Error> {
    let pods = match ours.filter(|_| reads.pods) {
        Some(j) => pods(ctx, id, j, reads.all_pods).await?,
        None => Pods::default(),
    };
    let name = config_map_name(id.name);
    let final_read = reads.fence.is_some();
    let res = result(ctx, id, &name, reads.result, final_read).await?;
    Ok((pods, res))
}

/// The result ConfigMap `name`, when `wanted`. While the Job runs, one
/// the cache has not seen is not there yet (its creation wakes the Task),
/// and one the status already shows has nothing new (its next change
/// wakes it).
async fn result(
    ctx: &Context,
    id: &Identity<'_>,
    name: &str,
    wanted: bool,
    final_read: bool,
) -> Result<Option<ConfigMap>, Error> {
    if !wanted {
        return Ok(None);
    }
    if !final_read && !ctx.caches.result_is_new(id.namespace, name, id.uid) {
        ctx.metrics.cache_read("result");
        return Ok(None);
    }
    Ok(api::get_result(ctx, id.namespace, name).await?)
}

/// The pods a reconcile read.
#[derive(Default)]
struct Pods {
    pods: Vec<Pod>,
    /// `pods` are the live ones only.
    live_only: bool,
    /// Pods that left the cache disrupted.
    departed: Vec<Pod>,
}

/// The pods of `job`: from the pod cache (which holds no finished pod),
/// else (`all`: see `Reads::all_pods`; or a cache not synced yet) every
/// pod, from the API server. When a pod of the Task left the cache since
/// its last reconcile (see `Caches::take_departed`), the API server is
/// asked once why: the ended pods it shows disrupted are `departed`.
async fn pods(ctx: &Context, id: &Identity<'_>, job: &Job, all: bool) -> Result<Pods, Error> {
    let left = ctx.caches.take_departed(id.uid);
    let cached = (!all)
        .then(|| ctx.caches.pods(id.namespace, id.uid, job))
        .flatten();
    let Some(live) = cached else {
        let pods = api::list_pods(ctx, id.namespace, id.uid, job).await;
        if pods.is_err() && left {
            ctx.caches.mark_departed(id.uid);
        }
        return Ok(Pods {
            pods: pods?,
            ..Pods::default()
        });
    };
    ctx.metrics.cache_read("pods");
    let departed = match left {
        false => Vec::new(),
        true => match api::list_pods(ctx, id.namespace, id.uid, job).await {
            Ok(every) => every.into_iter().filter(observe::left_disrupted).collect(),
            Err(e) => {
                ctx.caches.mark_departed(id.uid);
                return Err(e.into());
            }
        },
    };
    Ok(Pods {
        pods: live,
        live_only: true,
        departed,
    })
}

/// For a running Job that has no pod and none active: is the API server
/// refusing them? (A pod the cache has not seen yet is counted active.)
/// From the cache of the Job controller's FailedCreate Events, which a
/// watch fills and which wake the Task: no reconcile lists Events.
fn refusal(ctx: &Context, job: &Job) -> Option<String> {
    if observe::finish(job).is_some() || active(job) {
        return None;
    }
    ctx.caches.refusal(job.metadata.uid.as_deref()?)
}

/// True when the Job controller counts a pod of `job` as active.
fn active(job: &Job) -> bool {
    job.status.as_ref().and_then(|s| s.active).unwrap_or(0) > 0
}

/// Keeps only results written by a pod of the Job `job_uid` (its current
/// one, or the one recorded when it vanished); never accepts the others.
async fn vet(
    ctx: &Context,
    id: &Identity<'_>,
    job_uid: &str,
    seen: &mut Seen,
    shards: Vec<ConfigMap>,
) -> Result<(), Error> {
    let fence = result_trust::Fence {
        namespace: id.namespace,
        job: id.name,
        task_uid: id.uid,
        job_uid,
        pods: &seen.pods,
    };
    if let Some(cm) = seen.result.as_ref()
        && let Err(why) = result_trust::vet(ctx, &fence, cm, None).await?
    {
        seen.refusals.push(why.clone());
        seen.refused = Some(why);
    }
    if !shards.is_empty() {
        let (kept, refused) = result_trust::vet_shards(ctx, &fence, shards).await?;
        seen.shards = kept;
        seen.refusals.extend(refused);
    }
    Ok(())
}
