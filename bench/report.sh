#!/usr/bin/env bash
# Benchmark of `looptrace report` on one generated trace of at least 1 GB, read from the page
# cache, against an equivalent jq aggregation of exit reasons and a Python json.loads loop
# (bench/report_baseline.py). Prints wall time, throughput and peak memory of each, the ratios,
# and the exit-reason counts of each so that they can be compared.
#
#   bench/report.sh            # 1 GiB trace, seed 7, best of 5 runs of looptrace
#   SIZE=2G SEED=3 bench/report.sh
#   TRACE=path/to/trace.jsonl bench/report.sh    # any trace, e.g. bench/duckdb_compare.sh's
#
# Besides wall time it prints CPU time (user + system), which a busy machine changes far less.
#
# The traces go to bench/out/ (ignored by git) and are reused when present.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-1G}
SEED=${SEED:-7}
RUNS=${RUNS:-5}
OUT=bench/out
mkdir -p "$OUT"
if [ -n "${TRACE:-}" ]; then
    SMALL=$TRACE # a trace given: no generated ones, and the memory line is about it too
else
    TRACE=$OUT/traces-$SIZE-$SEED.jsonl
    SMALL=$OUT/traces-128M-$SEED.jsonl
fi

[ -n "${LOOPTRACE_PREBUILT:-}" ] || cargo build --release --quiet --bin looptrace --example gen_traces
TARGET=${CARGO_TARGET_DIR:-target}
[ -s "$TRACE" ] || "$TARGET"/release/examples/gen_traces "$TRACE" "$SIZE" "$SEED"
[ -s "$SMALL" ] || "$TARGET"/release/examples/gen_traces "$SMALL" 128M "$SEED"
BYTES=$(stat -c %s "$TRACE")
cat "$TRACE" "$SMALL" > /dev/null # into the page cache
# Other work on the machine takes cores from every tool measured here: say how busy it was.
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure NAME COMMAND...: runs the command with stdout to $OUT/NAME.out; sets SECONDS_TAKEN,
# CPU_TAKEN (user + system) and PEAK_KB.
measure() {
    local name=$1
    shift
    local start end
    start=$EPOCHREALTIME
    /usr/bin/time -f "%M %U %S" -o "$OUT/$name.rss" "$@" > "$OUT/$name.out"
    end=$EPOCHREALTIME
    SECONDS_TAKEN=$(python3 -c "print(f'{$end - $start:.3f}')")
    read -r PEAK_KB user system < <(tail -n 1 "$OUT/$name.rss")
    CPU_TAKEN=$(python3 -c "print(f'{$user + $system:.3f}')")
}

best=""
cpus=""
for _ in $(seq "$RUNS"); do
    measure looptrace "$TARGET"/release/looptrace report --format csv "$TRACE"
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(not $SECONDS_TAKEN < $best)"; then
        best=$SECONDS_TAKEN
        best_kb=$PEAK_KB
    fi
    cpus="$cpus $CPU_TAKEN"
done
lt_s=$best
lt_kb=$best_kb
lt_cpu=$(python3 -c "import statistics, sys; print(statistics.median(map(float, sys.argv[1:])))" $cpus)
measure looptrace_small "$TARGET"/release/looptrace report --format csv "$SMALL"
small_kb=$PEAK_KB

measure jq jq -n '
    reduce (inputs | select(.event_type == "run_finished" or .event_type == "internal_error")
            | (.exit_reason // "internal_error")) as $reason
        ({}; .[$reason] += 1)' "$TRACE"
jq_s=$SECONDS_TAKEN
jq_kb=$PEAK_KB
jq_cpu=$CPU_TAKEN

measure python python3 bench/report_baseline.py "$TRACE"
py_s=$SECONDS_TAKEN
py_kb=$PEAK_KB
py_cpu=$CPU_TAKEN

python3 - "$BYTES" "$lt_s" "$lt_kb" "$jq_s" "$jq_kb" "$py_s" "$py_kb" "$small_kb" "$(nproc)" \
    "$lt_cpu" "$jq_cpu" "$py_cpu" <<'PY'
import sys
size, lt_s, lt_kb, jq_s, jq_kb, py_s, py_kb, small_kb, cores, lt_cpu, jq_cpu, py_cpu = sys.argv[1:]
size = int(size)
rows = [("looptrace report", float(lt_s), int(lt_kb), float(lt_cpu)),
        ("jq", float(jq_s), int(jq_kb), float(jq_cpu)),
        ("python json.loads", float(py_s), int(py_kb), float(py_cpu))]
print(f"input: {size / 1e9:.2f} GB ({size} bytes) from the page cache, {cores} cores")
print(f"{'tool':<20}{'seconds':>9}{'GB/s':>8}{'CPU s':>8}{'peak MB':>9}{'vs jq':>8}{'vs python':>11}"
      f"{'CPU vs jq':>11}{'CPU vs python':>15}")
for name, seconds, kb, cpu in rows:
    print(f"{name:<20}{seconds:>9.2f}{size / 1e9 / seconds:>8.2f}{cpu:>8.2f}{kb / 1024:>9.1f}"
          f"{float(jq_s) / seconds:>7.1f}x{float(py_s) / seconds:>10.1f}x"
          f"{float(jq_cpu) / cpu:>10.1f}x{float(py_cpu) / cpu:>14.1f}x")
print(f"looptrace peak memory on the smaller trace: {int(small_kb) / 1024:.1f} MB")
PY

echo "exit reasons (looptrace | jq | python):"
grep '^exit_reasons,.*,runs,' "$OUT/looptrace.out" | cut -d, -f2,5 | tr '\n' ' '
echo
tr -d ' \n' < "$OUT/jq.out"
echo
tr '\n' ' ' < "$OUT/python.out"
echo
