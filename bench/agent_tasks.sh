#!/usr/bin/env bash
# Measures what an agent task costs looptrace itself: `looptrace eval` of N tasks whose agent is
# `true` (each attempt: a proxy on its own port, the working folder, the process, the trace and
# the row) against the same N tasks answered by looptrace's own loop (a scripted `responses`
# model), one job, wall time and CPU time (`/usr/bin/time`), median of RUNS runs.
#
#   bench/agent_tasks.sh              # N=20, 5 runs
#   N=100 RUNS=3 bench/agent_tasks.sh
#
# Outputs go under bench/out/agent_tasks (or BENCH_OUT). Never run in CI.
set -euo pipefail

cd "$(dirname "$0")/.."
N=${N:-20}
RUNS=${RUNS:-5}
OUT=${BENCH_OUT:-bench/out/agent_tasks}
LOOPTRACE=${LOOPTRACE:-${CARGO_TARGET_DIR:-target}/release/looptrace}

echo "== building (release)" >&2
cargo build --release --quiet --bin looptrace
mkdir -p "$OUT"
python3 - "$N" "$OUT" <<'PY'
import json, sys
n, out = int(sys.argv[1]), sys.argv[2]
model = {"chat": {"api": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m"}}
agents = [{"id": f"t{i}", "prompt": "p", "model": model, "agent": {"command": ["true"]}}
          for i in range(n)]
own = [{"id": f"t{i}", "prompt": "p",
        "model": {"responses": ['{"type":"finish","answer":"x"}']}} for i in range(n)]
json.dump({"name": "agents", "tasks": agents}, open(f"{out}/agents.json", "w"))
json.dump({"name": "own", "tasks": own}, open(f"{out}/own.json", "w"))
PY
for suite in agents own; do
  for run in $(seq "$RUNS"); do
    rm -rf "$OUT/out-$suite"
    /usr/bin/time -f "%e %U %S" -o "$OUT/time" \
      "$LOOPTRACE" eval "$OUT/$suite.json" --jobs 1 -q --out "$OUT/out-$suite" || true
    echo "$suite $(cat "$OUT/time")"
  done
done | sort | awk '
  { wall[$1] = wall[$1] " " $2; cpu[$1] = cpu[$1] " " ($3 + $4) }
  END { for (s in wall) print s, "wall s:" wall[s], " cpu s:" cpu[s] }'
