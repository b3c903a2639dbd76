//! Help text shown after the options: exit codes for the top level, examples for each command.

/// The top-level help's closing text: what each exit code means.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the work ran and found failures (a run that did not finish, unmet expectations,
     a replay divergence, a regression)
  2  bad input or usage; the message names the file, line or JSON path
  3  internal error";

/// Examples for `looptrace run`.
pub const RUN: &str = "\
Examples:
  looptrace run --task \"compute 12 × 7\" --responses responses.txt --trace run.jsonl
  looptrace run --task \"fix the bug\" --api openai-chat --base-url http://localhost:8080/v1 --model m";

/// Examples for `looptrace tools`.
pub const TOOLS: &str = "\
Examples:
  looptrace tools
  looptrace tools --tools-file tools.json";

/// Examples for `looptrace show`.
pub const SHOW: &str = "\
Examples:
  looptrace show run.jsonl
  looptrace show run.jsonl --run t1
  looptrace show looptrace-runs/sample --all-runs
  cat run.jsonl | looptrace show - -f json";

/// Examples for `looptrace eval`.
pub const EVAL: &str = "\
Examples:
  looptrace eval suite.json
  looptrace eval suite.json -j 8 -o runs/today --junit junit.xml
  looptrace eval suite.json --baseline runs/yesterday/results.json -q
  looptrace eval --traces recorded/ -f markdown
  looptrace eval suite.json --otlp-endpoint http://127.0.0.1:6006/v1/traces
  looptrace eval suite.json -o runs/today --rerun-failed runs/today/results.json
  looptrace eval --rebuild-view runs/today";

/// Examples for `looptrace gc`.
pub const GC: &str = "\
Examples:
  looptrace gc runs/today --dry-run
  looptrace gc runs/today --keep 3";

/// Examples for `looptrace merge`.
pub const MERGE: &str = "\
Examples:
  looptrace merge shard-*/results.json -o results.json
  looptrace merge shard-1/results.json shard-2/results.json -f json";

/// Examples for `looptrace report`.
pub const REPORT: &str = "\
Examples:
  looptrace report runs/today
  looptrace report runs/today --all-runs
  looptrace report a.jsonl b.jsonl --by file -f markdown
  cat run.jsonl | looptrace report - -q";

/// Examples for `looptrace proxy`.
pub const PROXY: &str = "\
Examples:
  looptrace proxy --upstream https://api.openai.com --record calls.jsonl
  OPENAI_BASE_URL=http://127.0.0.1:7878/v1 python my_agent.py
  looptrace proxy --replay calls.jsonl
  looptrace proxy --replay calls.jsonl --on-miss upstream --upstream https://api.openai.com --record more.jsonl

The first line on stderr is `listening on http://ADDR:PORT`. SIGINT or SIGTERM stop it: calls in
flight finish, open runs end, exit 0. See docs/proxy.md.";

/// Examples for `looptrace replay`.
pub const REPLAY: &str = "\
Examples:
  looptrace replay recorded.jsonl
  looptrace replay recorded.jsonl --run t1 --tools recorded --on-divergence continue
  looptrace replay recorded.jsonl --check -f json";

/// Examples for `looptrace import`.
pub const IMPORT: &str = "\
Examples:
  looptrace import trajectories/ -o imported.jsonl
  looptrace import --from claude-code session.jsonl --capture full -o run.jsonl";

/// Examples for `looptrace export`.
pub const EXPORT: &str = "\
Examples:
  looptrace export --otlp looptrace-runs/sample -o spans.jsonl
  looptrace export --otlp run.jsonl --results looptrace-runs/sample/results.json --content
  looptrace export --otlp looptrace-runs/sample --endpoint http://127.0.0.1:6006/v1/traces";

/// Examples for `looptrace completions`.
pub const COMPLETIONS: &str = "\
Examples:
  looptrace completions bash > ~/.local/share/bash-completion/completions/looptrace
  looptrace completions zsh > \"${fpath[1]}/_looptrace\"
  looptrace completions fish > ~/.config/fish/completions/looptrace.fish";

/// Examples for `looptrace man`.
pub const MAN: &str = "\
Examples:
  looptrace man | man -l -
  looptrace man eval > looptrace-eval.1";
