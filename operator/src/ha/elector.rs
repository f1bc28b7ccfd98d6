//! Leader election: the thin API loop around the decisions in `lease.rs`.
//! One Lease in the operator's namespace; only its holder runs the
//! controller. A leader that cannot renew in time gives up (the process
//! exits and restarts as a standby), so two leaders never reconcile for
//! longer than the renew deadline's margin.

use std::future::Future;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use tracing::{debug, info, warn};

use crate::api::call_error::{CallError, Chain};
use crate::ha::lease::{self, Decision, Seen, Timings};

/// Name of the Lease the replicas compete for.
pub const LEASE_NAME: &str = "longtask-operator";

/// Why this instance stopped (or could not start) leading.
#[derive(Debug, thiserror::Error)]
pub enum ElectionError {
    #[error("cannot read Lease {namespace}/{name}")]
    GetLease {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("cannot write Lease {namespace}/{name}")]
    WriteLease {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
    #[error("Lease {namespace}/{name} is now held by {holder:?}; this instance no longer leads")]
    Lost {
        namespace: String,
        name: String,
        holder: Option<String>,
    },
    #[error(
        "could not renew Lease {namespace}/{name} for {since:?} (deadline {deadline:?}); this instance no longer leads"
    )]
    DeadlineMissed {
        namespace: String,
        name: String,
        since: Duration,
        deadline: Duration,
    },
}

/// One contender for the Lease.
pub struct Elector {
    api: Api<Lease>,
    namespace: String,
    identity: String,
    timings: Timings,
    /// The Lease's `leaseTransitions` as last written by this instance.
    transitions: AtomicI32,
}

async fn bounded<T>(
    limit: Duration,
    fut: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, CallError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(CallError::from),
        Err(_) => Err(CallError::Timeout(limit)),
    }
}

