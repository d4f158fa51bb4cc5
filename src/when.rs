//! Times as a person reads them: in local time, with a relative form
//! ("3 min ago"), while JSON keeps UTC RFC 3339. "Now" can be fixed with
//! `TURNBACK_NOW` (an RFC 3339 time), so that what a snapshot test shows
//! does not depend on when it runs; `--since` and `--until` are read here.

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, Duration, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// The variable that fixes "now" (RFC 3339), for tests and demos.
pub const NOW_ENV: &str = "TURNBACK_NOW";

/// Now: `TURNBACK_NOW` when it is set to an RFC 3339 time, else the clock.
pub fn now() -> OffsetDateTime {
    std::env::var(NOW_ENV)
        .ok()
        .and_then(|v| OffsetDateTime::parse(v.trim(), &Rfc3339).ok())
        .unwrap_or_else(OffsetDateTime::now_utc)
}

/// The local offset at `t` (UTC where the platform cannot say, as in a
/// process with several threads).
pub fn local_offset(t: OffsetDateTime) -> UtcOffset {
    UtcOffset::local_offset_at(t).unwrap_or(UtcOffset::UTC)
}

/// `t` in local time, as `2026-12-02 14:03:09 +0100` (`UTC` for a zero
/// offset).
pub fn absolute(t: OffsetDateTime) -> String {
    absolute_in(t, local_offset(t))
}

/// [`absolute`] at a given offset.
pub fn absolute_in(t: OffsetDateTime, offset: UtcOffset) -> String {
    let t = t.to_offset(offset);
    let day = t
        .format(format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second]"
        ))
        .unwrap_or_default();
    if offset.is_utc() {
        format!("{day} UTC")
    } else {
        let zone = t
            .format(format_description!(
                "[offset_hour sign:mandatory][offset_minute]"
            ))
            .unwrap_or_default();
        format!("{day} {zone}")
    }
}

/// How long before `now` `t` was, in the largest unit that fits, rounded
/// down: `just now`, `42 s ago`, `3 min ago`, `5 h ago`, `1 day ago`,
/// `2 months ago`, `3 years ago`; `in 3 min` for a time after `now`.
pub fn ago(t: OffsetDateTime, now: OffsetDateTime) -> String {
    let d = now - t;
    let (future, d) = if d.is_negative() {
        (true, -d)
    } else {
        (false, d)
    };
    let s = d.whole_seconds();
    let amount = match s {
        0 => return "just now".into(),
        1..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h", s / 3600),
        _ => {
            let days = s / 86_400;
            let (n, unit) = match days {
                0..=29 => (days, "day"),
                30..=364 => (days / 30, "month"),
                _ => (days / 365, "year"),
            };
            format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
        }
    };
    if future {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// `t` as text output shows it: local time and how long ago.
pub fn when(t: OffsetDateTime) -> String {
    format!("{} ({})", absolute(t), ago(t, now()))
}

/// A time a person gives `--since` or `--until`: RFC 3339; a local date
/// (`2026-12-01`, its midnight) or date and time (`2026-12-01 14:30`,
/// `2026-12-01T14:30:00`); or a time before `now` (`90s`, `10min`, `3h`,
/// `2d`, `1w`, with an optional space and `ago`: `3 hours ago`).
pub fn parse_time(s: &str, now: OffsetDateTime) -> Result<OffsetDateTime, String> {
    let s = s.trim();
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Ok(t);
    }
    let local = |p: PrimitiveDateTime| {
        let guess = p.assume_utc();
        p.assume_offset(local_offset(guess))
    };
    if let Ok(d) = Date::parse(s, format_description!("[year]-[month]-[day]")) {
        return Ok(local(PrimitiveDateTime::new(d, Time::MIDNIGHT)));
    }
    for fmt in [
        format_description!("[year]-[month]-[day] [hour]:[minute]"),
        format_description!("[year]-[month]-[day]T[hour]:[minute]"),
        format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"),
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]"),
    ] {
        if let Ok(p) = PrimitiveDateTime::parse(s, fmt) {
            return Ok(local(p));
        }
    }
    let rel = s.strip_suffix("ago").unwrap_or(s).trim();
    let split = rel.find(|c: char| !c.is_ascii_digit()).unwrap_or(rel.len());
    let (n, unit) = rel.split_at(split);
    let unit = unit.trim();
    let n: i64 = n.parse().map_err(|_| bad_time(s))?;
    let one = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => Duration::SECOND,
        "m" | "min" | "mins" | "minute" | "minutes" => Duration::MINUTE,
        "h" | "hour" | "hours" => Duration::HOUR,
        "d" | "day" | "days" => Duration::DAY,
        "w" | "week" | "weeks" => Duration::WEEK,
        _ => return Err(bad_time(s)),
    };
    Ok(now - one * n as i32)
}

