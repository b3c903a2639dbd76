#!/usr/bin/env bash
# Benchmark of `looptrace export --otlp` on generated full-capture traces (interleaved runs, 5% of
# them left incomplete, `examples/gen_full_traces.rs`): input MB/s and peak memory, without and
# with `--content`, on two sizes so that flat memory shows as the same peak on 4× the input.
# Targets: at least 200 MB/s of input on 2 cores, peak memory that does not grow with the input.
#
#   bench/export.sh                    # 1 GiB and 256 MiB traces, seed 7
#   SIZES="256M" bench/export.sh       # one smaller trace
#
# The traces go to bench/out/ (ignored by git) and are reused when present; the exports are
# written to bench/out/ and removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-"256M 1G"}
SEED=${SEED:-7}
OUT=bench/out
mkdir -p "$OUT"
LOOPTRACE=${LOOPTRACE:-target/release/looptrace}

cargo build --release --quiet --bin looptrace --example gen_full_traces
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure NAME BYTES COMMAND...: runs the command with stdout to $OUT/NAME.otlp.jsonl; prints
# seconds, input MB/s, peak memory and the output size.
measure() {
    local name=$1 bytes=$2
    shift 2
    local start end
    start=$EPOCHREALTIME
    if ! /usr/bin/time -f "%M" -o "$OUT/$name.rss" "$@" > "$OUT/$name.otlp.jsonl" 2> "$OUT/$name.err"; then
        echo "$name failed:" >&2
        tail -n 5 "$OUT/$name.err" >&2
        exit 1
    fi
    end=$EPOCHREALTIME
    python3 - "$name" "$start" "$end" "$(tail -n 1 "$OUT/$name.rss")" "$bytes" \
        "$(stat -c %s "$OUT/$name.otlp.jsonl")" <<'PY'
import sys
name, start, end, kb, size, written = sys.argv[1:]
seconds = float(end) - float(start)
print(f"{name:<22}{seconds:>8.2f} s{int(size) / 1e6 / seconds:>9.1f} MB/s in"
      f"{int(kb) / 1024:>8.1f} MB peak{int(written) / 1e6:>9.1f} MB out")
PY
    rm -f "$OUT/$name.otlp.jsonl"
}

for SIZE in $SIZES; do
    TRACE=$OUT/full-$SIZE-$SEED.jsonl
    [ -s "$TRACE" ] || ./target/release/examples/gen_full_traces "$TRACE" "$SIZE" "$SEED"
    BYTES=$(stat -c %s "$TRACE")
    cat "$TRACE" > /dev/null # into the page cache
    echo "input: $(python3 -c "print(f'{$BYTES / 1e9:.2f}')") GB ($BYTES bytes) from the page cache, $(nproc) cores"
    measure "export-$SIZE" "$BYTES" "$LOOPTRACE" export --otlp "$TRACE"
    measure "export-content-$SIZE" "$BYTES" "$LOOPTRACE" export --otlp --content "$TRACE"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
