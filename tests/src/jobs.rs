//! Records every Job the cluster shows in a namespace, through a watch, so a
//! case can prove each Task had exactly one Job UID in its life.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::Api;
use kube::runtime::watcher;

/// Job names → every UID seen under that name.
pub struct JobLog {
    seen: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl JobLog {
    pub fn start(client: &kube::Client, ns: &str) -> JobLog {
        let seen: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>> = Arc::default();
        let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
        let s = seen.clone();
        let task = tokio::spawn(async move {
            let mut stream = watcher(jobs, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                if let Ok(watcher::Event::Apply(j) | watcher::Event::InitApply(j)) = ev
                    && let (Some(n), Some(u)) = (j.metadata.name, j.metadata.uid)
                {
                    s.lock().unwrap().entry(n).or_default().insert(u);
                }
            }
        });
        JobLog { seen, task }
    }

    /// The UIDs seen for Job `name`.
    pub fn uids(&self, name: &str) -> BTreeSet<String> {
        self.seen
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// Fails unless every name in `names` had exactly one Job UID.
    pub fn one_each<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> anyhow::Result<()> {
        for n in names {
            let u = self.uids(n);
            anyhow::ensure!(u.len() == 1, "{n} had {} Jobs in its life: {u:?}", u.len());
        }
        Ok(())
    }
}

impl Drop for JobLog {
    fn drop(&mut self) {
        self.task.abort();
    }
}
