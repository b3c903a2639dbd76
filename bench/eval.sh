#!/usr/bin/env bash
# Benchmarks `looptrace eval` against the write-up's Python loop and the file-writing floor.
#
#   bench/eval.sh                      # 10,000 tasks, 5 runs of each
#   TASKS=2000 RUNS=3 bench/eval.sh
#   BENCH_OUT=/dev/shm/looptrace-bench bench/eval.sh    # on tmpfs: no disk, no file system noise
#   LOOPTRACE=/path/to/other/looptrace bench/eval.sh     # another build, same suite and floor
#
# Builds release, generates the suite, then times (median of RUNS, each to a fresh output folder,
# traces on): `looptrace eval SUITE --jobs 1` and `--jobs 2`, `bench/python_loop.py`, and the
# floor (`examples/eval_floor.rs`: creating and writing the same trace files, nothing else).
# Prints tasks per second and the ratios against the targets (at least 10x the Python loop, within 2x of the floor). Uses hyperfine when it is
# installed (unless BENCH_TIMER=shell) and its own timing loop otherwise. Everything it writes
# goes under bench/out/eval (or BENCH_OUT).
#
# File creation is the largest cost and the noisiest one, so:
# - nothing is deleted while timing: each run's output folder is renamed aside before the next run
#   and all of them are removed at the end. On ext4 without a journal the inode allocator skips,
#   one by one, every inode freed in the last 60 to 360 seconds, so creating 10,000 files right
#   after deleting 10,000 costs many times more kernel time than on a quiet file system. For the
#   same reason the script waits until six minutes have passed since the previous run's clean-up;
# - the floor is measured before and after the timed commands and the faster median is kept: noise
#   only ever slows it down.
set -euo pipefail

cd "$(dirname "$0")/.."
TASKS=${TASKS:-10000}
RUNS=${RUNS:-5}
OUT=${BENCH_OUT:-bench/out/eval}
TARGET=${CARGO_TARGET_DIR:-target}
LOOPTRACE=${LOOPTRACE:-$TARGET/release/looptrace}
FLOOR=$TARGET/release/examples/eval_floor
SUITE=$OUT/suite-$TASKS.json
TRASH=$OUT/old

echo "== building (release)" >&2
cargo build --release --quiet --bin looptrace --example eval_floor

mkdir -p "$TRASH"
if [[ -f $OUT/cleaned-at && $(df --output=fstype "$OUT" | tail -1) == ext* ]]; then
  wait_s=$(($(cat "$OUT/cleaned-at") + 360 - $(date +%s)))
  if ((wait_s > 0)); then
    echo "== waiting ${wait_s} s for the previous run's deleted files to age (see the header)" >&2
    sleep "$wait_s"
  fi
fi
# Moves a folder out of the way without deleting it (see the header).
aside() { if [[ -e $1 ]]; then mv "$1" "$TRASH/$(basename "$1")-$(date +%s%N)"; fi; }

# Other work on the machine takes cores from everything measured here: say how busy it was.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== generating $SUITE" >&2
python3 bench/gen_suite.py --tasks "$TASKS" "$SUITE"

# A first run checks that the suite passes and leaves the traces the floor will rewrite.
aside "$OUT/reference"
"$LOOPTRACE" eval "$SUITE" --jobs 1 --out "$OUT/reference" --format json >/dev/null

# Prints the floor's tasks/s: one write per line and per file, 1 thread, then the same, 2 threads.
floor() {
  local out
  out=$TRASH/floor-$(date +%s%N)
  for threads in 1 2; do
    # Each line is echoed to stderr by the shell: `tee /dev/stderr` would reopen a redirected log
    # and truncate it.
    "$FLOOR" "$OUT/reference/traces" "$out-$threads" --reps "$RUNS" --jobs "$threads" |
      while IFS= read -r line; do printf '%s\n' "$line" >&2; printf '%s\n' "$line"; done |
      awk '/^one write per (line|file)/ { print $5 }'
  done
}
echo "== floor, before ($RUNS repetitions each)" >&2
mapfile -t floor_before < <(floor)

names=(looptrace-jobs-1 looptrace-jobs-2 python-loop)
commands=(
  "$LOOPTRACE eval $SUITE --jobs 1 --out $OUT/run-jobs-1 --format json >/dev/null"
  "$LOOPTRACE eval $SUITE --jobs 2 --out $OUT/run-jobs-2 --format json >/dev/null"
  "python3 bench/python_loop.py $SUITE $OUT/run-python >/dev/null"
)
folders=("$OUT/run-jobs-1" "$OUT/run-jobs-2" "$OUT/run-python")

