//! Fuzzes the agreement of the two trace readers: for any bytes, the trace reader (`show`,
//! replay, eval) and `report`'s scanner give the same verdict (well-formed or malformed) and
//! the same number of runs per outcome.

#![no_main]

use libfuzzer_sys::fuzz_target;
use looptrace::run::RunOutcome;
use looptrace::report::analyze_slice;
use looptrace::trace::{ReadOptions, TraceContents, TraceReader};

fuzz_target!(|data: &[u8]| {
    let by_reader = TraceContents::from_reader(TraceReader::new(data, "t", ReadOptions::default()))
        .map(|contents| {
            let mut counts = [0u64; 5];
            for run in &contents.runs {
                counts[run.outcome().index()] += 1;
            }
            counts
        })
        .map_err(drop);
    let by_report = analyze_slice(data, "t", false)
        .map(|report| RunOutcome::ALL.map(|ending| report.exit_reasons.get(ending)))
        .map_err(drop);
    assert_eq!(
        by_reader,
        by_report,
        "trace reader (left) and report (right) disagree on {:?}",
        String::from_utf8_lossy(data)
    );
});
