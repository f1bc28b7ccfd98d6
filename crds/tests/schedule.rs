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

/// A schedule drawn for the property tests, with an oracle of its own:
/// which wall-clock minutes it names, decided without the parser.
#[derive(Debug, Clone)]
struct Drawn {
    text: String,
    minute: (u32, u32),
    hours: Vec<u32>,
    day: Option<u32>,
    month: Option<u32>,
    weekday: Option<u32>,
}

impl Drawn {
    /// The schedule, or `None` when it names no day that exists (the
    /// parser must refuse exactly those: the 30th of February and such).
    fn parse(&self) -> Option<Schedule> {
        let longest = |m: u32| match m {
            2 => 29,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let impossible = self.weekday.is_none()
            && matches!((self.day, self.month), (Some(d), Some(m)) if d > longest(m));
        let parsed = Schedule::parse(&self.text);
        assert_eq!(parsed.is_err(), impossible, "{}: {parsed:?}", self.text);
        parsed.ok()
    }

    fn names(&self, c: jiff::civil::DateTime) -> bool {
        let (step, offset) = self.minute;
        let minute =
            (c.minute() as u32) >= offset && (c.minute() as u32 - offset).is_multiple_of(step);
        let hour = self.hours.is_empty() || self.hours.contains(&(c.hour() as u32));
        let month = self.month.is_none_or(|m| m == c.month() as u32);
        let dom = self.day.map(|d| d == c.day() as u32);
        let dow = self
            .weekday
            .map(|w| w == c.weekday().to_sunday_zero_offset() as u32);
        // Both day fields restricted: either one; otherwise the one that is.
        let day = match (dom, dow) {
            (Some(a), Some(b)) => a || b,
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => true,
        };
        c.second() == 0 && minute && hour && month && day
    }
}

fn drawn() -> impl Strategy<Value = Drawn> {
    let minute = prop_oneof![
        (0u32..60).prop_map(|m| (60, m)),
        prop::sample::select(vec![1u32, 5, 15, 30]).prop_flat_map(|k| (Just(k), 0..k)),
    ];
    // Hours around the usual change times (01:00 to 03:00) come up often.
    let hours = prop_oneof![
        Just(Vec::new()),
        prop::collection::btree_set(prop_oneof![0u32..5, 0u32..24], 1..3)
            .prop_map(|s| s.into_iter().collect::<Vec<_>>()),
    ];
    let day = prop::option::of(prop::sample::select(vec![1u32, 15, 28, 29, 30, 31]));
    let month = prop::option::weighted(0.2, 1u32..13);
    let weekday = prop::option::weighted(0.3, 0u32..7);
    (minute, hours, day, month, weekday).prop_map(|(minute, hours, day, month, weekday)| {
        let (step, offset) = minute;
        let m = match step {
            60 => offset.to_string(),
            1 => "*".to_owned(),
            _ => format!("{offset}/{step}"),
        };
        let h = if hours.is_empty() {
            "*".to_owned()
        } else {
            hours
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let f = |v: Option<u32>| v.map_or("*".to_owned(), |v| v.to_string());
        Drawn {
            text: format!("{m} {h} {} {} {}", f(day), f(month), f(weekday)),
            minute,
            hours,
            day,
            month,
            weekday,
        }
    })
}

/// Zones with and without daylight saving, half-hour and 45-minute
/// offsets, a half-hour change (Lord Howe) and a southern-hemisphere one.
const ZONES: [&str; 7] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kathmandu",
    "America/Santiago",
];

/// A start time, half of the time within two days before a change of the
/// zone's offset, so the changes are crossed often.
fn start_in(tz: &TimeZone, base: i64, before_change: Option<i64>) -> Timestamp {
    let base = Timestamp::from_second(base).expect("t");
    match (before_change, tz.following(base).next()) {
        (Some(back), Some(change)) => change.timestamp() - jiff::SignedDuration::from_secs(back),
        _ => base,
    }
}

/// Every minute in (from, to] the oracle says is a run: a wall-clock time
/// the schedule names at its first occurrence, or the moment the clock
/// jumps over one or more named times.
fn oracle_runs(d: &Drawn, tz: &TimeZone, from: Timestamp, to: Timestamp) -> Vec<Timestamp> {
    let minute = jiff::SignedDuration::from_secs(60);
    let second = jiff::SignedDuration::from_secs(1);
    let mut u = Timestamp::from_second(from.as_second().div_euclid(60) * 60 + 60).expect("u");
    let mut out = Vec::new();
    while u <= to {
        let civil = tz.to_datetime(u);
        let first = tz.to_ambiguous_timestamp(civil).earlier().ok() == Some(u);
        let mut run = d.names(civil) && first;
        // A jump forward ends at `u`: the skipped times run here.
        let skipped_from = tz.to_datetime(u - second) + jiff::Span::new().seconds(1);
        let mut c = skipped_from;
        while !run && c < civil {
            run = d.names(c);
            c += jiff::Span::new().minutes(1);
        }
        if run {
            out.push(u);
        }
        u += minute;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Over two days from a random start (often just before a daylight
    /// saving change), the times the schedule gives are exactly the
    /// oracle's: none missed, none twice, a repeated hour once, a skipped
    /// time at the jump; each time's wall clock is distinct.
    #[test]
    fn times_match_an_oracle_across_changes(
        d in drawn(),
        zone in prop::sample::select(ZONES.to_vec()),
        base in 1_704_067_200i64..2_019_686_400, // 2024 to 2033
        back in prop::option::of(0i64..172_800),
    ) {
        let Some(s) = d.parse() else { return Ok(()) };
        let tz = TimeZone::get(zone).expect("zone");
        let from = start_in(&tz, base, back);
        let to = from + jiff::SignedDuration::from_hours(48);
        let want = oracle_runs(&d, &tz, from, to);
        let (got, more) = crds::schedule::between(std::slice::from_ref(&s), from, to, &tz, 10_000);
        prop_assert!(!more);
        prop_assert_eq!(&got, &want, "{} in {} from {}", d.text, zone, from);
        let mut walls: Vec<_> = got.iter().map(|t| tz.to_datetime(*t)).collect();
        walls.dedup();
        prop_assert_eq!(walls.len(), got.len(), "a wall-clock time ran twice");
        // The next time after the window agrees with the oracle's next.
        if let Some(n) = s.next_after(to, &tz) {
            prop_assert!(n > to);
            let ahead = to + jiff::SignedDuration::from_hours(72);
            let before_n = n - jiff::SignedDuration::from_secs(1);
            let gap = oracle_runs(&d, &tz, to, before_n.min(ahead));
            prop_assert!(gap.is_empty(), "{} skipped {:?}", d.text, gap);
            if n <= ahead {
                prop_assert_eq!(oracle_runs(&d, &tz, before_n, n), vec![n]);
            }
        }
    }

    /// Several schedules together: each time once, in order, and exactly
    /// the union of each schedule's own times.
    #[test]
    fn several_schedules_are_the_union(
        a in drawn(),
        b in drawn(),
        zone in prop::sample::select(ZONES.to_vec()),
        base in 1_704_067_200i64..2_019_686_400,
        back in prop::option::of(0i64..172_800),
    ) {
        let (Some(sa), Some(sb)) = (a.parse(), b.parse()) else { return Ok(()) };
        let tz = TimeZone::get(zone).expect("zone");
        let from = start_in(&tz, base, back);
        let to = from + jiff::SignedDuration::from_hours(24);
        let (both, _) = crds::schedule::between(&[sa.clone(), sb.clone()], from, to, &tz, 10_000);
        let (only_a, _) = crds::schedule::between(&[sa], from, to, &tz, 10_000);
        let (only_b, _) = crds::schedule::between(&[sb], from, to, &tz, 10_000);
        let mut union: Vec<_> = only_a.into_iter().chain(only_b).collect();
        union.sort();
        union.dedup();
        prop_assert_eq!(both, union);
    }
}
