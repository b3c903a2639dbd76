#!/usr/bin/env bash
# Benchmark of `looptrace report` against the DuckDB queries of docs/sql.md on one generated
# trace, read from the page cache: wall time and peak memory of each, best of RUNS, and the
# exit-reason counts of both so that they can be compared. Not part of CI.
#
#   bench/sql.sh                          # 1 GiB trace, seed 7, best of 3
#   SIZE=256M RUNS=5 bench/sql.sh
#   PYTHON=target/ci-venv/bin/python bench/sql.sh   # a Python with the duckdb package
#
# The traces go to bench/out/ (ignored by git) and are reused when present.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-1G}
SEED=${SEED:-7}
RUNS=${RUNS:-3}
PYTHON=${PYTHON:-${LOOPTRACE_TEST_PYTHON:-python3}}
OUT=bench/out
mkdir -p "$OUT"
TRACE=$OUT/traces-$SIZE-$SEED.jsonl

"$PYTHON" -c "import duckdb" || { echo "$PYTHON has no duckdb package (pip install duckdb)" >&2; exit 2; }
cargo build --release --quiet --bin looptrace --example gen_traces
TARGET=${CARGO_TARGET_DIR:-target}
[ -s "$TRACE" ] || "$TARGET"/release/examples/gen_traces "$TRACE" "$SIZE" "$SEED"
BYTES=$(stat -c %s "$TRACE")
cat "$TRACE" > /dev/null # into the page cache
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# best NAME COMMAND...: the fastest of RUNS runs (stdout to $OUT/NAME.out); sets BEST_S and
# BEST_KB, the peak memory of that run.
best() {
    local name=$1
    shift
    BEST_S=""
    for _ in $(seq "$RUNS"); do
        local start end seconds
        start=$EPOCHREALTIME
        /usr/bin/time -f "%M" -o "$OUT/$name.rss" "$@" > "$OUT/$name.out"
        end=$EPOCHREALTIME
        seconds=$(python3 -c "print(f'{$end - $start:.3f}')")
        if [ -z "$BEST_S" ] || python3 -c "import sys; sys.exit(not $seconds < $BEST_S)"; then
            BEST_S=$seconds
            BEST_KB=$(tail -n 1 "$OUT/$name.rss")
            cp "$OUT/$name.out" "$OUT/$name.best"
        fi
    done
}

best sql_report "$TARGET"/release/looptrace report --format json "$TRACE"
lt_s=$BEST_S
lt_kb=$BEST_KB
best sql_duckdb "$PYTHON" bench/sql_queries.py "$TRACE"
db_s=$BEST_S
db_kb=$BEST_KB

python3 - "$BYTES" "$lt_s" "$lt_kb" "$db_s" "$db_kb" "$(nproc)" "$OUT/sql_duckdb.best" <<'PY'
import json, sys
size, lt_s, lt_kb, db_s, db_kb, cores, duck = sys.argv[1:]
size, lt_s, db_s = int(size), float(lt_s), float(db_s)
print(f"input: {size / 1e9:.2f} GB ({size} bytes) from the page cache, {cores} cores")
print(f"{'tool':<28}{'seconds':>9}{'GB/s':>8}{'peak MB':>9}")
for name, seconds, kb in [("looptrace report", lt_s, lt_kb), ("DuckDB, docs/sql.md", db_s, db_kb)]:
    print(f"{name:<28}{seconds:>9.2f}{size / 1e9 / seconds:>8.2f}{int(kb) / 1024:>9.1f}")
print(f"report is {db_s / lt_s:.1f}x faster than the DuckDB queries")
print("DuckDB seconds per block:", json.loads(open(duck).readline())["blocks"])
PY

echo "exit reasons (looptrace | DuckDB):"
python3 -c "
import json, sys
rows = json.load(open('$OUT/sql_report.best'))['exit_reasons']['rows']
print(' '.join(f\"{r['exit_reason']}={r['runs']}\" for r in rows))"
tail -n 1 "$OUT/sql_duckdb.best"
