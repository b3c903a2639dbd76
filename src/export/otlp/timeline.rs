//! Span times: from the events' `ts` and `duration_ms` where a trace records them, else a
//! synthetic timeline, laid out so that a run's child spans are monotonic, never overlap and stay
//! inside the root span whatever the recorded times say (`docs/otel.md` describes the layout).

/// Where a run with no recorded time starts: 2024-01-01T00:00:00Z, in nanoseconds.
pub const SYNTHETIC_START_NS: u64 = 1_704_067_200_000_000_000;
/// How long a model call, tool call or gate check lasts when its duration is not recorded: 1 ms.
pub const DEFAULT_DURATION_NS: u64 = 1_000_000;
/// The gap between a span and the next, and between the root's edges and its children: 1 µs.
pub const GAP_NS: u64 = 1_000;

/// Milliseconds (as traces record them) to nanoseconds; negative or non-finite values are absent.
pub fn ms_to_ns(ms: Option<f64>) -> Option<u64> {
    let ms = ms.filter(|ms| ms.is_finite() && *ms >= 0.0)?;
    let ns = (ms * 1_000_000.0).round();
    (ns < u64::MAX as f64).then_some(ns as u64)
}

/// Parses an RFC 3339 time (`2026-12-03T11:40:00.123Z`, `...+01:00`) to nanoseconds since the
/// Unix epoch; times before 1970 or malformed ones are absent.
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    };
    let separators = b[4] == b'-'
        && b[7] == b'-'
        && matches!(b[10], b'T' | b't' | b' ')
        && b[13] == b':'
        && b[16] == b':';
    if !separators {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // A leap second is read as the last second of its minute.
    let second = second.min(59);
    let mut at = 19;
    let mut nanos: i64 = 0;
    if b[at] == b'.' {
        at += 1;
        let start = at;
        while at < b.len() && b[at].is_ascii_digit() {
            if at - start < 9 {
                nanos = nanos * 10 + i64::from(b[at] - b'0');
            }
            at += 1;
        }
        if at == start {
            return None;
        }
        for _ in (at - start)..9 {
            nanos *= 10;
        }
    }
    let offset_seconds = match b.get(at..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [*h1, *h2, *m1, *m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let hours = i64::from((h1 - b'0') * 10 + (h2 - b'0'));
            let minutes = i64::from((m1 - b'0') * 10 + (m2 - b'0'));
            let magnitude = hours * 3600 + minutes * 60;
            if *sign == b'+' { magnitude } else { -magnitude }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    let total = i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
    u64::try_from(total).ok()
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

/// Lays out the children of one root span, one after the other.
#[derive(Debug, Clone, Copy)]
pub struct Timeline {
    cursor: u64,
}

impl Timeline {
    /// Children of a root span that starts at `start`.
    pub fn new(start: u64) -> Self {
        Timeline {
            cursor: start.saturating_add(GAP_NS),
        }
    }

    /// Places the next child: ending at `end` when recorded and lasting `duration` (1 ms when not
    /// recorded), but never starting before the previous child ended. Returns `(start, end)`.
    pub fn place(&mut self, end: Option<u64>, duration: Option<u64>) -> (u64, u64) {
        let duration = duration.unwrap_or(DEFAULT_DURATION_NS);
        let start = end
            .map_or(self.cursor, |end| end.saturating_sub(duration))
            .max(self.cursor);
        let end = start.saturating_add(duration);
        self.cursor = end.saturating_add(GAP_NS);
        (start, end)
    }

    /// Where the root span ends: after its last child, or at `recorded` if that is later.
    pub fn root_end(&self, recorded: Option<u64>) -> u64 {
        recorded.map_or(self.cursor, |at| at.max(self.cursor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_as_unix_nanoseconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2024-01-01T00:00:00Z"),
            Some(SYNTHETIC_START_NS)
        );
        assert_eq!(
            parse_rfc3339("2024-01-01T01:00:00.5+01:00"),
            Some(SYNTHETIC_START_NS + 500_000_000)
        );
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00.000000001Z"),
            Some(SYNTHETIC_START_NS + 59 * 86_400 * 1_000_000_000 + 1)
        );
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), None);
        assert_eq!(parse_rfc3339("2024-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("2024-01-01T00:00:00"), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn children_are_monotonic_disjoint_and_inside_the_root() {
        let start = 1_000_000_000;
        let mut timeline = Timeline::new(start);
        // A recorded end before the previous child's end is moved after it.
        let a = timeline.place(None, Some(5_000));
        let b = timeline.place(Some(start), Some(2_000));
        let c = timeline.place(Some(start + 10_000_000), None);
        assert!(a.0 > start && a.0 <= a.1);
        assert!(b.0 > a.1 && b.0 <= b.1);
        assert_eq!(c, (start + 9_000_000, start + 10_000_000));
        let end = timeline.root_end(Some(start));
        assert!(end > c.1);
    }

    #[test]
    fn durations_in_ms_become_nanoseconds() {
        assert_eq!(ms_to_ns(Some(1.5)), Some(1_500_000));
        assert_eq!(ms_to_ns(Some(-1.0)), None);
        assert_eq!(ms_to_ns(Some(f64::NAN)), None);
        assert_eq!(ms_to_ns(None), None);
    }
}
