//! Event times as traces write them: UTC, millisecond precision, `YYYY-MM-DDTHH:MM:SS.mmmZ`. Every
//! event looptrace writes itself carries one (`ts`), and importers convert native times to the
//! same form, so traces from any source sort and subtract alike. Reading goes through here too:
//! [`unix_ns_from_rfc3339`] reads any RFC 3339 time, whatever its offset or precision.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as a trace's `ts`.
pub fn now_ts() -> String {
    ts_from_unix_ms(now_unix_ms())
}

/// The current time in milliseconds since 1970-01-01T00:00:00Z (0 before it).
pub fn now_unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// Milliseconds since 1970-01-01T00:00:00Z as a trace's `ts` (`1970-01-01T00:00:00.000Z` for 0).
pub fn ts_from_unix_ms(millis: i64) -> String {
    let seconds = millis.div_euclid(1_000);
    let millis = millis.rem_euclid(1_000);
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
}

/// Nanoseconds since 1970-01-01T00:00:00Z of an RFC 3339 time (`2026-12-03T11:40:00.123Z`,
/// `...+01:00`, a `t` or a space for the `T`); `None` for anything else. Digits past nanoseconds
/// are cut, and a leap second (`:60`) reads as the last second of its minute.
pub fn unix_ns_from_rfc3339(text: &[u8]) -> Option<i128> {
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        text.get(range)?.iter().try_fold(0i64, |value, &byte| {
            byte.is_ascii_digit()
                .then(|| value * 10 + i64::from(byte - b'0'))
        })
    };
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators
        .iter()
        .any(|&(at, byte)| text.get(at) != Some(&byte))
        || !matches!(text.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let second = second.min(59);
    let mut at = 19;
    let mut nanos = 0i64;
    if text.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while text.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return None;
        }
        let kept = (at - start).min(9);
        nanos = digits(start..start + kept)? * 10i64.pow(9 - kept as u32);
    }
    let offset_minutes = match text.get(at..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let minutes = digits(at + 1..at + 3)? * 60 + digits(at + 4..at + 6)?;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(i128::from(seconds) * 1_000_000_000 + i128::from(nanos))
}

/// Milliseconds since 1970-01-01T00:00:00Z of an RFC 3339 time (see [`unix_ns_from_rfc3339`]);
/// digits past milliseconds are cut.
pub fn unix_ms_from_rfc3339(text: &[u8]) -> Option<i64> {
    i64::try_from(unix_ns_from_rfc3339(text)?.div_euclid(1_000_000)).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_unix_milliseconds_as_utc_with_three_decimals() {
        assert_eq!(ts_from_unix_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            ts_from_unix_ms(1_704_067_200_000),
            "2024-01-01T00:00:00.000Z"
        );
        // 2024-02-29 (a leap day) 23:59:59.999
        assert_eq!(
            ts_from_unix_ms(1_709_251_199_999),
            "2024-02-29T23:59:59.999Z"
        );
        assert_eq!(ts_from_unix_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(ts_from_unix_ms(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn reads_rfc3339_times_at_any_offset_and_precision() {
        assert_eq!(unix_ms_from_rfc3339(b"1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_ms_from_rfc3339(b"2000-03-01T00:00:01.5Z"),
            Some(951_868_801_500)
        );
        assert_eq!(
            unix_ms_from_rfc3339(b"2025-06-01T14:00:00.123456+02:00"),
            unix_ms_from_rfc3339(b"2025-06-01T12:00:00.123Z")
        );
        assert_eq!(
            unix_ns_from_rfc3339(b"2024-02-29T00:00:00.000000001Z"),
            Some(1_709_164_800_000_000_001)
        );
        assert_eq!(unix_ms_from_rfc3339(b"1969-12-31T23:59:59.9Z"), Some(-100));
        assert_eq!(
            unix_ms_from_rfc3339(b"2016-12-31T23:59:60Z"),
            unix_ms_from_rfc3339(b"2016-12-31T23:59:59Z")
        );
        for bad in [
            &b"2025-06-01"[..],
            b"2025-13-01T00:00:00Z",
            b"2025-06-01T00:00:61Z",
            b"2025-06-01T00:00:00",
            b"2025-06-01T00:00:00.Z",
            b"2025-06-01T00:00:00+0100",
            b"2025-06-01T00:00:00+x1:00",
            b"x",
        ] {
            assert_eq!(
                unix_ns_from_rfc3339(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn the_written_form_reads_back() {
        for millis in [0, -1, 1_709_251_199_999, 951_782_400_000] {
            assert_eq!(
                unix_ms_from_rfc3339(ts_from_unix_ms(millis).as_bytes()),
                Some(millis)
            );
        }
    }

    #[test]
    fn now_has_the_trace_form() {
        let ts = now_ts();
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{ts}");
    }
}
