#!/usr/bin/env bash
# Whether the streaming readers' memory stays flat as the input grows, and what they cost per
# byte: `show -f json`, `replay --tools recorded`, `eval --traces` and `export --otlp` on
# full-capture traces of several sizes (`examples/gen_full_traces.rs`, as bench/stream.sh), then
# `replay` and `eval --traces` on many small runs (bench/gen_small_runs.py --full: the suite of
# the write-up's Python loop recorded with full capture, 2,000 runs repeated 120 times). Prints
# per command and size the median wall time, CPU time (user + system), MB of input per CPU
# second and the peak memory, then per command whether the peak stayed within 10% (or 4 MB)
# from the smallest size to the largest; and `eval --traces`'s CPU against `replay`'s.
#
#   bench/stream_flat.sh                       # 300M, 1G and 2G, median of 3
#   SIZES="300M 1G" RUNS=1 bench/stream_flat.sh
#   COMMANDS="show show_text export" BASELINE=/path/to/other/looptrace bench/stream_flat.sh
#
# COMMANDS picks what is measured (show, show_text, replay, eval_traces, export, and floors:
# `wc -l` and `cat` on the same file, with each command's CPU as a multiple of theirs; the
# small-runs suite only with replay or eval_traces). With BASELINE, every run of this build is paired with a
# run of that binary right before it (alternating, so load changes hit both alike), and each
# command gets a second line `NAME@base` and the ratio of CPU medians. The traces go to DATA
# (bench/out/, ignored by git, unless set) and are reused when present. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-"300M 1G 2G"}
SEED=${SEED:-7}
RUNS=${RUNS:-3}
COMMANDS=${COMMANDS:-"show replay eval_traces export floors"}
BASELINE=${BASELINE:-}
OUT=bench/out
DATA=${DATA:-$OUT}
TARGET=${CARGO_TARGET_DIR:-target}
LOOPTRACE=${LOOPTRACE:-$TARGET/release/looptrace}
mkdir -p "$OUT" "$DATA"
[ -n "${LOOPTRACE_PREBUILT:-}" ] || cargo build --release --quiet --bin looptrace --example gen_full_traces
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

