//! `kubectl longtask result`.

use crate::cli::ResultArgs;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: ResultArgs) -> Result<(), Error> {
    Err(Error::Usage("result: not built yet".to_owned()))
}
