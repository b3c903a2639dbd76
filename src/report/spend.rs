//! What a run recorded of its tokens, cost and time, folded from its events' figures.

use super::model::SpendStats;
use crate::trace::EventSpend;

/// What a run (or a part of one) recorded of its tokens, cost and time, kept small since runs
/// left open between chunks keep it. Figures of the ending (`final_*`) replace the sums over the
/// run's other events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spend {
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
    duration_ms: f64,
    first_ts: i64,
    last_ts: i64,
    flags: u8,
}

const HAS_TOKENS: u8 = 1;
const HAS_COST: u8 = 2;
const HAS_DURATION: u8 = 4;
const FINAL_TOKENS: u8 = 8;
const FINAL_COST: u8 = 16;
const FINAL_DURATION: u8 = 32;

impl Default for Spend {
    fn default() -> Self {
        Spend {
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            duration_ms: 0.0,
            first_ts: i64::MAX,
            last_ts: i64::MIN,
            flags: 0,
        }
    }
}

impl Spend {
    /// Adds one event's figures; those of the run's ending replace the sums so far.
    pub(super) fn add(&mut self, event: &EventSpend, ending: bool) {
        if let Some(ts) = event.ts_ms {
            self.first_ts = self.first_ts.min(ts);
            self.last_ts = self.last_ts.max(ts);
        }
        let set = |flags: &mut u8, has: u8, fin: u8| *flags |= has | if ending { fin } else { 0 };
        if let Some(tokens) = event.tokens {
            if ending {
                (self.input_tokens, self.output_tokens) = (0, 0);
            }
            // Token counts from a trace may be anything up to 2^64 - 1: sums stop there.
            self.input_tokens = self.input_tokens.saturating_add(tokens.input);
            self.output_tokens = self.output_tokens.saturating_add(tokens.output);
            set(&mut self.flags, HAS_TOKENS, FINAL_TOKENS);
        }
        if let Some(cost) = event.cost_usd {
            self.cost_usd = if ending { cost } else { self.cost_usd + cost };
            set(&mut self.flags, HAS_COST, FINAL_COST);
        }
        if let Some(duration) = event.duration_ms {
            self.duration_ms = if ending {
                duration
            } else {
                self.duration_ms + duration
            };
            set(&mut self.flags, HAS_DURATION, FINAL_DURATION);
        }
    }

    /// Adds the figures of the run's earlier part, except where this part holds the ending's.
    pub(super) fn absorb_earlier(&mut self, earlier: &Spend) {
        self.first_ts = self.first_ts.min(earlier.first_ts);
        self.last_ts = self.last_ts.max(earlier.last_ts);
        if self.flags & FINAL_TOKENS == 0 {
            self.input_tokens = self.input_tokens.saturating_add(earlier.input_tokens);
            self.output_tokens = self.output_tokens.saturating_add(earlier.output_tokens);
            self.flags |= earlier.flags & HAS_TOKENS;
        }
        if self.flags & FINAL_COST == 0 {
            self.cost_usd += earlier.cost_usd;
            self.flags |= earlier.flags & HAS_COST;
        }
        if self.flags & FINAL_DURATION == 0 {
            self.duration_ms += earlier.duration_ms;
            self.flags |= earlier.flags & HAS_DURATION;
        }
    }

    /// Counts the run in its ending's totals: the ending's duration, else the span of its
    /// events' times, else the sum of its calls' durations. Returns that duration.
    pub(super) fn fold_into(&self, stats: &mut SpendStats) -> Option<f64> {
        if self.flags & HAS_TOKENS != 0 {
            stats.runs_with_tokens += 1;
            stats.input_tokens = stats.input_tokens.saturating_add(self.input_tokens);
            stats.output_tokens = stats.output_tokens.saturating_add(self.output_tokens);
        }
        if self.flags & HAS_COST != 0 {
            stats.runs_with_cost += 1;
            stats.cost_usd += self.cost_usd;
        }
        let span = (self.last_ts > self.first_ts).then(|| (self.last_ts - self.first_ts) as f64);
        let duration = if self.flags & FINAL_DURATION != 0 {
            Some(self.duration_ms)
        } else {
            span.or((self.flags & HAS_DURATION != 0).then_some(self.duration_ms))
        };
        if let Some(duration) = duration {
            stats.runs_with_duration += 1;
            stats.duration_ms += duration;
        }
        duration
    }
}
