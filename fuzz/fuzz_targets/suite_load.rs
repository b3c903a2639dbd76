//! Fuzzes suite loading: any text gives a suite or a list of problems with their JSON paths,
//! never a panic, and a suite the loader accepts is one the shipped schema accepts (the loader
//! may refuse more: duplicate ids, repeated keys, unreadable replay sources, `5.0` for a whole
//! number). Replay sources resolve against `sample_traces/`, so paths to real recordings (and
//! paths that try to leave the folder) are reachable.

#![no_main]

use std::path::Path;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use looptrace::eval::load_suite_from_str;

static SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let text = include_str!("../../schemas/suite.schema.json");
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let base_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_traces");
    let loaded = load_suite_from_str(text, &base_dir);
    match loaded {
        Ok(_) => {
            let value: serde_json::Value =
                serde_json::from_str(text).expect("a loaded suite is JSON");
            assert!(
                SCHEMA.is_valid(&value),
                "the loader accepted what the schema refuses: {text:?}"
            );
        }
        Err(errors) => assert!(!errors.problems.is_empty(), "refused without a problem"),
    }
});
