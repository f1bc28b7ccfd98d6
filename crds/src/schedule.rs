//! Cron schedules: what a `CronTask`'s `schedule` means, and the times it
//! names in a time zone. Shared by the operator (when to run) and the
//! plugin (to check a schedule before it is sent, and to show the next
//! runs).
//!
//! The format is the standard five fields, `minute hour day-of-month month
//! day-of-week`, with an optional sixth in front for seconds (`*/10 * * * *
//! *`), and the macros `@yearly` (`@annually`), `@monthly`, `@weekly`,
//! `@daily` (`@midnight`) and `@hourly`. A field is `*`, a value, a range
//! `a-b`, any of those with a step (`*/15`, `1-30/2`, `5/10` meaning
//! `5-max/10`), or a list of them (`1,15,30`). Months and weekdays take
//! their English three-letter names (`JAN`, `mon`); Sunday is 0 or 7. As
//! in Vixie cron, when both day-of-month and day-of-week are restricted
//! (neither starts with `*`), a day matches either of them.
//!
//! Times are wall-clock times in the schedule's zone. Across a daylight
//! saving change: a time the clock skips (02:30 when clocks go from 02:00
//! to 03:00) runs at the moment the clock jumps (03:00 local), once
//! however many of the skipped times the schedule names; a time the clock
//! shows twice (01:30 when clocks go back from 02:00 to 01:00) runs once,
//! at its first occurrence.

use std::fmt;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{AmbiguousOffset, TimeZone};

/// A parsed schedule: the set of each field's allowed values as bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    seconds: u64,
    minutes: u64,
    hours: u32,
    /// Bits 1..=31.
    days: u32,
    /// Bits 1..=12.
    months: u16,
    /// Bits 0..=6, Sunday 0.
    weekdays: u8,
    /// Day-of-month and day-of-week both restricted: a day matches either.
    either_day: bool,
}

/// Why a schedule could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleError(pub String);

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScheduleError {}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// How far ahead a schedule is searched for its next time: the calendar
/// repeats (weekdays and leap years together) every 400 years, but any
/// day-of-month, month and weekday combination that can occur does within
/// 28 years of most dates; 30 is used, and a schedule with no time in that
/// span from 2001 on is refused as never running.
const SEARCH_YEARS: i16 = 30;

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
    /// Name index 0 stands for this value (months: 1).
    names_from: u32,
}

const SECOND: Field = Field {
    name: "seconds",
    min: 0,
    max: 59,
    names: &[],
    names_from: 0,
};
const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
    names_from: 0,
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
    names_from: 0,
};
const DAY: Field = Field {
    name: "day of month",
    min: 1,
    max: 31,
    names: &[],
    names_from: 0,
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
    names: &MONTHS,
    names_from: 1,
};
const WEEKDAY: Field = Field {
    name: "day of week",
    min: 0,
    max: 7,
    names: &WEEKDAYS,
    names_from: 0,
};

