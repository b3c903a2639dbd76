#!/usr/bin/env bash
# Measures loading a large suite: wall time and peak resident memory (`/usr/bin/time -v`) of
# `looptrace eval` on the 200,000-task suite of `bench/gen_suite.py`, written as one JSON suite
# and as a suite naming a tasks file (`tasks.jsonl`, the same tasks one per line), each run with
# `--only` one task (loading, checking and the process: nothing that grows with the tasks run)
# and whole. Against another build (`BEFORE=path/to/looptrace`, a build without tasks files) it
# runs the JSON suite's commands with that build too, in turn with this one.
#
#   bench/suite_load.sh                         # 200,000 tasks, 3 runs of each
#   TASKS=20000 RUNS=5 BEFORE=/tmp/old/looptrace bench/suite_load.sh
#   BENCH_OUT=/dev/shm/looptrace-suite bench/suite_load.sh   # outputs on tmpfs
#
# Prints, per command, the median wall seconds and the median peak RSS. Never run in CI.
set -euo pipefail

cd "$(dirname "$0")/.."
TASKS=${TASKS:-200000}
RUNS=${RUNS:-3}
OUT=${BENCH_OUT:-bench/out/suite_load}
TARGET=${CARGO_TARGET_DIR:-target}
LOOPTRACE=${LOOPTRACE:-$TARGET/release/looptrace}
BEFORE=${BEFORE:-}

echo "== building (release)" >&2
cargo build --release --quiet --bin looptrace

mkdir -p "$OUT/json" "$OUT/lines"
python3 bench/gen_suite.py --tasks "$TASKS" "$OUT/json/suite.json"
python3 bench/gen_suite.py --tasks "$TASKS" --tasks-file "$OUT/lines/suite.json"
ONE=raw-calc-000003
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# `name binary suite args...`: RUNS runs, each to a fresh output folder; prints the medians.
measure() {
  local name=$1 binary=$2 suite=$3
  shift 3
  local walls=() peaks=()
  for ((run = 0; run < RUNS; run++)); do
    rm -rf "$OUT/run"
    /usr/bin/time -f '%e %M' -o "$OUT/time" "$binary" eval "$suite" --jobs 2 --out "$OUT/run" \
      --format json --trace-layout single --trace-flush run -q "$@" >/dev/null 2>&1 || true
    read -r wall peak < <(tail -1 "$OUT/time")
    walls+=("$wall")
    peaks+=("$peak")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  printf '%-44s %8.2f s %9.1f MB\n' "$name" "$(median "${walls[@]}")" \
    "$(awk -v k="$(median "${peaks[@]}")" 'BEGIN { print k / 1024 }')"
}

echo
echo "$TASKS tasks, --jobs 2, $(nproc) cores; medians of $RUNS runs"
for which in before this; do
  binary=$LOOPTRACE
  if [[ $which == before ]]; then
    [[ -n $BEFORE ]] || continue
    binary=$BEFORE
  fi
  measure "$which: JSON suite, --only one task" "$binary" "$OUT/json/suite.json" --only "$ONE"
  measure "$which: JSON suite, every task" "$binary" "$OUT/json/suite.json"
done
measure "this: tasks file, --only one task" "$LOOPTRACE" "$OUT/lines/suite.json" --only "$ONE"
measure "this: tasks file, every task" "$LOOPTRACE" "$OUT/lines/suite.json"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT/run" "$OUT/time"
