//! `kubectl longtask get`.

use crate::cli::GetArgs;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: GetArgs) -> Result<(), Error> {
    Err(Error::Usage("get: not built yet".to_owned()))
}
