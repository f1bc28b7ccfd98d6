//! The schedule arithmetic: fields, macros, month ends, leap days, and
//! daylight saving changes (a skipped time runs at the jump, a repeated
//! one once), with times handed in (no clock).

use crds::schedule::Schedule;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use proptest::prelude::*;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

fn next_n(schedule: &str, from: &str, zone: &str, n: usize) -> Vec<String> {
    let s = Schedule::parse(schedule).expect("schedule");
    let tz = TimeZone::get(zone).expect("zone");
    let mut t = ts(from);
    let mut out = Vec::new();
    for _ in 0..n {
        t = s.next_after(t, &tz).expect("a next time");
        out.push(
            t.to_zoned(tz.clone())
                .strftime("%Y-%m-%dT%H:%M:%S%:z")
                .to_string(),
        );
    }
    out
}

#[test]
fn fields_steps_lists_and_names() {
    assert_eq!(
        next_n("*/15 * * * *", "2026-01-01T00:07:00Z", "UTC", 3),
        [
            "2026-01-01T00:15:00+00:00",
            "2026-01-01T00:30:00+00:00",
            "2026-01-01T00:45:00+00:00"
        ]
    );
    assert_eq!(
        next_n("0 9 * * MON-fri", "2026-12-04T10:00:00Z", "UTC", 2),
        ["2026-12-07T09:00:00+00:00", "2026-12-08T09:00:00+00:00"]
    );
    assert_eq!(
        next_n("30 1,13 * JAN,jul *", "2026-06-30T23:00:00Z", "UTC", 2),
        ["2026-07-01T01:30:00+00:00", "2026-07-01T13:30:00+00:00"]
    );
    // Sunday is 0 and 7.
    assert_eq!(
        next_n("0 0 * * 7", "2026-12-04T00:00:00Z", "UTC", 1),
        next_n("0 0 * * 0", "2026-12-04T00:00:00Z", "UTC", 1)
    );
    // `5/20`: from 5 to the end, every 20.
    assert_eq!(
        next_n("5/20 * * * *", "2026-01-01T00:30:00Z", "UTC", 3),
        [
            "2026-01-01T00:45:00+00:00",
            "2026-01-01T01:05:00+00:00",
            "2026-01-01T01:25:00+00:00"
        ]
    );
}

#[test]
fn seconds_field_and_macros() {
    assert_eq!(
        next_n("*/10 * * * * *", "2026-01-01T00:00:05Z", "UTC", 2),
        ["2026-01-01T00:00:10+00:00", "2026-01-01T00:00:20+00:00"]
    );
    for (m, same) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ] {
        assert_eq!(Schedule::parse(m), Schedule::parse(same), "{m}");
    }
}

#[test]
fn day_of_month_or_day_of_week_when_both_are_given() {
    // The 13th, or any Friday (Vixie cron).
    assert_eq!(
        next_n("0 0 13 * 5", "2026-02-01T00:00:00Z", "UTC", 3),
        [
            "2026-02-06T00:00:00+00:00",
            "2026-02-13T00:00:00+00:00",
            "2026-02-20T00:00:00+00:00"
        ]
    );
    // With a star in one of them, both must hold: Fridays the 13th only.
    assert_eq!(
        next_n("0 0 13 * *", "2026-02-01T00:00:00Z", "UTC", 1),
        ["2026-02-13T00:00:00+00:00"]
    );
}

#[test]
fn month_ends_and_leap_days() {
    // The 31st skips the months without one.
    assert_eq!(
        next_n("0 12 31 * *", "2026-03-31T13:00:00Z", "UTC", 2),
        ["2026-05-31T12:00:00+00:00", "2026-07-31T12:00:00+00:00"]
    );
    // The 29th of February: leap years only.
    assert_eq!(
        next_n("0 0 29 2 *", "2026-01-01T00:00:00Z", "UTC", 2),
        ["2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00"]
    );
}

