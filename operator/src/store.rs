//! Helpers on kube's reflector stores, shared by the caches the
//! reconciler reads (`cache`) and the queue's (`queue`). A leaf: it uses no
//! other module of the crate.

use futures::FutureExt;
use kube::runtime::reflector::{Lookup, Store};

/// `store`, once its watch has listed everything (never waits).
pub fn ready<K>(store: &Store<K>) -> Option<&Store<K>>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store.wait_until_ready().now_or_never()?.ok()?;
    Some(store)
}
