//! Where a log goes, apart from the follower that feeds it and the
//! reader of one pod's log (`stream`) that writes into it.

use crate::client::Error;

/// Where a log goes: stdout (and stderr for our own lines) for the
/// commands, an event stream for a page of `ui`.
pub trait Sink: Send + Sync + 'static {
    /// One line of the program's log, after `prefix` (`[shard I] `).
    fn line(&self, prefix: &str, line: &[u8]) -> Result<(), Error>;
    /// A line of ours about the log: why it waits, the next attempt, the
    /// tail kept in the status.
    fn note(&self, text: &str) -> Result<(), Error>;
    /// The line naming an attempt's pod, before its log.
    fn header(&self, text: &str) -> Result<(), Error>;
}
