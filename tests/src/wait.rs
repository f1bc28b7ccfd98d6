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
                Some(e) => bail!("timed out after {timeout:?} waiting for {what}; last error: {e:#}"),
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
    let mut found = Value::Null;
    until(timeout, &format!("{name} to be {type_}"), || {
        let api = api.clone();
        let name = name.to_string();
        let found = &mut found;
        async move {
            let obj = serde_json::to_value(api.get(&name).await?)?;
            let ok = has_condition(&obj, type_);
            *found = obj;
            Ok(ok)
        }
    })
    .await?;
    Ok(found)
}
