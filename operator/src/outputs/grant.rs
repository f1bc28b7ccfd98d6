//! Pure: when a Task's grants expire. The upload grant (a signed POST
//! policy) is made as its Job is, and lasts the Task's
//! `spec.timeoutSeconds` plus an hour to upload in, or S3's longest, seven
//! days, when it has none (or a longer one). The download grant (presigned
//! GETs, seven days at most too) is made when the Task finishes and made
//! again every six days, each time signed at a time that depends only on
//! the finish time: signing again in the same period gives the very same
//! URLs, so writing them again changes nothing.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// The longest an S3 signature may be valid (SigV4): seven days.
pub const MAX_VALIDITY: Duration = Duration::from_secs(7 * 24 * 3600);
/// Time left to upload after the Task's deadline.
pub const UPLOAD_SLACK: Duration = Duration::from_secs(3600);
/// How often a finished Task's download URLs are signed anew: a day
/// before the last ones expire.
pub const RENEW_EVERY: Duration = Duration::from_secs(6 * 24 * 3600);

/// When the upload grant of a Task whose Job is made at `now` expires.
pub fn upload_expiry(now: Timestamp, timeout_seconds: Option<i64>) -> Timestamp {
    let valid = match timeout_seconds.and_then(|s| u64::try_from(s).ok()) {
        Some(s) => (Duration::from_secs(s) + UPLOAD_SLACK).min(MAX_VALIDITY),
        None => MAX_VALIDITY,
    };
    add(now, valid)
}

/// `t + d`, saturating at the end of time.
fn add(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

/// The download grant of a Task that finished at `finished`, as it should
/// stand at `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Download {
    /// The signing time of the current period (never after `now`).
    pub signed: Timestamp,
    /// When its URLs expire: `signed` plus seven days.
    pub expires: Timestamp,
    /// When the next period starts (the Task is looked at again then).
    pub next: Timestamp,
    /// True when the period started less than a day ago: the URLs of the
    /// period before are still valid, and these are to be written now. A
    /// look later in the period writes nothing (see `docs/outputs.md`).
    pub due: bool,
}

/// Where the download grant of a Task finished at `finished` stands at
/// `now` (a finish time in the future counts as now).
pub fn download(finished: Timestamp, now: Timestamp) -> Download {
    let every = RENEW_EVERY.as_secs() as i64;
    let since = (now.as_second() - finished.as_second()).max(0);
    let period = since / every;
    let signed = Timestamp::from_second(finished.as_second().min(now.as_second()) + period * every)
        .unwrap_or(now);
    let into = now.as_second() - signed.as_second();
    Download {
        signed,
        expires: add(signed, MAX_VALIDITY),
        next: add(signed, RENEW_EVERY),
        due: into < (MAX_VALIDITY - RENEW_EVERY).as_secs() as i64,
    }
}

/// How long from `now` until `at` (zero if it has passed).
pub fn until(now: Timestamp, at: Timestamp) -> Duration {
    Duration::from_secs(u64::try_from(at.as_second() - now.as_second()).unwrap_or(0))
}
