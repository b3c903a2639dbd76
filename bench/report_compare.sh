#!/usr/bin/env bash
# Paired comparison of `looptrace report` between two builds on the trace of bench/report.sh:
# the two binaries run alternately, so a change in the machine's load hits both alike, and the
# medians of wall time and of CPU time (user + system, which a busy machine changes far less than
# wall time) and their ratios are printed with the load average around the runs.
#
#   bench/report_compare.sh OTHER_LOOPTRACE            # against this tree's release build
#   RUNS=21 SIZE=1G bench/report_compare.sh /tmp/old/target/release/looptrace
#
# To build an earlier version: `git worktree add /tmp/old COMMIT && cargo build --release
# --manifest-path /tmp/old/Cargo.toml`. The runs alternate in a loop of its own by default;
# BENCH_TIMER=hyperfine uses `hyperfine` instead (all runs of one build, then the other's: on a
# machine whose load changes, the alternating loop is the fairer of the two).
set -euo pipefail
cd "$(dirname "$0")/.."

OTHER=${1:?usage: bench/report_compare.sh OTHER_LOOPTRACE}
SIZE=${SIZE:-1G}
SEED=${SEED:-7}
RUNS=${RUNS:-11}
OUT=bench/out
TARGET=${CARGO_TARGET_DIR:-target}
THIS=${LOOPTRACE:-$TARGET/release/looptrace}
TRACE=$OUT/traces-$SIZE-$SEED.jsonl
mkdir -p "$OUT"

[ -n "${LOOPTRACE_PREBUILT:-}" ] || cargo build --release --quiet --bin looptrace --example gen_traces
[ -s "$TRACE" ] || "$TARGET"/release/examples/gen_traces "$TRACE" "$SIZE" "$SEED"
cat "$TRACE" > /dev/null # into the page cache
if ! cmp -s <("$OTHER" report --format csv "$TRACE" | grep '^exit_reasons,') \
    <("$THIS" report --format csv "$TRACE" | grep '^exit_reasons,'); then
    echo "note: the two builds count exit reasons differently on this trace" >&2
fi

echo "input: $(stat -c %s "$TRACE") bytes from the page cache, $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${BENCH_TIMER:-}" = hyperfine ]; then
    hyperfine -N --warmup 1 --runs "$RUNS" \
        -n other "$OTHER report --format csv $TRACE" \
        -n this "$THIS report --format csv $TRACE"
else
    for _ in $(seq "$RUNS"); do
        for which in other this; do
            binary=$OTHER
            [ "$which" = this ] && binary=$THIS
            /usr/bin/time -f "$which %e %U %S" -o "$OUT/compare.time" \
                "$binary" report --format csv "$TRACE" > /dev/null
            cat "$OUT/compare.time"
        done
    done | python3 -c '
import statistics, sys
wall = {"other": [], "this": []}
cpu = {"other": [], "this": []}
for line in sys.stdin:
    which, seconds, user, system = line.split()
    wall[which].append(float(seconds))
    cpu[which].append(float(user) + float(system))
for name in wall:
    print(f"{name:<6} wall median {statistics.median(wall[name]):.3f} s (min {min(wall[name]):.3f}, "
          f"max {max(wall[name]):.3f}), CPU median {statistics.median(cpu[name]):.3f} s, {len(wall[name])} runs")
for what, values in (("wall", wall), ("CPU", cpu)):
    ratio = statistics.median(values["this"]) / statistics.median(values["other"])
    print(f"this / other, {what} time: {ratio:.3f} (above 1: this build is slower)")
'
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
