#!/usr/bin/env bash
# `looptrace proxy` against direct calls to the same local upstream: the overhead per call at the
# median with one client, and p50/p99 and peak memory at 64 concurrent streaming calls
# (bench/proxy_load.py). Loopback only. Figures in docs/benchmarks.md ("looptrace proxy").
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-2000}
rounds=${2:-20}
mkdir -p bench/out
cargo build --release -q
python3 bench/proxy_load.py "${CARGO_TARGET_DIR:-target}/release/looptrace" bench/out "$calls" "$rounds"
