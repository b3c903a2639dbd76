//! Fuzzes trace reading: arbitrary bytes through `parse_line` and through the streaming
//! `TraceReader` (strict and lenient, with a small line limit so the too-long path is reached)
//! give events or line-numbered errors, never a panic or an unbounded allocation.

#![no_main]

use libfuzzer_sys::fuzz_target;
use looptrace::trace::{ReadOptions, TraceContents, TraceReader, parse_line};

fuzz_target!(|data: &[u8]| {
    for line in data.split(|b| *b == b'\n') {
        if let Ok(Some(event)) = parse_line(line) {
            let written = serde_json::to_string(&event).expect("a parsed event serializes");
            let again = parse_line(written.as_bytes())
                .expect("a written event parses")
                .expect("a written event is not blank");
            assert_eq!(event.run_id, again.run_id);
            assert_eq!(event.step, again.step);
            assert_eq!(event.event_type(), again.event_type());
        }
    }
    for lenient in [false, true] {
        let options = ReadOptions {
            lenient,
            max_line_bytes: 4096,
        };
        let mut reader = TraceReader::new(data, "fuzz.jsonl", options);
        let mut last_line = 0;
        for item in reader.by_ref() {
            match item {
                Ok((line, _event)) => {
                    assert!(line > last_line, "line numbers increase");
                    last_line = line;
                }
                Err(err) => {
                    assert!(!lenient, "lenient reading skips bad lines: {err}");
                    assert!(err.to_string().starts_with("fuzz.jsonl:"));
                }
            }
        }
        let stats = reader.into_stats();
        assert!(stats.skipped.len() as u64 <= stats.skipped_count);
        let _ = stats.warnings("fuzz.jsonl");
        if let Ok(contents) =
            TraceContents::from_reader(TraceReader::new(data, "fuzz.jsonl", options))
        {
            let grouped: usize = contents.runs.iter().map(|run| run.events.len()).sum();
            assert_eq!(
                grouped as u64, contents.stats.events,
                "every event is in one run"
            );
            for run in &contents.runs {
                assert!(!run.events.is_empty());
                let _ = run.outcome().as_str();
            }
        }
    }
});
