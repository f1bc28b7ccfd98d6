//! `kubectl longtask logs`.

use crate::cli::LogsArgs;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: LogsArgs) -> Result<(), Error> {
    Err(Error::Usage("logs: not built yet".to_owned()))
}
