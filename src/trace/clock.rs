//! Where a recorder's event times (`ts`) come from: the system clock in the product, a clock a
//! caller passes in where traces must be reproducible to the byte (tests, sample traces).

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of wall-clock times for trace events.
pub trait Clock: fmt::Debug + Send + Sync {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    fn now_unix_ms(&self) -> i64;
}

/// The machine's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix_ms(&self) -> i64 {
        crate::time::now_unix_ms()
    }
}

/// A clock that reads `start` first and `step` milliseconds later at each reading after that:
/// traces whose times are known in advance.
#[derive(Debug)]
pub struct SteppingClock {
    next: AtomicI64,
    step: i64,
}

impl SteppingClock {
    /// A clock whose first reading is `start_unix_ms`, each later one `step_ms` after the last.
    pub fn new(start_unix_ms: i64, step_ms: i64) -> Self {
        SteppingClock {
            next: AtomicI64::new(start_unix_ms),
            step: step_ms,
        }
    }
}

impl Clock for SteppingClock {
    fn now_unix_ms(&self) -> i64 {
        self.next.fetch_add(self.step, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stepping_clock_advances_by_its_step() {
        let clock = SteppingClock::new(1_000, 250);
        assert_eq!(
            [
                clock.now_unix_ms(),
                clock.now_unix_ms(),
                clock.now_unix_ms()
            ],
            [1_000, 1_250, 1_500]
        );
    }

    #[test]
    fn the_system_clock_is_after_2020() {
        assert!(SystemClock.now_unix_ms() > 1_577_836_800_000);
    }
}
