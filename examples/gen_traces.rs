//! Writes a large synthetic JSONL trace for benchmarking `looptrace report`.
//!
//! `cargo run --release --example gen_traces -- OUTPUT SIZE SEED`, where SIZE is a byte count
//! (`1073741824`, `512M`, `1G`) or a run count (`5000runs`). The same SIZE and SEED always give
//! the same file. The mix looks like a corpus of real runs: every exit reason and incomplete
//! runs, tool errors of several kinds, model feedback, runs written the way older writers did
//! (no schema, no `tool_name` on observations, no `error_kind`, no `steps_used`, a bare
//! `internal_error` event), and now and then two runs interleaved in one file.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

const TOOLS: &[(&str, &[&str])] = &[
    ("calculator", &["left", "operation", "right"]),
    ("search", &["limit", "query"]),
    ("read_file", &["path"]),
    ("http_get", &["headers", "url"]),
    ("sql_query", &["database", "query"]),
];

const TOOL_ERRORS: &[&str] = &[
    "invalid_arguments",
    "unknown_tool",
    "division_by_zero",
    "timeout",
    "not_found",
];
const FEEDBACK_KINDS: &[&str] = &["invalid_json", "missing_field", "unknown_action"];
const INTERNAL_KINDS: &[&str] = &["model_connection", "tool_panic", "trace_write"];

/// How one run ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Finished,
    MaxSteps,
    InvalidOutput,
    Internal,
    Incomplete,
}

fn summary(rng: &mut Rng, out: &mut String) {
    let _ = write!(
        out,
        "chars={};sha256={:016x}{:016x}{:016x}{:016x}",
        1 + rng.below(4000),
        rng.next(),
        rng.next(),
        rng.next(),
        rng.next()
    );
}

