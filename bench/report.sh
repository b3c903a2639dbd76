#!/usr/bin/env bash
# Benchmark of `looptrace report` on one generated trace of at least 1 GB, read from the page
# cache, against an equivalent jq aggregation of exit reasons and a Python json.loads loop
# (bench/report_baseline.py). Prints wall time, throughput and peak memory of each, the ratios,
# and the exit-reason counts of each so that they can be compared.
#
#   bench/report.sh            # 1 GiB trace, seed 7, best of 5 runs of looptrace
#   SIZE=2G SEED=3 bench/report.sh
#
# The traces go to bench/out/ (ignored by git) and are reused when present.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-1G}
SEED=${SEED:-7}
RUNS=${RUNS:-5}
OUT=bench/out
mkdir -p "$OUT"
TRACE=$OUT/traces-$SIZE-$SEED.jsonl
SMALL=$OUT/traces-128M-$SEED.jsonl

cargo build --release --quiet --bin looptrace --example gen_traces
TARGET=${CARGO_TARGET_DIR:-target}
[ -s "$TRACE" ] || "$TARGET"/release/examples/gen_traces "$TRACE" "$SIZE" "$SEED"
[ -s "$SMALL" ] || "$TARGET"/release/examples/gen_traces "$SMALL" 128M "$SEED"
BYTES=$(stat -c %s "$TRACE")
cat "$TRACE" "$SMALL" > /dev/null # into the page cache
# Other work on the machine takes cores from every tool measured here: say how busy it was.
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure NAME COMMAND...: runs the command with stdout to $OUT/NAME.out; sets SECONDS_TAKEN and
# PEAK_KB.
measure() {
    local name=$1
    shift
    local start end
    start=$EPOCHREALTIME
    /usr/bin/time -f "%M" -o "$OUT/$name.rss" "$@" > "$OUT/$name.out"
    end=$EPOCHREALTIME
    SECONDS_TAKEN=$(python3 -c "print(f'{$end - $start:.3f}')")
    PEAK_KB=$(tail -n 1 "$OUT/$name.rss")
}

best=""
for _ in $(seq "$RUNS"); do
    measure looptrace "$TARGET"/release/looptrace report --format csv "$TRACE"
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(not $SECONDS_TAKEN < $best)"; then
        best=$SECONDS_TAKEN
        best_kb=$PEAK_KB
    fi
done
lt_s=$best
lt_kb=$best_kb
measure looptrace_small "$TARGET"/release/looptrace report --format csv "$SMALL"
small_kb=$PEAK_KB

measure jq jq -n '
    reduce (inputs | select(.event_type == "run_finished" or .event_type == "internal_error")
            | (.exit_reason // "internal_error")) as $reason
        ({}; .[$reason] += 1)' "$TRACE"
jq_s=$SECONDS_TAKEN
jq_kb=$PEAK_KB

measure python python3 bench/report_baseline.py "$TRACE"
py_s=$SECONDS_TAKEN
py_kb=$PEAK_KB

python3 - "$BYTES" "$lt_s" "$lt_kb" "$jq_s" "$jq_kb" "$py_s" "$py_kb" "$small_kb" "$(nproc)" <<'PY'
import sys
size, lt_s, lt_kb, jq_s, jq_kb, py_s, py_kb, small_kb, cores = sys.argv[1:]
size = int(size)
rows = [("looptrace report", float(lt_s), int(lt_kb)), ("jq", float(jq_s), int(jq_kb)), ("python json.loads", float(py_s), int(py_kb))]
print(f"input: {size / 1e9:.2f} GB ({size} bytes) from the page cache, {cores} cores")
print(f"{'tool':<20}{'seconds':>9}{'GB/s':>8}{'peak MB':>9}{'vs jq':>8}{'vs python':>11}")
for name, seconds, kb in rows:
    print(f"{name:<20}{seconds:>9.2f}{size / 1e9 / seconds:>8.2f}{kb / 1024:>9.1f}"
          f"{float(jq_s) / seconds:>7.1f}x{float(py_s) / seconds:>10.1f}x")
print(f"looptrace peak memory on a 128 MiB trace: {int(small_kb) / 1024:.1f} MB")
PY

echo "exit reasons (looptrace | jq | python):"
grep '^exit_reasons,.*,runs,' "$OUT/looptrace.out" | cut -d, -f2,5 | tr '\n' ' '
echo
tr -d ' \n' < "$OUT/jq.out"
echo
tr '\n' ' ' < "$OUT/python.out"
echo
