//! Fuzzes the agreement of the two trace readers: for any bytes, the trace reader (`show`,
//! replay, eval) and `report`'s scanner give the same verdict (well-formed or malformed) and
//! the same number of runs per outcome.

#![no_main]

use libfuzzer_sys::fuzz_target;
use looptrace::report::{Ending, analyze_slice};
use looptrace::trace::{ReadOptions, RunOutcome, TraceContents, TraceReader};

fuzz_target!(|data: &[u8]| {
    let by_reader = TraceContents::from_reader(TraceReader::new(data, "t", ReadOptions::default()))
        .map(|contents| {
            let mut counts = [0u64; 5];
            for run in &contents.runs {
                let ending = match run.outcome() {
                    RunOutcome::Ended(reason) => Ending::from_exit_reason(reason.as_str()),
                    RunOutcome::Incomplete => Some(Ending::Incomplete),
                };
                counts[ending.expect("a known ending").index()] += 1;
            }
            counts
        })
        .map_err(drop);
    let by_report = analyze_slice(data, "t", false)
        .map(|report| Ending::ALL.map(|ending| report.exit_reasons.get(ending)))
        .map_err(drop);
    assert_eq!(
        by_reader,
        by_report,
        "trace reader (left) and report (right) disagree on {:?}",
        String::from_utf8_lossy(data)
    );
});
