//! A Task's log, wherever it is, for `logs`, `run --follow` and the web
//! page. Waits for the pod (saying why), follows it and then each retry's
//! pod, every shard at once with a `[shard I] ` prefix, and once the pods
//! are gone gives the lines the Task kept in `status.logTail`.

mod pods;
pub mod sink;
mod stream;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crds::Task;
use crds::names::labels;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use tokio::task::JoinHandle;

use crate::client::{Error, Kube};
use crate::task::logs::sink::Sink;
use crate::task::outcome::finished;

/// How often following looks for new pods and the Task's end (the lines
/// themselves stream as they come).
const POLL: Duration = Duration::from_secs(1);

/// What to print.
#[derive(Clone, Copy, Debug)]
pub struct Opts {
    pub follow: bool,
    /// Earlier attempts too, not only the newest.
    pub all_attempts: bool,
    /// A line naming the pod before each attempt's log.
    pub headers: bool,
    pub shard: Option<u32>,
}

/// The commands' sink: the program's lines to stdout, ours to stderr.
pub struct Terminal;

impl Sink for Terminal {
    fn line(&self, prefix: &str, line: &[u8]) -> Result<(), Error> {
        stream::print_line(prefix, line)
    }
    fn note(&self, text: &str) -> Result<(), Error> {
        crate::print::note!("{text}");
        Ok(())
    }
    fn header(&self, text: &str) -> Result<(), Error> {
        Ok(crate::print::out(format!("{text}\n"))?)
    }
}

/// Streams the logs of Task `name` (every shard, across retries) to
/// stdout until the Task is finished. Used by `run --follow` and
/// `rerun --follow`, which then report the outcome.
pub async fn follow_task(k: &Kube, name: &str) -> Result<(), Error> {
    let task = k.task(name).await?;
    let o = Opts {
        follow: true,
        all_attempts: true,
        headers: false,
        shard: None,
    };
    follow(k, task, o, &(Arc::new(Terminal) as Arc<dyn Sink>)).await
}

/// Gives `sink` the whole log of Task `task` (every shard, every attempt
/// with a header naming its pod), following it until the Task is
/// finished; `status.logTail` once the pods are gone. For `ui`.
pub async fn follow_into(k: &Kube, task: Task, sink: Arc<dyn Sink>) -> Result<(), Error> {
    let o = Opts {
        follow: true,
        all_attempts: true,
        headers: true,
        shard: None,
    };
    follow(k, task, o, &sink).await
}

fn pod_api(k: &Kube) -> Api<Pod> {
    Api::namespaced(k.client.clone(), &k.namespace)
}

/// The Task's pods, by shard, oldest attempt first.
async fn list(k: &Kube, task: &Task, o: Opts) -> Result<BTreeMap<u32, Vec<Pod>>, Error> {
    let uid = task.metadata.uid.as_deref().unwrap_or_default();
    let lp = ListParams::default().labels(&format!("{}={uid}", labels::TASK_UID));
    let list = pod_api(k)
        .list(&lp)
        .await
        .map_err(|e| Error::api("list", "pods", &k.namespace, None, e))?;
    Ok(pods::attempts(task, list.items, o.shard))
}

fn prefix(task: &Task, shard: u32) -> String {
    if task.spec.is_sharded() {
        format!("[shard {shard}] ")
    } else {
        String::new()
    }
}

