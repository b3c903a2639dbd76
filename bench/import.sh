#!/usr/bin/env bash
# Benchmark of `looptrace report` and `looptrace import` on a foreign format: a generated corpus of
# Claude Code session transcripts (bench/gen_claude_code.py: many small lines, some of 10-400 KB),
# read from the page cache. Targets: `report` at least 200 MB/s on 2 cores, peak memory under
# 100 MB. The alternative measured beside it is the least a script would do to count prompts: a
# Python `json.loads` of every line (bench/import_baseline.py).
#
#   bench/import.sh               # 1 GiB corpus, seed 7, median of 3 runs of each looptrace command
#   SIZE=256M RUNS=5 bench/import.sh
#
# The corpus goes to bench/out/ (ignored by git) and is reused when present.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-1G}
SEED=${SEED:-7}
RUNS=${RUNS:-3}
OUT=bench/out
CORPUS=$OUT/claude-code-$SIZE-$SEED
TARGET=${CARGO_TARGET_DIR:-target}
LOOPTRACE=${LOOPTRACE:-$TARGET/release/looptrace}
mkdir -p "$OUT"

[ -n "${LOOPTRACE_PREBUILT:-}" ] || cargo build --release --quiet --bin looptrace
if [ ! -d "$CORPUS" ]; then
    python3 bench/gen_claude_code.py "$CORPUS.tmp" "$SIZE" "$SEED"
    mv "$CORPUS.tmp" "$CORPUS"
fi
BYTES=$(find "$CORPUS" -type f -name '*.jsonl' -printf '%s\n' | awk '{s += $1} END {print s}')
FILES=$(find "$CORPUS" -type f -name '*.jsonl' | wc -l)
find "$CORPUS" -type f -name '*.jsonl' -exec cat {} + > /dev/null # into the page cache

# measure NAME COMMAND...: runs the command RUNS times (stdout to $OUT/NAME.out) and prints the
# median seconds, MB/s and the peak memory of the median run.
measure() {
    local name=$1
    shift
    local times=()
    for _ in $(seq "$RUNS"); do
        local start end
        start=$EPOCHREALTIME
        /usr/bin/time -f "%M" -o "$OUT/$name.rss" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" || {
            echo "$name failed:" >&2
            tail -n 5 "$OUT/$name.err" >&2
            exit 1
        }
        end=$EPOCHREALTIME
        times+=("$(python3 -c "print($end - $start)") $(tail -n 1 "$OUT/$name.rss")")
    done
    printf '%s\n' "${times[@]}" | python3 -c '
import sys
name, size = sys.argv[1], int(sys.argv[2])
runs = sorted((float(s), int(kb)) for s, kb in (line.split() for line in sys.stdin))
seconds, kb = runs[len(runs) // 2]
every = ", ".join(f"{s:.2f}" for s, _ in runs)
print(f"{name:<28}{seconds:>8.2f} s{size / 1e6 / seconds:>9.1f} MB/s{kb / 1024:>9.1f} MB peak"
      f"   (runs: {every})")
' "$name" "$BYTES"
}

echo "input: $FILES session files, $(python3 -c "print(f'{$BYTES / 1e9:.2f}')") GB ($BYTES bytes) from the page cache, $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
measure report "$LOOPTRACE" report --format csv "$CORPUS"
measure import_to_devnull "$LOOPTRACE" import "$CORPUS" -o /dev/null
RUNS=1 measure python_json_loads python3 bench/import_baseline.py "$CORPUS"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "exit reasons (looptrace report | python prompts):"
grep '^exit_reasons,.*,runs,' "$OUT/report.out" | cut -d, -f2,5 | tr '\n' ' '
echo
cat "$OUT/python_json_loads.out"
