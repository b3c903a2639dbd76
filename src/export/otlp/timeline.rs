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
    u64::try_from(crate::time::unix_ns_from_rfc3339(text.as_bytes())?).ok()
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
