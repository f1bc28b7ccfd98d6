//! Watches that keep score while a case runs: the most pods Running at
//! once, and the order Jobs appeared in with the most unfinished at once.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;

#[derive(Default)]
struct Score {
    now: BTreeSet<String>,
    peak: usize,
    order: Vec<String>,
}

impl Score {
    fn set(&mut self, name: String, counted: bool) {
        if counted {
            self.now.insert(name);
            self.peak = self.peak.max(self.now.len());
        } else {
            self.now.remove(&name);
        }
    }
}

/// A running watch and its score; the watch stops on drop.
pub struct Track {
    score: Arc<Mutex<Score>>,
    task: tokio::task::JoinHandle<()>,
}

impl Track {
    /// Pods in `ns` (matching `selector`, if any) whose phase is Running.
    pub fn running_pods(client: &kube::Client, ns: &str, selector: Option<&str>) -> Track {
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let mut cfg = watcher::Config::default();
        if let Some(s) = selector {
            cfg = cfg.labels(s);
        }
        Track::start(api, cfg, |p: &Pod| {
            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
    }

    /// Jobs in `ns` that have not finished (no Complete or Failed condition).
    pub fn unfinished_jobs(client: &kube::Client, ns: &str) -> Track {
        let api: Api<Job> = Api::namespaced(client.clone(), ns);
        Track::start(api, watcher::Config::default(), |j: &Job| {
            !j.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True"
                    })
                })
        })
    }

    fn start<K>(api: Api<K>, cfg: watcher::Config, counted: fn(&K) -> bool) -> Track
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + k8s_openapi::serde::de::DeserializeOwned
            + Send
            + 'static,
    {
        let score: Arc<Mutex<Score>> = Arc::default();
        let s = score.clone();
        let task = tokio::spawn(async move {
            let mut stream = watcher(api, cfg).boxed();
            while let Some(ev) = stream.next().await {
                let mut s = s.lock().unwrap();
                match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                        let name = o.meta().name.clone().unwrap_or_default();
                        if !s.order.contains(&name) {
                            s.order.push(name.clone());
                        }
                        s.set(name, counted(&o));
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        s.set(o.meta().name.clone().unwrap_or_default(), false);
                    }
                    _ => {}
                }
            }
        });
        Track { score, task }
    }

    /// The most objects counted at once so far.
    pub fn peak(&self) -> usize {
        self.score.lock().unwrap().peak
    }

    /// Object names in the order they first appeared.
    pub fn order(&self) -> Vec<String> {
        self.score.lock().unwrap().order.clone()
    }
}

impl Drop for Track {
    fn drop(&mut self) {
        self.task.abort();
    }
}
