//! The collector's access to the stores: a client per store with its
//! keys (read again every minute), a bounded delete, and its errors.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crds::outputs::OutputStore;
use kube::ResourceExt;
use longtask_store::{Client, StoreError};
use tracing::warn;

use crate::api::call_error::Chain;
use crate::api::error::ApiError;
use crate::context::Context;
use crate::reconcile::outputs as reconcile_outputs;

/// How long a store's client (with its keys) is used before its
/// credentials Secret is read again.
const CLIENT_TTL: Duration = Duration::from_secs(60);

/// What collecting a store's objects failed at.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("cannot read the credentials of OutputStore {store}")]
    Credentials {
        store: String,
        #[source]
        source: ApiError,
    },
    #[error("OutputStore {store} cannot be used: {why}")]
    Unusable { store: String, why: String },
    #[error("cannot make a client for OutputStore {store}")]
    Client {
        store: String,
        #[source]
        source: StoreError,
    },
    #[error("cannot list OutputStore {store}")]
    List {
        store: String,
        #[source]
        source: StoreError,
    },
    #[error("cannot delete {prefix} from OutputStore {store}")]
    Delete {
        store: String,
        prefix: String,
        #[source]
        source: StoreError,
    },
    #[error("deleting {prefix} from OutputStore {store} took longer than {limit:?}")]
    DeleteTimeout {
        store: String,
        prefix: String,
        limit: Duration,
    },
}

impl CollectError {
    /// The operation that failed (a metric label).
    pub fn operation(&self) -> &'static str {
        match self {
            Self::Credentials { .. } | Self::Unusable { .. } | Self::Client { .. } => "credentials",
            Self::List { .. } => "list",
            Self::Delete { .. } | Self::DeleteTimeout { .. } => "delete",
        }
    }

    /// The reason it stands for (a metric label from a fixed vocabulary).
    pub fn category(&self) -> &'static str {
        match self {
            Self::Credentials { .. } | Self::Unusable { .. } => {
                crds::Reason::OutputStoreUnavailable.as_str()
            }
            Self::DeleteTimeout { .. } => crds::Reason::OutputStoreUnreachable.as_str(),
            Self::Client { source, .. }
            | Self::List { source, .. }
            | Self::Delete { source, .. } => source.reason().as_str(),
        }
    }
}

/// Clients of the stores, each kept for `CLIENT_TTL`.
#[derive(Default)]
pub struct Clients(Mutex<HashMap<String, (Instant, Client)>>);

impl Clients {
    /// A client of `store` with its keys.
    pub async fn of(&self, ctx: &Context, store: &OutputStore) -> Result<Client, CollectError> {
        let name = store.name_any();
        if let Ok(m) = self.0.lock()
            && let Some((at, c)) = m.get(&name)
            && at.elapsed() < CLIENT_TTL
        {
            return Ok(c.clone());
        }
        let (bucket, creds) = match reconcile_outputs::signer(ctx, store).await {
            Ok(Ok(s)) => s,
            Ok(Err(why)) => return Err(CollectError::Unusable { store: name, why }),
            Err(source) => {
                return Err(CollectError::Credentials {
                    store: name,
                    source,
                });
            }
        };
        let timeout = ctx.config.outputs.request_timeout;
        let client =
            Client::new(bucket, creds, timeout).map_err(|source| CollectError::Client {
                store: name.clone(),
                source,
            })?;
        if let Ok(mut m) = self.0.lock() {
            m.insert(name, (Instant::now(), client.clone()));
        }
        Ok(client)
    }
}

/// Deletes everything below `prefix` in `store`, within the deletion
/// bound: how many objects went.
pub async fn delete(
    ctx: &Context,
    clients: &Clients,
    store: &OutputStore,
    prefix: &str,
) -> Result<u64, CollectError> {
    let client = clients.of(ctx, store).await?;
    let limit = ctx.config.outputs.delete_timeout;
    let err = |source| CollectError::Delete {
        store: store.name_any(),
        prefix: prefix.to_owned(),
        source,
    };
    match tokio::time::timeout(limit, client.delete_prefix(prefix)).await {
        Ok(res) => res.map_err(err),
        Err(_) => Err(CollectError::DeleteTimeout {
            store: store.name_any(),
            prefix: prefix.to_owned(),
            limit,
        }),
    }
}

/// Counts and logs a failure.
pub fn failed(ctx: &Context, e: &CollectError) {
    ctx.metrics.store_error(e.operation(), e.category());
    warn!(error = %Chain(e), "output store; the sweep tries again");
}
