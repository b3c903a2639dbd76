#!/usr/bin/env bash
# Trace writer throughput: looptrace's writer (file kept open, one write per line) against the
# write-up's (reopen per event), in Rust, and the write-up's Python writer itself.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-1000000}
mkdir -p bench/out
cargo build --release --example trace_write -q
"${CARGO_TARGET_DIR:-target}"/release/examples/trace_write "$events" bench/out
python3 bench/trace_write_python.py "$((events / 10))" bench/out/python.jsonl
