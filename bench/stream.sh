#!/usr/bin/env bash
# Benchmark of the streaming readers on one generated full-capture trace (interleaved runs, 5% of
# them left incomplete, `examples/gen_full_traces.rs`): peak memory of `show`, `replay --tools
# recorded` and `eval --traces`, and the throughput of `replay --tools recorded`. Targets: under
# 100 MB peak each on 1 GB, replay at least 200 MB/s.
#
#   bench/stream.sh             # 1 GiB trace, seed 7
#   SIZE=256M bench/stream.sh   # a smaller trace
#
# The trace goes to bench/out/ (ignored by git) and is reused when present.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-1G}
SEED=${SEED:-7}
OUT=bench/out
mkdir -p "$OUT"
TRACE=$OUT/full-$SIZE-$SEED.jsonl
TARGET=${CARGO_TARGET_DIR:-target}
LOOPTRACE=${LOOPTRACE:-$TARGET/release/looptrace}

cargo build --release --quiet --bin looptrace --example gen_full_traces
[ -s "$TRACE" ] || "$TARGET"/release/examples/gen_full_traces "$TRACE" "$SIZE" "$SEED"
BYTES=$(stat -c %s "$TRACE")
cat "$TRACE" > /dev/null # into the page cache
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure NAME COMMAND...: runs the command (exit 0 or 1 both count) with stdout to $OUT/NAME.out;
# prints seconds, MB/s and peak memory.
measure() {
    local name=$1
    shift
    local start end code=0
    start=$EPOCHREALTIME
    /usr/bin/time -f "%M" -o "$OUT/$name.rss" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" || code=$?
    end=$EPOCHREALTIME
    if [ "$code" -gt 1 ]; then
        echo "$name failed with exit code $code:" >&2
        tail -n 5 "$OUT/$name.err" >&2
        exit 1
    fi
    python3 - "$name" "$start" "$end" "$(tail -n 1 "$OUT/$name.rss")" "$BYTES" <<'PY'
import sys
name, start, end, kb, size = sys.argv[1:]
seconds = float(end) - float(start)
print(f"{name:<26}{seconds:>9.2f} s{int(size) / 1e6 / seconds:>9.1f} MB/s{int(kb) / 1024:>9.1f} MB peak")
PY
}

echo "input: $(python3 -c "print(f'{$BYTES / 1e9:.2f}')") GB ($BYTES bytes) from the page cache, $(nproc) cores"
measure show "$LOOPTRACE" show "$TRACE"
measure replay_recorded "$LOOPTRACE" replay --tools recorded "$TRACE"
EVAL_OUT=$OUT/stream-eval
rm -rf "$EVAL_OUT"
measure eval_traces "$LOOPTRACE" eval --traces "$TRACE" --out "$EVAL_OUT" --format csv
rm -rf "$EVAL_OUT"
tail -n 1 "$OUT/replay_recorded.out"