# Median wall-clock seconds of each command, in the order above.
medians=()
if [[ ${BENCH_TIMER:-} != shell ]] && command -v hyperfine >/dev/null 2>&1; then
  echo "== timing with hyperfine ($RUNS runs each)" >&2
  args=()
  for i in "${!names[@]}"; do
    dir=${folders[$i]}
    args+=(--prepare "if [ -e $dir ]; then mv $dir $TRASH/run-\$(date +%s%N); fi")
    args+=(-n "${names[$i]}" "${commands[$i]}")
  done
  hyperfine --warmup 1 --runs "$RUNS" --export-json "$OUT/hyperfine.json" "${args[@]}" >&2
  mapfile -t medians < <(python3 -c '
import json, sys
for result in json.load(open(sys.argv[1]))["results"]:
    print(result["median"])
' "$OUT/hyperfine.json")
else
  echo "== timing with a shell loop ($RUNS runs each)" >&2
  for i in "${!names[@]}"; do
    times=()
    for ((run = 0; run <= RUNS; run++)); do
      aside "${folders[$i]}"
      start=$(date +%s.%N)
      bash -c "${commands[$i]}"
      end=$(date +%s.%N)
      # Run 0 is the warm-up.
      if ((run > 0)); then times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"); fi
    done
    median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }')
    echo "${names[$i]}: median ${median} s of ${times[*]}" >&2
    medians+=("$median")
  done
fi
for folder in "${folders[@]}"; do aside "$folder"; done

echo "== floor, after ($RUNS repetitions each)" >&2
mapfile -t floor_after < <(floor)

python3 - "$TASKS" "$(nproc)" "$(df --output=fstype "$OUT" | tail -1)" \
  "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "${medians[@]}" \
  "${floor_before[@]}" "${floor_after[@]}" <<'EOF'
import sys

tasks, cores, fs, load_before, load_after = sys.argv[1:6]
tasks = int(tasks)
j1, j2, py = map(float, sys.argv[6:9])
before, after = list(map(float, sys.argv[9:13])), list(map(float, sys.argv[13:17]))
# Per variant, the faster of the two windows.
line1, file1, line2, file2 = (max(b, a) for b, a in zip(before, after))
rate = lambda seconds: tasks / seconds
rows = [
    ("looptrace eval --jobs 1", rate(j1)),
    ("looptrace eval --jobs 2", rate(j2)),
    ("python loop (write-up)", rate(py)),
    ("floor, 1 thread, write per line", line1),
    ("floor, 1 thread, write per file", file1),
    ("floor, 2 threads, write per line", line2),
    ("floor, 2 threads, write per file", file2),
]
print(f"\n{tasks} tasks, traces on, {cores} cores, output on {fs}; medians")
print(f"load average before: {load_before}; after: {load_after}")
print(f"{'':34} {'tasks/s':>10} {'seconds':>9}")
for name, per_second in rows:
    print(f"{name:34} {per_second:>10.0f} {tasks / per_second:>9.3f}")
print(f"(floor per line, 1 thread: {before[0]:.0f} tasks/s before the timed commands, "
      f"{after[0]:.0f} after)")
# The floor is the faster of its one- and two-thread runs with one write per line, as looptrace.
floor = max(line1, line2)
vs_python = rate(j2) / rate(py)
vs_floor = rate(j2) / floor
print()
print(f"looptrace --jobs 2 vs python loop: {vs_python:.1f}x its tasks/s "
      f"(target >= 10x: {'met' if vs_python >= 10 else 'missed'})")
print(f"looptrace --jobs 2 vs floor: {vs_floor:.2f}x its tasks/s "
      f"(target >= 0.5x, within 2x: {'met' if vs_floor >= 0.5 else 'missed'})")
print(f"looptrace --jobs 1 vs python loop: {rate(j1) / rate(py):.1f}x; "
      f"vs floor: {rate(j1) / floor:.2f}x")
EOF

echo "== removing the outputs in $TRASH" >&2
aside "$OUT/reference"
rm -rf "$TRASH"
date +%s >"$OUT/cleaned-at"
