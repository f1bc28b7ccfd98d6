//! `kubectl longtask cancel`.

use crate::cli::NamesArg;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: NamesArg) -> Result<(), Error> {
    Err(Error::Usage("cancel: not built yet".to_owned()))
}