#[test]
fn a_skipped_time_runs_at_the_jump_once() {
    // Europe/Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST.
    assert_eq!(
        next_n("30 2 * * *", "2026-03-28T12:00:00Z", "Europe/Berlin", 3),
        [
            "2026-03-29T03:00:00+02:00",
            "2026-03-30T02:30:00+02:00",
            "2026-03-31T02:30:00+02:00"
        ]
    );
    // Every 15 minutes: 02:00..02:45 do not exist; one run at the jump.
    assert_eq!(
        next_n("*/15 * * * *", "2026-03-29T00:40:00Z", "Europe/Berlin", 3),
        [
            "2026-03-29T01:45:00+01:00",
            "2026-03-29T03:00:00+02:00",
            "2026-03-29T03:15:00+02:00"
        ]
    );
}

#[test]
fn a_repeated_hour_runs_once() {
    // Europe/Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET.
    assert_eq!(
        next_n("30 2 * * *", "2026-10-24T12:00:00Z", "Europe/Berlin", 2),
        ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
    );
    assert_eq!(
        next_n("0,30 * * * *", "2026-10-24T23:10:00Z", "Europe/Berlin", 4),
        [
            "2026-10-25T01:30:00+02:00",
            "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:30:00+02:00",
            "2026-10-25T03:00:00+01:00"
        ]
    );
    // Asked from inside the repeated hour, the next time is after it.
    assert_eq!(
        next_n("30 2 * * *", "2026-10-25T01:10:00Z", "Europe/Berlin", 1),
        ["2026-10-26T02:30:00+01:00"]
    );
}

#[test]
fn bad_schedules_say_why() {
    for (text, says) in [
        ("* * * *", "has 4 fields"),
        ("60 * * * *", "60 is outside 0-59"),
        ("* 24 * * *", "24 is outside 0-23"),
        ("* * 0 * *", "0 is outside 1-31"),
        ("* * * 13 *", "13 is outside 1-12"),
        ("* * * * 8", "8 is outside 0-7"),
        ("*/0 * * * *", "step 0"),
        ("5-1 * * * *", "runs backwards"),
        ("* * * FOO *", "is not a number or a name"),
        ("0 0 30 2 *", "names no time that exists"),
        ("TZ=Europe/Berlin 0 0 * * *", "set spec.timeZone"),
        ("CRON_TZ=UTC 0 0 * * *", "set spec.timeZone"),
        ("@reboot", "unknown macro"),
    ] {
        let e = Schedule::parse(text).expect_err(text).to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
}

proptest! {
    /// Every next time is later, matches the schedule's minute and hour in
    /// UTC, and no time of the schedule lies strictly between.
    #[test]
    fn next_is_the_first_match(m in 0u8..60, h in 0u8..24, start in 0i64..4_000_000_000) {
        let s = Schedule::parse(&format!("{m} {h} * * *")).expect("schedule");
        let t = Timestamp::from_second(start).expect("t");
        let n = s.next_after(t, &TimeZone::UTC).expect("next");
        prop_assert!(n > t);
        prop_assert!(n.duration_since(t).as_secs() <= 86_400);
        let z = n.to_zoned(TimeZone::UTC);
        prop_assert_eq!((z.minute() as u8, z.hour() as u8, z.second()), (m, h, 0));
    }

    /// In a zone with daylight saving, times strictly increase and are at
    /// most a day and an hour apart for a daily schedule.
    #[test]
    fn daily_in_berlin_runs_every_day(m in 0u8..60, h in 0u8..24, start in 1_700_000_000i64..1_900_000_000) {
        let s = Schedule::parse(&format!("{m} {h} * * *")).expect("schedule");
        let tz = TimeZone::get("Europe/Berlin").expect("zone");
        let mut t = Timestamp::from_second(start).expect("t");
        for _ in 0..5 {
            let n = s.next_after(t, &tz).expect("next");
            prop_assert!(n > t);
            prop_assert!(n.duration_since(t).as_secs() <= 90_000);
            t = n;
        }
    }
}
