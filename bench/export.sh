#!/usr/bin/env bash
# Benchmark of `looptrace export --otlp` on generated full-capture traces (interleaved runs, 5% of
# them left incomplete, `examples/gen_full_traces.rs`): input MB/s, CPU time and peak memory,
# without and with `--content`, on two sizes so that flat memory shows as the same peak on 4× the
# input. Beside it, in the same conditions: `looptrace report` on the same trace (the fastest
# reader, 1.36 GB/s unloaded in `bench/report.sh`) and Python's `json.loads` of every line (the
# floor of any Python exporter), so that the ratios hold on a loaded machine.
# Targets: at least 200 MB/s of input on 2 cores, peak memory that does not grow with the input.
#
#   bench/export.sh                    # 256 MiB and 1 GiB traces, seed 7, median of 3
#   SIZES="256M" RUNS=1 bench/export.sh
#
# The traces go to bench/out/ (ignored by git) and are reused when present; the exports are
# written to bench/out/ and removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-"256M 1G"}
SEED=${SEED:-7}
RUNS=${RUNS:-3}
OUT=bench/out
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
LOOPTRACE=${LOOPTRACE:-$TARGET/release/looptrace}

cargo build --release --quiet --bin looptrace --example gen_full_traces
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure NAME BYTES COMMAND...: runs the command RUNS times with stdout to $OUT/NAME.out and
# prints the median wall seconds, input MB/s, CPU seconds (user + system), input MB per CPU
# second, peak memory and the output size.
measure() {
    local name=$1 bytes=$2
    shift 2
    : > "$OUT/$name.times"
    for _ in $(seq "$RUNS"); do
        if ! /usr/bin/time -f "%e %U %S %M" -o "$OUT/$name.time" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; then
            echo "$name failed:" >&2
            tail -n 5 "$OUT/$name.err" >&2
            exit 1
        fi
        tail -n 1 "$OUT/$name.time" >> "$OUT/$name.times"
    done
    python3 - "$name" "$bytes" "$(stat -c %s "$OUT/$name.out")" "$OUT/$name.times" <<'PY'
import statistics, sys
name, size, written, times = sys.argv[1:]
rows = [line.split() for line in open(times)]
wall = statistics.median(float(r[0]) for r in rows)
cpu = statistics.median(float(r[1]) + float(r[2]) for r in rows)
peak = max(int(r[3]) for r in rows) / 1024
mb = int(size) / 1e6
print(f"{name:<24}{wall:>7.2f} s{mb / wall:>8.1f} MB/s{cpu:>7.2f} s cpu{mb / cpu:>8.1f} MB/cpu-s"
      f"{peak:>7.1f} MB peak{int(written) / 1e6:>8.1f} MB out")
PY
    rm -f "$OUT/$name.out"
}

for SIZE in $SIZES; do
    TRACE=$OUT/full-$SIZE-$SEED.jsonl
    [ -s "$TRACE" ] || "$TARGET"/release/examples/gen_full_traces "$TRACE" "$SIZE" "$SEED"
    BYTES=$(stat -c %s "$TRACE")
    cat "$TRACE" > /dev/null # into the page cache
    echo "input: $(python3 -c "print(f'{$BYTES / 1e9:.2f}')") GB ($BYTES bytes) from the page cache, $(nproc) cores"
    measure "export-$SIZE" "$BYTES" "$LOOPTRACE" export --otlp "$TRACE"
    measure "export-content-$SIZE" "$BYTES" "$LOOPTRACE" export --otlp --content "$TRACE"
    measure "report-$SIZE" "$BYTES" "$LOOPTRACE" report "$TRACE"
    measure "python-json-$SIZE" "$BYTES" python3 -c '
import json, sys
for line in open(sys.argv[1], "rb"):
    json.loads(line)
' "$TRACE"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
