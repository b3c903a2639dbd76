#!/usr/bin/env bash
# Measures loading a large suite: wall time and peak resident memory (`/usr/bin/time -v`) of
# `looptrace eval` on the 200,000-task suite of `bench/gen_suite.py`, written as one JSON suite
# and as a suite naming a tasks file (`tasks.jsonl`, the same tasks one per line), each run with
# `--only` one task (loading, checking and the process: nothing that grows with the tasks run)
# and whole. Against another build (`BEFORE=path/to/looptrace`, such as the typed fast path's,
# 45e0089) it runs the JSON suite's commands with that build too, in alternating pairs.
#
#   bench/suite_load.sh                         # 200,000 tasks, 3 runs of each
#   TASKS=20000 RUNS=5 BEFORE=/tmp/old/looptrace bench/suite_load.sh
#   BENCH_OUT=/dev/shm/looptrace-suite bench/suite_load.sh   # outputs on tmpfs
#
# Prints, per command, the median wall seconds, CPU seconds (user + system) and peak RSS; with
# BEFORE, the JSON suite's commands run in alternating pairs (before, this) and the median of
# the per-pair CPU ratios is printed too. Never run in CI.
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

# `run binary suite args...`: one run to a fresh output folder; prints "wall cpu peak_kb".
run() {
  local binary=$1 suite=$2
  shift 2
  rm -rf "$OUT/run"
  /usr/bin/time -f '%e %U %S %M' -o "$OUT/time" "$binary" eval "$suite" --jobs 2 --out "$OUT/run" \
    --format json --trace-layout single --trace-flush run -q "$@" >/dev/null 2>&1 || true
  awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' < <(tail -1 "$OUT/time")
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# `report name walls cpus peaks`: the medians of one command's runs.
report() {
  printf '%-44s %8.2f s wall %8.2f s CPU %9.1f MB\n' "$1" "$(median $2)" "$(median $3)" \
    "$(awk -v k="$(median $4)" 'BEGIN { print k / 1024 }')"
}

# `measure name binary suite args...`: RUNS runs of one build.
measure() {
  local name=$1 binary=$2 suite=$3
  shift 3
  local walls="" cpus="" peaks=""
  for ((i = 0; i < RUNS; i++)); do
    read -r wall cpu peak < <(run "$binary" "$suite" "$@")
    walls+=" $wall" cpus+=" $cpu" peaks+=" $peak"
  done
  report "$name" "$walls" "$cpus" "$peaks"
}

# `pair name suite args...`: RUNS alternating pairs of BEFORE and this build.
pair() {
  local name=$1 suite=$2
  shift 2
  local bw="" bc="" bp="" tw="" tc="" tp="" ratios=""
  for ((i = 0; i < RUNS; i++)); do
    read -r w1 c1 p1 < <(run "$BEFORE" "$suite" "$@")
    read -r w2 c2 p2 < <(run "$LOOPTRACE" "$suite" "$@")
    bw+=" $w1" bc+=" $c1" bp+=" $p1" tw+=" $w2" tc+=" $c2" tp+=" $p2"
    ratios+=" $(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.3f", b / a }')"
  done
  report "before: $name" "$bw" "$bc" "$bp"
  report "this: $name" "$tw" "$tc" "$tp"
  echo "  CPU this/before per pair:$ratios (median $(median $ratios))"
}

echo
echo "$TASKS tasks, --jobs 2, $(nproc) cores; medians of $RUNS runs"
if [[ -n $BEFORE ]]; then
  pair "JSON suite, --only one task" "$OUT/json/suite.json" --only "$ONE"
  pair "JSON suite, every task" "$OUT/json/suite.json"
else
  measure "this: JSON suite, --only one task" "$LOOPTRACE" "$OUT/json/suite.json" --only "$ONE"
  measure "this: JSON suite, every task" "$LOOPTRACE" "$OUT/json/suite.json"
fi
measure "this: tasks file, --only one task" "$LOOPTRACE" "$OUT/lines/suite.json" --only "$ONE"
measure "this: tasks file, every task" "$LOOPTRACE" "$OUT/lines/suite.json"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT/run" "$OUT/time"
