//! Event times as traces write them: UTC, millisecond precision, `YYYY-MM-DDTHH:MM:SS.mmmZ`. Every
//! event looptrace writes itself carries one (`ts`), and importers convert native times to the
//! same form, so traces from any source sort and subtract alike.

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
    fn now_has_the_trace_form() {
        let ts = now_ts();
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{ts}");
    }
}
