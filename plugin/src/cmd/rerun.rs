//! `kubectl longtask rerun`.

use crate::cli::RerunArgs;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: RerunArgs) -> Result<(), Error> {
    Err(Error::Usage("rerun: not built yet".to_owned()))
}
