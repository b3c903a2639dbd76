#!/usr/bin/env bash
# Benchmarks `looptrace eval`'s trace layouts against the write-up's Python loop and the floor of
# creating and writing the same files, as paired runs: each round times every command once, in an
# order that rotates from round to round, so load from other work on the machine falls on all of
# them alike; the ratios are taken within each round and their median is reported.
#
#   bench/trace_layout.sh                    # 10,000 tasks, 5 rounds
#   TASKS=2000 ROUNDS=3 bench/trace_layout.sh
#   BENCH_OUT=/dev/shm/looptrace-layout bench/trace_layout.sh
#
# Commands (all at --jobs 2, traces on):
#   python     bench/python_loop.py SUITE OUT
#   per-task   looptrace eval SUITE --trace-layout per-task --trace-flush event
#   single     looptrace eval SUITE --trace-layout single --trace-flush event
#   single-run looptrace eval SUITE --trace-layout single --trace-flush run
#   floor      examples/eval_floor.rs: creating the same files as the per-task evaluation (the
#              trace files with one write per line, each task's row appended to
#              results.partial.jsonl, results.json), the faster of 1 and 2 threads
# Targets: single >= 12x the Python loop, single-run >= 20x, per-task within 1.5x of the floor.
# Outputs are renamed aside, never deleted while timing (see bench/eval.sh for why), and removed
# at the end; each command starts after `sync`. Removing them (about 200,000 files) leaves ext4
# slower at creating files for a few minutes: start another run five minutes later, or its
# figures measure that. Never run in CI.
set -euo pipefail

cd "$(dirname "$0")/.."
TASKS=${TASKS:-10000}
ROUNDS=${ROUNDS:-5}
OUT=${BENCH_OUT:-bench/out/trace_layout}
TARGET=${CARGO_TARGET_DIR:-target}
LOOPTRACE=${LOOPTRACE:-$TARGET/release/looptrace}
FLOOR=$TARGET/release/examples/eval_floor
SUITE=$OUT/suite-$TASKS.json
TRASH=$OUT/old

echo "== building (release)" >&2
cargo build --release --quiet --bin looptrace --example eval_floor
mkdir -p "$TRASH"
aside() { if [[ -e $1 ]]; then mv "$1" "$TRASH/$(basename "$1")-$(date +%s%N)"; fi; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
python3 bench/gen_suite.py --tasks "$TASKS" "$SUITE"
aside "$OUT/reference"
"$LOOPTRACE" eval "$SUITE" --jobs 2 --out "$OUT/reference" --format json >/dev/null

names=(python per-task single single-run floor)
command_of() {
  local dir=$OUT/run-$1
  aside "$dir"
  case $1 in
    python) echo "python3 bench/python_loop.py $SUITE $dir >/dev/null" ;;
    per-task) echo "$LOOPTRACE eval $SUITE --jobs 2 --out $dir --format json --trace-layout per-task --trace-flush event >/dev/null" ;;
    single) echo "$LOOPTRACE eval $SUITE --jobs 2 --out $dir --format json --trace-layout single --trace-flush event >/dev/null" ;;
    single-run) echo "$LOOPTRACE eval $SUITE --jobs 2 --out $dir --format json --trace-layout single --trace-flush run >/dev/null" ;;
  esac
}
# Seconds for one run of NAME. Dirty pages of earlier runs are written back first (untimed), so
# no command pays for the writeback of another's files.
time_one() {
  sync
  if [[ $1 == floor ]]; then
    local best=""
    for threads in 1 2; do
      # The run store keeps the reference evaluation's traces under its one run's folder.
      local traces
      traces=$(find "$OUT/reference/runs" -mindepth 2 -maxdepth 2 -type d -name traces | head -n 1)
      seconds=$("$FLOOR" "$traces" "$TRASH/floor-$(date +%s%N)" --reps 1 --jobs "$threads" \
        --results "$OUT/reference/results.json" |
        awk '/^one write per line/ { gsub(/[()]/, "", $7); print $7 }')
      if [[ -z $best ]] || awk -v a="$seconds" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$seconds; fi
    done
    echo "$best"
    return
  fi
  local command start end
  command=$(command_of "$1")
  start=$(date +%s.%N)
  bash -c "$command"
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}

# A warm-up of each, untimed.
for name in "${names[@]}"; do time_one "$name" >/dev/null; done
results=$OUT/rounds.tsv
: >"$results"
for ((round = 0; round < ROUNDS; round++)); do
  line=()
  declare -A seconds=()
  for ((i = 0; i < ${#names[@]}; i++)); do
    name=${names[$(((i + round) % ${#names[@]}))]}
    seconds[$name]=$(time_one "$name")
  done
  for name in "${names[@]}"; do line+=("${seconds[$name]}"); done
  printf '%s\t' "${line[@]}" >>"$results"
  printf '%s\n' "$(cut -d' ' -f1 /proc/loadavg)" >>"$results"
  echo "round $((round + 1)): ${names[*]} = ${line[*]} s; load $(cut -d' ' -f1 /proc/loadavg)" >&2
  unset seconds
done

python3 - "$TASKS" "$(nproc)" "$(df --output=fstype "$OUT" | tail -1)" "$load_before" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$results" <<'PY'
import statistics, sys

tasks, cores, fs, load_before, load_after, path = sys.argv[1:7]
rounds = [list(map(float, line.split("\t"))) for line in open(path) if line.strip()]
py, per_task, single, single_run, floor = (list(col) for col in zip(*[r[:5] for r in rounds]))
med = statistics.median
print(f"\n{tasks} tasks, --jobs 2, {cores} cores, output on {fs}; {len(rounds)} paired rounds")
print(f"load average before: {load_before}; after: {load_after}; per round: "
      + ", ".join(f"{r[5]:.2f}" for r in rounds))
for name, times in [("python loop", py), ("per-task + event", per_task),
                    ("single + event", single), ("single + run", single_run),
                    ("floor (per-task files)", floor)]:
    print(f"{name:24} median {med(times):7.3f} s  {int(tasks) / med(times):9.0f} tasks/s")
vs = lambda a, b: med([x / y for x, y in zip(a, b)])
r_single, r_run, r_floor = vs(py, single), vs(py, single_run), vs(per_task, floor)
print()
print(f"single + event vs python loop: {r_single:.1f}x (target >= 12x: {'met' if r_single >= 12 else 'missed'})")
print(f"single + run   vs python loop: {r_run:.1f}x (target >= 20x: {'met' if r_run >= 20 else 'missed'})")
print(f"per-task + event vs floor: {r_floor:.2f}x its time (target <= 1.5x: {'met' if r_floor <= 1.5 else 'missed'})")
PY

aside "$OUT/reference"
rm -rf "$TRASH"
echo "outputs removed: wait about five minutes before another run (see the header)" >&2
