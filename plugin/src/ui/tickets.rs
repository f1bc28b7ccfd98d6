//! The page's download tickets: each one file's GET from the store,
//! started when the page asked (`download::ticket`) and handed over once,
//! within 60 s, when the page follows its link (`download::redeem`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crds::outputs::OutputFile;

use super::guard;

/// How long a ticket is good for after the click that asked for it.
const LIFETIME: Duration = Duration::from_secs(60);
/// Most tickets waiting at once (each holds a started GET); the oldest
/// goes first.
const MOST: usize = 32;

/// Tickets issued and not yet redeemed.
#[derive(Default)]
pub struct Tickets {
    waiting: Mutex<HashMap<String, Ticket>>,
}

/// One file's download, started, waiting for the page to follow its link.
pub struct Ticket {
    made: Instant,
    pub file: OutputFile,
    pub task: String,
    pub answer: reqwest::Response,
}

impl Tickets {
    /// A new ticket for `file` of `task`, whose GET `answer` has started.
    pub fn issue(
        &self,
        task: String,
        file: OutputFile,
        answer: reqwest::Response,
    ) -> std::io::Result<String> {
        let token = guard::random_token()?;
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.retain(|_, t| t.made.elapsed() < LIFETIME);
        while waiting.len() >= MOST {
            let oldest = waiting
                .iter()
                .min_by_key(|(_, t)| t.made)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                waiting.remove(&k);
            }
        }
        let ticket = Ticket {
            made: Instant::now(),
            file,
            task,
            answer,
        };
        waiting.insert(token.clone(), ticket);
        Ok(token)
    }

    /// The ticket, once: gone after this call, and refused when old.
    pub fn redeem(&self, token: &str) -> Option<Ticket> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting
            .remove(token)
            .filter(|t| t.made.elapsed() < LIFETIME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::output;

    fn answer() -> reqwest::Response {
        reqwest::Response::from(axum::http::Response::new(reqwest::Body::from("x")))
    }

    #[test]
    fn a_ticket_works_once_and_not_for_long() {
        let tickets = Tickets::default();
        let t = tickets
            .issue("ns/t".into(), output("a", b"x"), answer())
            .expect("issued");
        assert_eq!(t.len(), 64);
        assert!(tickets.redeem("nope").is_none());
        assert!(tickets.redeem(&t).is_some_and(|t| t.file.name == "a"));
        assert!(tickets.redeem(&t).is_none(), "a second time");
        let old = tickets
            .issue("ns/t".into(), output("b", b"x"), answer())
            .expect("issued");
        if let Some(w) = tickets.waiting.lock().expect("lock").get_mut(&old) {
            w.made = w.made.checked_sub(LIFETIME).expect("up for over a minute");
        }
        assert!(tickets.redeem(&old).is_none(), "expired");
    }

    #[test]
    fn at_most_so_many_tickets_wait() {
        let tickets = Tickets::default();
        let first = tickets
            .issue("ns/t".into(), output("a", b"x"), answer())
            .expect("issued");
        for _ in 0..MOST {
            tickets
                .issue("ns/t".into(), output("a", b"x"), answer())
                .expect("issued");
        }
        assert_eq!(tickets.waiting.lock().expect("lock").len(), MOST);
        assert!(tickets.redeem(&first).is_none(), "the oldest went first");
    }
}
