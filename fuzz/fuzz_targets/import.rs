//! Detection and every importer over arbitrary input: each may refuse it, none may panic. The
//! first byte picks the file name the probes see, so name-driven detection is covered too.

#![no_main]

use libfuzzer_sys::fuzz_target;
use looptrace::import::{Context, IMPORTERS, detect};

const NAMES: [&str; 8] = [
    "session.jsonl",
    "run.traj",
    "run.traj.json",
    "log.eval",
    "log.json",
    "exit_statuses_1.yaml",
    "rollout-1.jsonl",
    "trace.json",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let name = NAMES[pick as usize % NAMES.len()];
    let _ = detect(name, bytes);
    let context = Context {
        file: name.to_owned(),
        name: name.to_owned(),
    };
    for importer in IMPORTERS {
        let mut input = bytes;
        let _ = importer.import(&mut input, &context, &mut |_| Ok(()));
    }
});