impl Schedule {
    /// Reads `text` (see the module's documentation).
    pub fn parse(text: &str) -> Result<Self, ScheduleError> {
        let trimmed = text.trim();
        let upper = trimmed.to_ascii_uppercase();
        if upper.starts_with("TZ=") || upper.starts_with("CRON_TZ=") {
            return Err(ScheduleError(format!(
                "schedule {trimmed:?}: a TZ= or CRON_TZ= prefix is not read here; set \
                 spec.timeZone instead"
            )));
        }
        let expanded = match trimmed {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            m if m.starts_with('@') => {
                return Err(ScheduleError(format!(
                    "schedule {m:?}: unknown macro; use @yearly, @annually, @monthly, @weekly, \
                     @daily, @midnight or @hourly"
                )));
            }
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let (sec, rest) = match fields.len() {
            5 => ("0", &fields[..]),
            6 => (fields[0], &fields[1..]),
            n => {
                return Err(ScheduleError(format!(
                    "schedule {trimmed:?} has {n} fields: give 5 (minute hour day-of-month month \
                     day-of-week), 6 with seconds first, or a macro such as @daily"
                )));
            }
        };
        let at = |f: &Field, s: &str| {
            bits(f, s).map_err(|why| ScheduleError(format!("schedule {trimmed:?}: {why}")))
        };
        let weekdays = at(&WEEKDAY, rest[4])?;
        // Sunday is 0 and 7.
        let weekdays = ((weekdays & 0x7f) | (weekdays >> 7)) as u8;
        let schedule = Schedule {
            seconds: at(&SECOND, sec)?,
            minutes: at(&MINUTE, rest[0])?,
            hours: at(&HOUR, rest[1])? as u32,
            days: at(&DAY, rest[2])? as u32,
            months: at(&MONTH, rest[3])? as u16,
            weekdays,
            either_day: !rest[2].starts_with('*') && !rest[4].starts_with('*'),
        };
        let from = DateTime::constant(2001, 1, 1, 0, 0, 0, 0);
        if schedule.next_civil(from).is_none() {
            return Err(ScheduleError(format!(
                "schedule {trimmed:?} names no time that exists (e.g. the 30th of February)"
            )));
        }
        Ok(schedule)
    }

    /// True when the schedule runs on `date`.
    fn day_matches(&self, date: Date) -> bool {
        let day = self.days & (1 << date.day()) != 0;
        let weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.either_day {
            day || weekday
        } else {
            day && weekday
        }
    }

    /// The first wall-clock time after `after` (strictly) that the schedule
    /// names, searching [`SEARCH_YEARS`] ahead.
    pub fn next_civil(&self, after: DateTime) -> Option<DateTime> {
        let start = after.with().subsec_nanosecond(0).build().ok()?;
        let mut date = start.date();
        // The first candidate: one second after `after`, on its day.
        let mut from = Some(start.time()).and_then(next_second);
        let last_year = date.year().saturating_add(SEARCH_YEARS);
        while date.year() <= last_year {
            if self.months & (1 << date.month()) == 0 {
                date = date
                    .first_of_month()
                    .checked_add(jiff::Span::new().months(1))
                    .ok()?;
                from = Some(Time::midnight());
                continue;
            }
            if self.day_matches(date)
                && let Some(t) = from.and_then(|t| self.time_from(t))
            {
                return Some(date.to_datetime(t));
            }
            date = date.tomorrow().ok()?;
            from = Some(Time::midnight());
        }
        None
    }

    /// The first time of day at or after `t` the schedule names.
    fn time_from(&self, t: Time) -> Option<Time> {
        let (h0, m0, s0) = (t.hour() as u32, t.minute() as u32, t.second() as u32);
        for h in h0..24 {
            if self.hours & (1 << h) == 0 {
                continue;
            }
            let m_from = if h == h0 { m0 } else { 0 };
            for m in m_from..60 {
                if self.minutes & (1 << m) == 0 {
                    continue;
                }
                let s_from = if h == h0 && m == m0 { s0 } else { 0 };
                if let Some(s) = (s_from..60).find(|s| self.seconds & (1 << s) != 0) {
                    return Time::new(h as i8, m as i8, s as i8, 0).ok();
                }
            }
        }
        None
    }

    /// The first scheduled time after `t` (strictly), as an instant in
    /// `tz` (see the module's documentation for daylight saving changes).
    pub fn next_after(&self, t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let mut civil = tz.to_datetime(t);
        // Each step moves to a later wall-clock time, and instants follow
        // wall-clock order (a skipped time maps to the jump, a repeated one
        // to its first occurrence); only a repeated hour's times can lie
        // at or before `t` and are passed over.
        loop {
            civil = self.next_civil(civil)?;
            let at = instant(civil, tz)?;
            if at > t {
                return Some(at);
            }
        }
    }
}

/// The first time after `t` (strictly) any of `schedules` names, in `tz`:
/// a CronTask's `schedule` and `schedules` together, one time once.
pub fn next_of(schedules: &[Schedule], t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
    schedules.iter().filter_map(|s| s.next_after(t, tz)).min()
}

/// The times any of `schedules` names after `from` and at or before `to`,
/// oldest first, at most `limit` of them; the bool is true when there were
/// more.
pub fn between(
    schedules: &[Schedule],
    from: Timestamp,
    to: Timestamp,
    tz: &TimeZone,
    limit: usize,
) -> (Vec<Timestamp>, bool) {
    let mut out = Vec::new();
    let mut t = from;
    while let Some(next) = next_of(schedules, t, tz) {
        if next > to {
            return (out, false);
        }
        if out.len() == limit {
            return (out, true);
        }
        out.push(next);
        t = next;
    }
    (out, false)
}

/// One second after `t`, or `None` at 23:59:59.
fn next_second(t: Time) -> Option<Time> {
    t.checked_add(jiff::Span::new().seconds(1))
        .ok()
        .filter(|n| *n > t)
}

/// The instant wall-clock time `dt` names in `tz`: a time the clock skips
/// is the moment it jumps; a time it shows twice, the first.
pub fn instant(dt: DateTime, tz: &TimeZone) -> Option<Timestamp> {
    let ambiguous = tz.to_ambiguous_timestamp(dt);
    match ambiguous.offset() {
        AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(dt).ok(),
        AmbiguousOffset::Fold { before, after } => {
            let a = before.to_timestamp(dt).ok()?;
            let b = after.to_timestamp(dt).ok()?;
            Some(a.min(b))
        }
        AmbiguousOffset::Gap { before, .. } => {
            // Read with the offset from before the jump, `dt` lies after
            // it; the jump is the transition just before that.
            let past = before.to_timestamp(dt).ok()?;
            let probe = past.checked_add(jiff::SignedDuration::from_nanos(1)).ok()?;
            tz.preceding(probe).next().map(|tr| tr.timestamp())
        }
    }
}

/// The values field `f` allows in `text`, as bits.
fn bits(f: &Field, text: &str) -> Result<u64, String> {
    let mut out = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s.parse().map_err(|_| {
                    format!("{} field {text:?}: step {s:?} is not a number", f.name)
                })?;
                if step == 0 || step > f.max {
                    return Err(format!(
                        "{} field {text:?}: step {step} must be between 1 and {}",
                        f.name, f.max
                    ));
                }
                (r, Some(step))
            }
            None => (part, None),
        };
        let (lo, hi) = if range == "*" {
            (f.min, f.max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(f, a, text)?, value(f, b, text)?)
        } else {
            let v = value(f, range, text)?;
            (v, if step.is_some() { f.max } else { v })
        };
        if lo > hi {
            return Err(format!(
                "{} field {text:?}: range {range:?} runs backwards",
                f.name
            ));
        }
        let step = step.unwrap_or(1) as usize;
        for v in (lo..=hi).step_by(step) {
            out |= 1 << v;
        }
    }
    Ok(out)
}

/// One value of field `f`: a number in range, or a name.
fn value(f: &Field, s: &str, text: &str) -> Result<u32, String> {
    if let Some(i) = f.names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
        return Ok(i as u32 + f.names_from);
    }
    let v: u32 = s.parse().map_err(|_| {
        format!(
            "{} field {text:?}: {s:?} is not a number{}",
            f.name,
            if f.names.is_empty() { "" } else { " or a name" }
        )
    })?;
    if v < f.min || v > f.max {
        return Err(format!(
            "{} field {text:?}: {v} is outside {}-{}",
            f.name, f.min, f.max
        ));
    }
    Ok(v)
}
