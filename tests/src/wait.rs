//! Waiting on conditions the way `kubectl wait` does: poll a level, never
//! sleep and hope.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use kube::api::{Api, DynamicObject};
use serde_json::Value;

/// Polls `cond` every 100 ms until it returns true or `timeout` passes.
pub async fn until<F, Fut>(timeout: Duration, what: &str, mut cond: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    let mut last = None;
    loop {
        match cond().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = Some(e),
        }
        if Instant::now() > deadline {
            match last {
                Some(e) => {
                    bail!("timed out after {timeout:?} waiting for {what}; last error: {e:#}")
                }
                None => bail!("timed out after {timeout:?} waiting for {what}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `obj` has condition `type_` with status True.
pub fn has_condition(obj: &Value, type_: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == type_ && c["status"] == "True")
        })
}

/// Waits until the named object has condition `type_`=True and returns it.
pub async fn condition(
    api: &Api<DynamicObject>,
    name: &str,
    type_: &str,
    timeout: Duration,
) -> Result<Value> {
    let deadline = Instant::now() + timeout;
    let mut last: Value;
    loop {
        match api.get_opt(name).await {
            Ok(Some(obj)) => {
                last = serde_json::to_value(obj)?;
                if has_condition(&last, type_) {
                    return Ok(last);
                }
            }
            Ok(None) => last = Value::String("not found".into()),
            Err(e) => last = Value::String(format!("{e}")),
        }
        if Instant::now() > deadline {
            bail!(
                "timed out after {timeout:?} waiting for {name} to be {type_}; last seen: {}",
                last.get("status").unwrap_or(&last)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
