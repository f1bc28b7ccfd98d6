//! `kubectl longtask run`.

use crate::cli::RunArgs;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: RunArgs) -> Result<(), Error> {
    Err(Error::Usage("run: not built yet".to_owned()))
}