fn name_of(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

/// The line naming an attempt's pod: ours, so always made visible.
fn header(sink: &Arc<dyn Sink>, prefix: &str, p: &Pod, attempt: usize) -> Result<(), Error> {
    sink.header(&format!(
        "{prefix}==> pod {} (attempt {attempt}) <==",
        name_of(p)
    ))
}

/// The pods are gone (the Job's TTL, or deleted): what the Task kept.
fn log_tail(sink: &Arc<dyn Sink>, task: &Task) -> Result<(), Error> {
    let tail = task
        .status
        .as_ref()
        .and_then(|s| s.log_tail.clone())
        .unwrap_or_default();
    if tail.is_empty() {
        return sink.note("pods are gone, and status.logTail is empty");
    }
    sink.note("pods are gone; showing the last lines kept in status.logTail")?;
    for line in tail.lines() {
        sink.line("", line.as_bytes())?;
    }
    Ok(())
}

/// Without `-f`: the logs as they are now, and out.
pub async fn current(k: &Kube, task: Task, o: Opts, sink: &Arc<dyn Sink>) -> Result<(), Error> {
    let by_shard = list(k, &task, o).await?;
    if by_shard.is_empty() {
        let had_pods = task.status.as_ref().and_then(|s| s.attempts).unwrap_or(0) > 0;
        if finished(&task) || had_pods {
            return log_tail(sink, &task);
        }
        return sink.note(&pods::why_waiting(&task, None));
    }
    for (shard, attempts) in by_shard {
        let prefix = prefix(&task, shard);
        let skip = if o.all_attempts {
            0
        } else {
            attempts.len() - 1
        };
        for (i, p) in attempts.iter().enumerate().skip(skip) {
            if !pods::started(p) {
                if !pods::ended(p) {
                    sink.note(&format!("{prefix}{}", pods::why_waiting(&task, Some(p))))?;
                }
                continue;
            }
            if o.headers {
                header(sink, &prefix, p, i + 1)?;
            }
            stream::pod_log(pod_api(k), name_of(p), prefix.clone(), false, sink.clone()).await?;
        }
    }
    Ok(())
}

/// One shard's progress through its attempts.
#[derive(Default)]
struct Shard {
    /// Pods (by UID) read to their end, or skipped.
    done: HashSet<String>,
    /// The pod followed now.
    current: Option<(String, JoinHandle<Result<u64, Error>>)>,
    /// Attempts followed so far.
    followed: usize,
    /// Whether the attempts before the newest were set aside (without
    /// `--all-attempts`, on first sight of the shard's pods).
    primed: bool,
}

fn uid_of(p: &Pod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

/// Gives a waiting line unless it is the one last said for `key`.
fn say(
    sink: &Arc<dyn Sink>,
    said: &mut HashMap<Option<u32>, String>,
    key: Option<u32>,
    line: String,
) -> Result<(), Error> {
    if said.get(&key) != Some(&line) {
        sink.note(&line)?;
        said.insert(key, line);
    }
    Ok(())
}

/// With `-f`: follows every shard's pods in turn until the Task is
/// finished and the last pod's log is read.
pub async fn follow(k: &Kube, mut task: Task, o: Opts, sink: &Arc<dyn Sink>) -> Result<(), Error> {
    let name = task.metadata.name.clone().unwrap_or_default();
    let mut shards: BTreeMap<u32, Shard> = BTreeMap::new();
    // The last waiting line said, per shard (None: the Task as a whole).
    let mut said: HashMap<Option<u32>, String> = HashMap::new();
    let mut printed = 0u64;
    loop {
        let done = finished(&task);
        let by_shard = list(k, &task, o).await?;
        if by_shard.is_empty() && shards.values().all(|s| s.current.is_none()) {
            if done {
                if printed == 0 {
                    log_tail(sink, &task)?;
                }
                return Ok(());
            }
            say(sink, &mut said, None, pods::why_waiting(&task, None))?;
        }
        let mut busy = false;
        for (shard, attempts) in &by_shard {
            let st = shards.entry(*shard).or_default();
            let prefix = prefix(&task, *shard);
            printed += reaped(st, true).await?;
            if st.current.is_some() {
                busy = true;
                continue;
            }
            let Some((i, p)) = next_attempt(st, attempts, o) else {
                continue;
            };
            if !pods::started(p) {
                if pods::ended(p) {
                    // Ended without running (evicted before start): no log.
                    st.done.insert(uid_of(p));
                    busy = true;
                } else if !done {
                    let why = pods::why_waiting(&task, Some(p));
                    say(sink, &mut said, Some(*shard), format!("{prefix}{why}"))?;
                }
                continue;
            }
            start(k, sink, o, st, prefix, p, i)?;
            said.remove(&Some(*shard));
            busy = true;
        }
        // Pods that vanished while followed: their readers end on their own.
        for (shard, st) in shards.iter_mut() {
            if !by_shard.contains_key(shard) {
                printed += reaped(st, false).await?;
            }
        }
        if done && !busy {
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
        task = k.task(&name).await?;
    }
}

/// Takes the shard's reader, once it has finished (`only_finished`) or
/// anyway, waits for it and marks its pod read: the lines it gave.
async fn reaped(st: &mut Shard, only_finished: bool) -> Result<u64, Error> {
    let current = if only_finished {
        st.current.take_if(|(_, h)| h.is_finished())
    } else {
        st.current.take()
    };
    let Some((uid, h)) = current else {
        return Ok(0);
    };
    let lines = h
        .await
        .map_err(|e| Error::Usage(format!("log reader: {e}")))??;
    st.done.insert(uid);
    Ok(lines)
}

/// The shard's first attempt not read yet (its index and pod). On first
/// sight of the shard, without `--all-attempts`, the attempts before the
/// newest are set aside.
fn next_attempt<'p>(st: &mut Shard, attempts: &'p [Pod], o: Opts) -> Option<(usize, &'p Pod)> {
    if !st.primed {
        st.primed = true;
        if !o.all_attempts {
            let older = attempts.len().saturating_sub(1);
            st.done.extend(attempts.iter().take(older).map(uid_of));
        }
    }
    attempts
        .iter()
        .enumerate()
        .find(|(_, p)| !st.done.contains(&uid_of(p)))
}

/// Starts reading pod `p`, attempt `i + 1` of its shard, after the line
/// naming it (`--all-attempts`, the page) or, from the second attempt on,
/// a note that the next one follows.
fn start(
    k: &Kube,
    sink: &Arc<dyn Sink>,
    o: Opts,
    st: &mut Shard,
    prefix: String,
    p: &Pod,
    i: usize,
) -> Result<(), Error> {
    if o.headers {
        header(sink, &prefix, p, i + 1)?;
    } else if st.followed > 0 {
        sink.note(&format!(
            "{prefix}following the next attempt, pod {}",
            name_of(p)
        ))?;
    }
    st.followed += 1;
    let h = tokio::spawn(stream::pod_log(
        pod_api(k),
        name_of(p),
        prefix,
        true,
        sink.clone(),
    ));
    st.current = Some((uid_of(p), h));
    Ok(())
}
