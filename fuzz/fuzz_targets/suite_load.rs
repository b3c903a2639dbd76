//! Fuzzes suite loading: any text gives a suite or a list of problems with their JSON paths,
//! never a panic, and the typed fast path (on one thread, and with the tasks cut into parts for
//! several) and the full checker give it the same result (the fast path must never accept what
//! the checker refuses). Replay sources resolve against
//! `sample_traces/`, so paths to real recordings (and paths that try to leave the folder) are
//! reachable.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use looptrace::eval::{check_suite_from_str, load_suite_from_str, load_suite_from_str_in_parts};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let base_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_traces");
    let loaded = load_suite_from_str(text, &base_dir);
    let checked = check_suite_from_str(text, &base_dir);
    assert_eq!(
        format!("{loaded:?}"),
        format!("{checked:?}"),
        "fast path and checker disagree on {text:?}"
    );
    for parts in [2, 3] {
        let split = load_suite_from_str_in_parts(text, &base_dir, parts);
        assert_eq!(
            format!("{split:?}"),
            format!("{checked:?}"),
            "loading in {parts} parts and checker disagree on {text:?}"
        );
    }
});
