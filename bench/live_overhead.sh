#!/usr/bin/env bash
# Looptrace's own time per live model call (request building and hashing, response parsing, trace
# writing), timed inside the process against an in-memory server that answers at once.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2000}
mkdir -p bench/out
cargo build --release --example live_overhead -q
"${CARGO_TARGET_DIR:-target}"/release/examples/live_overhead "$runs" bench/out