wanted() { case " $COMMANDS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# once TIMES BINARY ARGS...: one run (exit 0 or 1 both count), its times appended to TIMES.
once() {
    local times=$1
    shift
    # Set aside, not deleted: deleting a folder of files just before a run costs that run
    # seconds of system time in the file system's cleanup, not in looptrace.
    [ ! -e "$OUT/flat-eval" ] || mv "$OUT/flat-eval" "$OUT/flat-eval.$RANDOM$RANDOM"
    local code=0
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/flat.time" "$@" > /dev/null 2> "$OUT/flat.err" || code=$?
    if [ "$code" -gt 1 ]; then
        echo "$* failed with exit code $code:" >&2
        tail -n 5 "$OUT/flat.err" >&2
        exit 1
    fi
    tail -n 1 "$OUT/flat.time" >> "$times"
}

# measure NAME SIZE BYTES ARGS...: RUNS runs of looptrace ARGS (each after one of BASELINE ARGS
# when set), one result line each.
measure() {
    local name=$1 size=$2 bytes=$3
    shift 3
    wanted "$name" || return 0
    : > "$OUT/flat.times"
    : > "$OUT/flat-base.times"
    for _ in $(seq "$RUNS"); do
        [ -z "$BASELINE" ] || once "$OUT/flat-base.times" "$BASELINE" "$@"
        once "$OUT/flat.times" "$LOOPTRACE" "$@"
    done
    if [ -e "$OUT/flat-eval" ]; then
        rm -rf "$OUT"/flat-eval*
        sync
        sleep "${SETTLE:-10}"
    fi
    [ -z "$BASELINE" ] || summarize "$name@base" "$size" "$bytes" "$OUT/flat-base.times"
    summarize "$name" "$size" "$bytes" "$OUT/flat.times"
}

# floor NAME SIZE BYTES COMMAND...: RUNS runs of a command that only reads the bytes (`wc -l`,
# `cat`), for the ratio of each looptrace command's CPU to it on the same file.
floor() {
    local name=$1 size=$2 bytes=$3
    shift 3
    wanted floors || return 0
    : > "$OUT/flat.times"
    for _ in $(seq "$RUNS"); do
        once "$OUT/flat.times" "$@"
    done
    summarize "$name" "$size" "$bytes" "$OUT/flat.times"
}

summarize() {
    python3 - "$@" <<'PY' | tee -a "$OUT/flat.results"
import statistics, sys
name, size, total, times = sys.argv[1:]
rows = [line.split() for line in open(times)]
wall = statistics.median(float(r[0]) for r in rows)
cpu = statistics.median(float(r[1]) + float(r[2]) for r in rows)
peak = max(int(r[3]) for r in rows) / 1024
mb = int(total) / 1e6
print(f"{name} {size} {wall:.3f} {cpu:.3f} {mb / cpu:.1f} {peak:.1f}")
PY
}

: > "$OUT/flat.results"
for SIZE in $SIZES; do
    TRACE=$DATA/full-$SIZE-$SEED.jsonl
    [ -s "$TRACE" ] || "$TARGET"/release/examples/gen_full_traces "$TRACE" "$SIZE" "$SEED"
    BYTES=$(stat -c %s "$TRACE")
    cat "$TRACE" > /dev/null # into the page cache
    measure show "$SIZE" "$BYTES" show -f json "$TRACE"
    measure show_text "$SIZE" "$BYTES" show "$TRACE"
    measure replay "$SIZE" "$BYTES" replay --tools recorded "$TRACE"
    measure eval_traces "$SIZE" "$BYTES" eval --traces "$TRACE" --out "$OUT/flat-eval" --format csv
    measure export "$SIZE" "$BYTES" export --otlp "$TRACE"
    floor wc "$SIZE" "$BYTES" wc -l "$TRACE"
    floor cat "$SIZE" "$BYTES" cat "$TRACE"
done
if wanted replay || wanted eval_traces; then
    SMALL=$DATA/small-full-2000x120.jsonl
    [ -s "$SMALL" ] || python3 bench/gen_small_runs.py --full "$LOOPTRACE" "$SMALL"
    cat "$SMALL" > /dev/null
    SMALL_BYTES=$(stat -c %s "$SMALL")
    measure replay small "$SMALL_BYTES" replay --tools recorded "$SMALL"
    measure eval_traces small "$SMALL_BYTES" eval --traces "$SMALL" --out "$OUT/flat-eval" --format csv
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$OUT/flat.results" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
print(f"{'command':<16}{'input':>7}{'wall s':>9}{'CPU s':>8}{'MB/CPU-s':>10}{'peak MB':>9}")
for name, size, wall, cpu, rate, peak in rows:
    print(f"{name:<16}{size:>7}{float(wall):>9.2f}{float(cpu):>8.2f}{float(rate):>10.1f}{float(peak):>9.1f}")
by = {}
for name, size, wall, cpu, rate, peak in rows:
    if size != "small":
        by.setdefault(name, []).append((float(peak), float(cpu)))
for name, peaks in by.items():
    low, high = peaks[0][0], peaks[-1][0]
    allowed = max(low * 0.10, 4.0)
    verdict = "flat" if high - low <= allowed else "grows"
    print(f"{name}: peak {low:.1f} MB -> {high:.1f} MB ({high - low:+.1f} MB, allowed {allowed:.1f}): {verdict}")
cpu = {(name, size): float(c) for name, size, _, c, _, _ in rows}
peak = {(name, size): float(p) for name, size, _, _, _, p in rows}
for (name, size), value in cpu.items():
    if (name + "@base", size) in cpu:
        base = cpu[(name + "@base", size)]
        print(f"{name} on {size}: CPU {base:.2f} s -> {value:.2f} s ({value / base:.2f}x, "
              f"{base / value:.2f}x as fast), peak {peak[(name + '@base', size)]:.1f} -> "
              f"{peak[(name, size)]:.1f} MB")
for (name, size), value in cpu.items():
    if "@" not in name and name not in ("wc", "cat") and ("wc", size) in cpu:
        print(f"{name} on {size}: {value / cpu[('wc', size)]:.1f}x the CPU of wc -l, "
              f"{value / cpu[('cat', size)]:.1f}x that of cat")
for size in sorted({size for _, size in cpu}):
    if ("replay", size) in cpu and ("eval_traces", size) in cpu:
        print(f"eval --traces / replay CPU on {size}: {cpu[('eval_traces', size)] / cpu[('replay', size)]:.2f}x")
PY