fn bad_time(s: &str) -> String {
    format!(
        "{s:?} is not a time: give 2026-12-01, \"2026-12-01 14:30\", an RFC 3339 time, or how long ago (30min, 3h, 2d, \"1 week ago\")"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn relative_times_round_down_to_their_largest_unit() {
        let now = datetime!(2026-12-02 12:00:00 UTC);
        let ago_by = |d: Duration| ago(now - d, now);
        assert_eq!(ago_by(Duration::ZERO), "just now");
        assert_eq!(ago_by(Duration::seconds(42)), "42 s ago");
        assert_eq!(ago_by(Duration::seconds(3 * 60 + 59)), "3 min ago");
        assert_eq!(ago_by(Duration::hours(5)), "5 h ago");
        assert_eq!(ago_by(Duration::hours(36)), "1 day ago");
        assert_eq!(ago_by(Duration::days(65)), "2 months ago");
        assert_eq!(ago_by(Duration::days(800)), "2 years ago");
        assert_eq!(ago(now + Duration::minutes(3), now), "in 3 min");
    }

    #[test]
    fn absolute_times_are_local_with_their_offset() {
        let t = datetime!(2026-12-02 12:00:00 UTC);
        assert_eq!(absolute_in(t, UtcOffset::UTC), "2026-12-02 12:00:00 UTC");
        let cet = UtcOffset::from_hms(1, 0, 0).unwrap();
        assert_eq!(absolute_in(t, cet), "2026-12-02 13:00:00 +0100");
        let west = UtcOffset::from_hms(-5, -30, 0).unwrap();
        assert_eq!(absolute_in(t, west), "2026-12-02 06:30:00 -0530");
    }

    #[test]
    fn since_and_until_read_dates_times_and_durations_ago() {
        let now = datetime!(2026-12-02 12:00:00 UTC);
        assert_eq!(parse_time("3h", now).unwrap(), now - Duration::hours(3));
        assert_eq!(
            parse_time("3 hours ago", now).unwrap(),
            now - Duration::hours(3)
        );
        assert_eq!(
            parse_time("10min", now).unwrap(),
            now - Duration::minutes(10)
        );
        assert_eq!(parse_time("2d", now).unwrap(), now - Duration::days(2));
        assert_eq!(
            parse_time("2026-12-01T10:00:00Z", now).unwrap(),
            datetime!(2026-12-01 10:00:00 UTC)
        );
        // Local dates: in this multi-threaded test process the offset is UTC
        // or the machine's; either way the day and time are the ones given.
        let d = parse_time("2026-12-01", now).unwrap();
        assert_eq!((d.day(), d.hour(), d.minute()), (1, 0, 0));
        let d = parse_time("2026-12-01 14:30", now).unwrap();
        assert_eq!((d.day(), d.hour(), d.minute()), (1, 14, 30));
        assert!(parse_time("yesterday-ish", now).is_err());
        assert!(parse_time("3 fortnights", now).is_err());
    }
}