/// Writes the events of one run as lines.
fn run_lines(rng: &mut Rng, run_id: &str) -> Vec<String> {
    let old_writer = rng.chance(10);
    let roll = rng.below(100);
    let end = match roll {
        0..=63 => End::Finished,
        64..=79 => End::MaxSteps,
        80..=89 => End::InvalidOutput,
        90..=95 => End::Internal,
        _ => End::Incomplete,
    };
    let max_steps = [8u64, 12, 16, 24][rng.below(4) as usize];
    let steps = match end {
        End::MaxSteps => max_steps,
        _ => 1 + rng.below(max_steps - 1),
    };
    let mut lines = Vec::with_capacity(2 * steps as usize + 2);
    let mut line = String::with_capacity(256);
    let _ = write!(
        line,
        r#"{{"run_id":"{run_id}","step":0,"event_type":"run_started","#
    );
    if !old_writer {
        let _ = write!(
            line,
            r#""schema":"looptrace.trace/1","capture":"summary","hash":"sha256","max_steps":{max_steps},"#
        );
    }
    line.push_str(r#""input_summary":""#);
    summary(rng, &mut line);
    line.push_str("\"}");
    lines.push(std::mem::take(&mut line));
    let feedback_rate = if end == End::InvalidOutput { 70 } else { 6 };
    for step in 1..=steps {
        let last = step == steps;
        if last && end == End::Finished {
            let _ = write!(
                line,
                r#"{{"run_id":"{run_id}","step":{step},"event_type":"model_action","action_type":"finish","duration_ms":{},"output":""#,
                rng.below(3000)
            );
            summary(rng, &mut line);
            line.push_str("\"}");
            lines.push(std::mem::take(&mut line));
            break;
        }
        if (last && end == End::InvalidOutput) || rng.chance(feedback_rate) {
            let kind = rng.pick(FEEDBACK_KINDS);
            let _ = write!(
                line,
                r#"{{"run_id":"{run_id}","step":{step},"event_type":"model_feedback","output":""#
            );
            summary(rng, &mut line);
            let _ = write!(line, r#"","is_error":true,"error_kind":"{kind}"}}"#);
            lines.push(std::mem::take(&mut line));
            continue;
        }
        let (tool, keys) = TOOLS[rng.below(TOOLS.len() as u64) as usize];
        let keys: Vec<String> = keys.iter().map(|key| format!("\"{key}\"")).collect();
        let _ = write!(
            line,
            r#"{{"run_id":"{run_id}","step":{step},"event_type":"model_action","action_type":"tool_call","tool_name":"{tool}","argument_keys":[{}],"duration_ms":{}}}"#,
            keys.join(","),
            rng.below(3000)
        );
        lines.push(std::mem::take(&mut line));
        if last && end == End::Internal {
            break;
        }
        let _ = write!(
            line,
            r#"{{"run_id":"{run_id}","step":{step},"event_type":"observation","#
        );
        if !old_writer {
            let _ = write!(line, r#""tool_name":"{tool}","#);
        }
        line.push_str(r#""output":""#);
        summary(rng, &mut line);
        if rng.chance(12) {
            line.push_str(r#"","is_error":true"#);
            if !old_writer {
                let _ = write!(line, r#","error_kind":"{}""#, rng.pick(TOOL_ERRORS));
            }
        } else {
            line.push_str(r#"","is_error":false"#);
        }
        let _ = write!(line, r#","duration_ms":{}}}"#, rng.below(500));
        lines.push(std::mem::take(&mut line));
    }
    let reason = match end {
        End::Finished => "finished",
        End::MaxSteps => "max_steps_exceeded",
        End::InvalidOutput => "invalid_model_output",
        End::Internal => "internal_error",
        End::Incomplete => return lines,
    };
    if end == End::Internal && old_writer {
        let _ = write!(
            line,
            r#"{{"run_id":"{run_id}","step":{steps},"event_type":"internal_error","error":""#
        );
        summary(rng, &mut line);
        line.push_str("\"}");
    } else if old_writer {
        let _ = write!(
            line,
            r#"{{"run_id":"{run_id}","step":{steps},"event_type":"run_finished","exit_reason":"{reason}"}}"#
        );
    } else {
        let _ = write!(
            line,
            r#"{{"run_id":"{run_id}","step":{steps},"event_type":"run_finished","exit_reason":"{reason}","steps_used":{steps}"#
        );
        let kind = match end {
            End::MaxSteps => Some("max_steps_exceeded"),
            End::InvalidOutput => Some(rng.pick(FEEDBACK_KINDS)),
            End::Internal => Some(rng.pick(INTERNAL_KINDS)),
            _ => None,
        };
        if let Some(kind) = kind {
            let _ = write!(line, r#","error_kind":"{kind}","error":""#);
            summary(rng, &mut line);
            line.push('"');
        }
        line.push('}');
    }
    lines.push(line);
    lines
}

/// The size target: bytes or runs.
enum Target {
    Bytes(u64),
    Runs(u64),
}

fn parse_target(text: &str) -> Option<Target> {
    if let Some(runs) = text.strip_suffix("runs") {
        return runs.parse().ok().map(Target::Runs);
    }
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let scale: u64 = match unit {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        _ => return None,
    };
    digits
        .parse::<u64>()
        .ok()
        .map(|value| Target::Bytes(value * scale))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(target), Some(seed)) = (
        args.first(),
        args.get(1).and_then(|text| parse_target(text)),
        args.get(2).and_then(|text| text.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: gen_traces OUTPUT SIZE[K|M|G]|Nruns SEED");
        return ExitCode::from(2);
    };
    match generate(path, target, seed) {
        Ok((runs, bytes)) => {
            eprintln!("wrote {runs} runs, {bytes} bytes to {path}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: failed to write `{path}`: {err}");
            ExitCode::from(1)
        }
    }
}

fn generate(path: &str, target: Target, seed: u64) -> std::io::Result<(u64, u64)> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut rng = Rng(seed);
    let (mut runs, mut bytes) = (0u64, 0u64);
    let done = |runs: u64, bytes: u64| match target {
        Target::Bytes(limit) => bytes >= limit,
        Target::Runs(limit) => runs >= limit,
    };
    while !done(runs, bytes) {
        let first = run_lines(&mut rng, &format!("run-{seed:x}-{runs:09}"));
        runs += 1;
        // About one run in twenty is written interleaved with the next, as when two workers
        // append to one file.
        let lines = if rng.chance(5) && !done(runs, bytes) {
            let second = run_lines(&mut rng, &format!("run-{seed:x}-{runs:09}"));
            runs += 1;
            let mut merged = Vec::with_capacity(first.len() + second.len());
            let (mut a, mut b) = (first.into_iter().peekable(), second.into_iter().peekable());
            while a.peek().is_some() || b.peek().is_some() {
                let from_a = match (a.peek(), b.peek()) {
                    (Some(_), Some(_)) => rng.chance(50),
                    (Some(_), None) => true,
                    _ => false,
                };
                merged.extend(if from_a { a.next() } else { b.next() });
            }
            merged
        } else {
            first
        };
        for line in lines {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
            bytes += line.len() as u64 + 1;
        }
    }
    out.flush()?;
    Ok((runs, bytes))
}
