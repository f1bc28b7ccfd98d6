//! `kubectl longtask wait NAME...`: waits for every Task at once; exits 0
//! when all completed, else with the first failed one's code (in the
//! order given), 124 on timeout.

use futures::future::join_all;

use crate::cli::WaitArgs;
use crate::client::{Error, Kube};
use crate::task::outcome;

pub async fn run(k: &Kube, a: WaitArgs) -> Result<(), Error> {
    let waits = a
        .names
        .iter()
        .map(|n| outcome::until_finished(k, n, a.timeout));
    let mut code = 0;
    for done in join_all(waits).await {
        let t = done?;
        outcome::report(&t)?;
        if code == 0 {
            code = outcome::exit_code(&t);
        }
    }
    match code {
        0 => Ok(()),
        c => Err(Error::Exit(c)),
    }
}