impl Elector {
    pub fn new(client: Client, namespace: &str, identity: &str, timings: Timings) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
            timings,
            transitions: AtomicI32::new(0),
        }
    }

    fn limit(&self) -> Duration {
        self.timings.retry_period
    }

    async fn get(&self) -> Result<Option<Lease>, ElectionError> {
        bounded(self.limit(), self.api.get_opt(LEASE_NAME))
            .await
            .map_err(|source| ElectionError::GetLease {
                namespace: self.namespace.clone(),
                name: LEASE_NAME.to_owned(),
                source,
            })
    }

    /// Writes the Lease for `decision`; `Ok(false)` when another instance
    /// won the race (conflict or AlreadyExists).
    async fn write(
        &self,
        current: Option<&Lease>,
        decision: Decision,
    ) -> Result<bool, ElectionError> {
        let want = lease::desired(
            current,
            LEASE_NAME,
            &self.namespace,
            &self.identity,
            decision,
            self.timings.lease_duration,
            Timestamp::now(),
        );
        let pp = PostParams {
            field_manager: Some(crds::names::OPERATOR_FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let res = match current {
            None => bounded(self.limit(), self.api.create(&pp, &want)).await,
            Some(_) => bounded(self.limit(), self.api.replace(LEASE_NAME, &pp, &want)).await,
        };
        match res {
            Ok(_) => {
                let n = want.spec.as_ref().and_then(|s| s.lease_transitions);
                self.transitions.store(n.unwrap_or(0), Ordering::Relaxed);
                Ok(true)
            }
            Err(e) if matches!(e.code(), Some(409)) => Ok(false),
            Err(source) => Err(ElectionError::WriteLease {
                namespace: self.namespace.clone(),
                name: LEASE_NAME.to_owned(),
                source,
            }),
        }
    }

    /// Waits until this instance holds the Lease; `contact` runs once, after
    /// the first successful read (a standby is ready from then on). Returns
    /// when the winning write began: the leadership clock starts there.
    pub async fn acquire(&self, contact: impl FnOnce()) -> Instant {
        let mut seen: Option<Seen> = None;
        let mut contact = Some(contact);
        let mut announced = None::<Option<String>>;
        loop {
            let started = Instant::now();
            match self.get().await {
                Ok(lease) => {
                    if let Some(f) = contact.take() {
                        f();
                    }
                    let (decision, next) = lease::decide(
                        lease.as_ref(),
                        &self.identity,
                        seen.as_ref(),
                        started,
                        self.timings.lease_duration,
                    );
                    seen = next;
                    if decision == Decision::Wait {
                        let holder = seen.as_ref().and_then(|s| s.holder.clone());
                        if announced.as_ref() != Some(&holder) {
                            info!(
                                holder = holder.as_deref().unwrap_or("<none>"),
                                "standing by; another instance leads"
                            );
                            announced = Some(holder);
                        }
                    } else {
                        match self.write(lease.as_ref(), decision).await {
                            Ok(true) => {
                                info!(lease = LEASE_NAME, ?decision, "acquired the Lease; leading");
                                return started;
                            }
                            Ok(false) => debug!("lost the race for the Lease"),
                            Err(e) => warn!(error = %Chain(&e), "cannot take the Lease"),
                        }
                    }
                }
                Err(e) => warn!(error = %Chain(&e), "cannot read the Lease"),
            }
            tokio::time::sleep(self.timings.retry_period).await;
        }
    }

    /// The Lease's `leaseTransitions` as this instance last wrote it: after
    /// [`Elector::acquire`], how often leadership had changed hands.
    pub fn lease_transitions(&self) -> i32 {
        self.transitions.load(Ordering::Relaxed)
    }

    /// Renews the Lease while leading; returns why leadership ended.
    /// `last_ok` is when the last successful write began.
    pub async fn keep(&self, mut last_ok: Instant) -> ElectionError {
        loop {
            let left = self
                .timings
                .renew_deadline
                .saturating_sub(last_ok.elapsed());
            tokio::time::sleep(self.timings.renew_period.min(left)).await;
            let started = Instant::now();
            if !lease::still_leading(last_ok, started, &self.timings) {
                return ElectionError::DeadlineMissed {
                    namespace: self.namespace.clone(),
                    name: LEASE_NAME.to_owned(),
                    since: started.saturating_duration_since(last_ok),
                    deadline: self.timings.renew_deadline,
                };
            }
            let lease = match self.get().await {
                Ok(l) => l,
                Err(e) => {
                    warn!(error = %Chain(&e), "cannot renew the Lease");
                    continue;
                }
            };
            let (decision, _) = lease::decide(
                lease.as_ref(),
                &self.identity,
                None,
                started,
                self.timings.lease_duration,
            );
            if decision != Decision::Renew {
                return ElectionError::Lost {
                    namespace: self.namespace.clone(),
                    name: LEASE_NAME.to_owned(),
                    holder: lease
                        .as_ref()
                        .and_then(|l| l.spec.as_ref())
                        .and_then(|s| s.holder_identity.clone()),
                };
            }
            match self.write(lease.as_ref(), decision).await {
                Ok(true) => {
                    debug!("renewed the Lease");
                    last_ok = started;
                }
                // A conflict: someone wrote the Lease; the next read tells who.
                Ok(false) => debug!("Lease renewal conflicted"),
                Err(e) => warn!(error = %Chain(&e), "cannot renew the Lease"),
            }
        }
    }

    /// Hands the Lease back so a standby takes over at once (best effort).
    pub async fn release(&self) {
        match self.get().await {
            Ok(Some(l))
                if l.spec.as_ref().and_then(|s| s.holder_identity.as_deref())
                    == Some(self.identity.as_str()) =>
            {
                let pp = PostParams::default();
                let freed = lease::released(&l, Timestamp::now());
                match bounded(self.limit(), self.api.replace(&l.name_any(), &pp, &freed)).await {
                    Ok(_) => info!("released the Lease"),
                    Err(e) => warn!(error = %Chain(&e), "cannot release the Lease"),
                }
            }
            Ok(_) => {}
            Err(e) => warn!(error = %Chain(&e), "cannot release the Lease"),
        }
    }
}
