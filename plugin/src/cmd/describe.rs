//! `kubectl longtask describe`.

use crate::cli::NameArg;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: NameArg) -> Result<(), Error> {
    Err(Error::Usage("describe: not built yet".to_owned()))
}
