use k8s_openapi::jiff::Timestamp;

use crate::outputs::grant::{download, until, upload_expiry};

const DAY: i64 = 24 * 3600;

fn ts(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

#[test]
fn upload_grants_last_the_deadline_and_an_hour_at_most_seven_days() {
    let now = ts(1_000_000);
    for (timeout, want) in [
        (Some(60), 60 + 3600),
        (Some(0), 3600),
        (Some(6 * DAY), 6 * DAY + 3600),
        (Some(7 * DAY), 7 * DAY),
        (Some(30 * DAY), 7 * DAY),
        (None, 7 * DAY),
        // A negative timeout (never valid) is no timeout.
        (Some(-5), 7 * DAY),
    ] {
        assert_eq!(
            upload_expiry(now, timeout).as_second() - now.as_second(),
            want,
            "{timeout:?}"
        );
    }
}

/// (seconds since the finish, signed, next, due), the signing time and
/// the next look relative to the finish.
#[test]
fn download_grants_renew_every_six_days_signed_the_same_way() {
    let finished = ts(10 * DAY);
    for (since, signed, next, due) in [
        (0, 0, 6 * DAY, true),
        (3600, 0, 6 * DAY, true),
        (DAY, 0, 6 * DAY, false),
        (6 * DAY - 1, 0, 6 * DAY, false),
        (6 * DAY, 6 * DAY, 12 * DAY, true),
        (6 * DAY + DAY - 1, 6 * DAY, 12 * DAY, true),
        (6 * DAY + DAY, 6 * DAY, 12 * DAY, false),
        (12 * DAY + 3600, 12 * DAY, 18 * DAY, true),
        (13 * DAY, 12 * DAY, 18 * DAY, false),
    ] {
        let d = download(finished, ts(10 * DAY + since));
        let rel = |t: Timestamp| t.as_second() - finished.as_second();
        assert_eq!(
            (rel(d.signed), rel(d.next), d.due),
            (signed, next, due),
            "{since}"
        );
        assert_eq!(rel(d.expires), signed + 7 * DAY, "{since}");
        // Two looks in one period sign alike: the same URLs.
        assert_eq!(download(finished, ts(10 * DAY + signed)).signed, d.signed);
    }
    // A finish the clock has not reached yet (skew) signs at now, never later.
    let early = download(ts(100), ts(50));
    assert_eq!(early.signed, ts(50));
    assert_eq!(until(ts(50), early.next).as_secs(), 6 * 86_400);
    assert_eq!(until(ts(60), ts(50)).as_secs(), 0);
}
