//! `kubectl longtask delete`.

use crate::cli::DeleteArgs;
use crate::client::{Error, Kube};

pub async fn run(_k: &Kube, _a: DeleteArgs) -> Result<(), Error> {
    Err(Error::Usage("delete: not built yet".to_owned()))
}
