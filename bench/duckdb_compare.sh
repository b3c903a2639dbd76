#!/usr/bin/env bash
# Paired comparison of `looptrace report --format csv` against DuckDB's `read_ndjson` with the
# columns the counts need declared (bench/duckdb_counts.py), both computing the runs per exit
# reason with 2 threads (report takes one per core), on two traces from the page cache: few
# large runs (the full-capture trace of bench/stream.sh, `examples/gen_full_traces.rs`, about 22 KB per run) and many small
# ones (bench/gen_small_runs.py: the write-up's Python loop's traces, 2,000 runs repeated 120
# times with new run ids). `wc -l` on the same file is the floor: reading the bytes and finding
# the line ends. The three run alternately, so a change in the machine's load hits all alike;
# the script prints the medians of wall time, of CPU time (user + system, which a busy machine
# changes far less than wall time) and of peak memory, the ratios, and the load average. Each
# run is timed by bench/rusage.py, to the microsecond: hundredths of a second, what GNU time
# prints, are a few percent of a run of a quarter second.
#
#   PYTHON=target/ci-venv/bin/python bench/duckdb_compare.sh
#   RUNS=5 SIZE=256M PYTHON=... bench/duckdb_compare.sh
#   CORPORA=small PYTHON=... bench/duckdb_compare.sh      # only one of `large` and `small`
#   BASELINE=/path/to/older/looptrace PYTHON=... bench/duckdb_compare.sh
#
# With BASELINE, that build's `report` runs in the same alternation too (`before`), so the
# before → after figures and the ratios against DuckDB come from one run under one load.
# The traces go to DATA (default bench/out/, ignored by git) and are reused when present. Not
# part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-1G}
SEED=${SEED:-7}
RUNS=${RUNS:-7}
THREADS=${THREADS:-2}
CORPORA=${CORPORA:-"large small"}
PYTHON=${PYTHON:-${LOOPTRACE_TEST_PYTHON:-python3}}
OUT=bench/out
DATA=${DATA:-$OUT}
BASELINE=${BASELINE:-}
TARGET=${CARGO_TARGET_DIR:-target}
LOOPTRACE=${LOOPTRACE:-$TARGET/release/looptrace}
mkdir -p "$OUT" "$DATA"

"$PYTHON" -c "import duckdb" || { echo "$PYTHON has no duckdb package (pip install duckdb)" >&2; exit 2; }
[ -n "${LOOPTRACE_PREBUILT:-}" ] || cargo build --release --quiet --bin looptrace --example gen_full_traces

# compare NAME TRACE: checks that both count the same runs, then times the three alternately.
compare() {
    local name=$1 trace=$2
    cat "$trace" > /dev/null # into the page cache
    local ours theirs
    ours=$("$LOOPTRACE" report --format csv "$trace" | python3 -c '
import csv, sys
counts = {row[1]: row[4] for row in csv.reader(sys.stdin) if row[:1] == ["exit_reasons"] and row[3] == "runs"}
print(" ".join(f"{reason}={runs}" for reason, runs in counts.items()))')
    theirs=$("$PYTHON" bench/duckdb_counts.py "$trace" "$THREADS" | head -n 1)
    echo "== $name: $trace, $(stat -c %s "$trace") bytes, $(nproc) cores"
    echo "looptrace: $ours"
    echo "DuckDB:    $theirs"
    [ "$ours" = "$theirs" ] || echo "note: the two count runs differently on this trace" >&2
    if [ -n "$BASELINE" ]; then
        cmp -s <("$LOOPTRACE" report --format json "$trace") <("$BASELINE" report --format json "$trace") \
            || echo "note: the baseline's report differs on this trace" >&2
    fi
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    : > "$OUT/duckdb_compare.times"
    for _ in $(seq "$RUNS"); do
        python3 bench/rusage.py looptrace "$OUT/duckdb_compare.times" \
            "$LOOPTRACE" report --format csv "$trace" > /dev/null
        python3 bench/rusage.py duckdb "$OUT/duckdb_compare.times" \
            "$PYTHON" bench/duckdb_counts.py "$trace" "$THREADS" > /dev/null
        python3 bench/rusage.py wc "$OUT/duckdb_compare.times" wc -l "$trace" > /dev/null
        if [ -n "$BASELINE" ]; then
            python3 bench/rusage.py before "$OUT/duckdb_compare.times" \
                "$BASELINE" report --format csv "$trace" > /dev/null
        fi
    done
    python3 - "$(stat -c %s "$trace")" "$OUT/duckdb_compare.times" <<'PY'
import statistics, sys
size = int(sys.argv[1])
wall, cpu, peak = {}, {}, {}
for line in open(sys.argv[2]):
    which, seconds, user, system, kb = line.split()
    wall.setdefault(which, []).append(float(seconds))
    cpu.setdefault(which, []).append(float(user) + float(system))
    peak.setdefault(which, []).append(int(kb) / 1024)
median = statistics.median
runs = len(wall["looptrace"])
print(f"{'tool':<10}{'wall s':>9}{'GB/s':>7}{'CPU s':>8}{'peak MB':>9}   ({runs} runs each, medians)")
for which in wall:
    print(f"{which:<10}{median(wall[which]):>9.3f}{size / 1e9 / median(wall[which]):>7.2f}"
          f"{median(cpu[which]):>8.3f}{max(peak[which]):>9.1f}")
lt_cpu, db_cpu, wc_cpu = (median(cpu[w]) for w in ("looptrace", "duckdb", "wc"))
lt, db, wc = (median(wall[w]) for w in ("looptrace", "duckdb", "wc"))
print(f"DuckDB / looptrace: wall {db / lt:.2f}x, CPU {db_cpu / lt_cpu:.2f}x (above 1: looptrace is faster)")
print(f"looptrace / wc -l:  wall {lt / wc:.2f}x, CPU {lt_cpu / max(wc_cpu, 0.001):.2f}x")
if "before" in cpu:
    b_cpu, b = median(cpu["before"]), median(wall["before"])
    print(f"DuckDB / before:    wall {db / b:.2f}x, CPU {db_cpu / b_cpu:.2f}x")
    print(f"looptrace / before: wall {lt / b:.2f}x, CPU {lt_cpu / b_cpu:.2f}x (below 1: faster now)")
PY
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

for corpus in $CORPORA; do
    case $corpus in
        large)
            trace=$DATA/full-$SIZE-$SEED.jsonl
            [ -s "$trace" ] || "$TARGET"/release/examples/gen_full_traces "$trace" "$SIZE" "$SEED"
            compare "few large runs" "$trace"
            ;;
        small)
            trace=$DATA/small-runs-2000x120.jsonl
            [ -s "$trace" ] || python3 bench/gen_small_runs.py "$trace"
            compare "many small runs" "$trace"
            ;;
        *) echo "unknown corpus $corpus (large or small)" >&2; exit 2 ;;
    esac
done
