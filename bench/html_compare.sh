#!/usr/bin/env bash
# Paired comparison of `looptrace report -f html` (or `--list`, or a plain report) between two
# builds on the trace of bench/report.sh: the two binaries run alternately, so a change in the
# machine's load hits both alike; the medians of CPU time (user + system) and wall time and
# their ratios are printed with the load average around the runs.
#
#   bench/html_compare.sh OTHER_LOOPTRACE                       # 1 GB trace, 5 pairs, -f html
#   SIZE=256M RUNS=7 bench/html_compare.sh /tmp/old/target/release/looptrace
#   ARGS="--format csv" bench/html_compare.sh OTHER_LOOPTRACE   # the plain report
#
# To build an earlier version: `git worktree add /tmp/old COMMIT && cargo build --release
# --manifest-path /tmp/old/Cargo.toml`. Never run by the tests or CI.
set -euo pipefail
cd "$(dirname "$0")/.."

OTHER=${1:?usage: bench/html_compare.sh OTHER_LOOPTRACE}
SIZE=${SIZE:-1G}
SEED=${SEED:-7}
RUNS=${RUNS:-5}
ARGS=${ARGS:--f html}
OUT=bench/out
TARGET=${CARGO_TARGET_DIR:-target}
THIS=${LOOPTRACE:-$TARGET/release/looptrace}
TRACE=$OUT/traces-$SIZE-$SEED.jsonl
mkdir -p "$OUT"

[ -n "${LOOPTRACE_PREBUILT:-}" ] || cargo build --release --quiet --bin looptrace --example gen_traces
[ -s "$TRACE" ] || "$TARGET"/release/examples/gen_traces "$TRACE" "$SIZE" "$SEED"
cat "$TRACE" > /dev/null # into the page cache
# shellcheck disable=SC2086 # ARGS is a list of arguments
if ! cmp -s <("$OTHER" report $ARGS "$TRACE" | sha256sum) <("$THIS" report $ARGS "$TRACE" | sha256sum); then
    echo "note: the two builds write different output on this trace" >&2
fi

echo "input: $(stat -c %s "$TRACE") bytes from the page cache, $(nproc) cores, report $ARGS"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
    for which in other this; do
        binary=$OTHER
        [ "$which" = this ] && binary=$THIS
        # shellcheck disable=SC2086
        /usr/bin/time -f "$which %e %U %S %M" -o "$OUT/html_compare.time" \
            "$binary" report $ARGS "$TRACE" > /dev/null
        cat "$OUT/html_compare.time"
    done
done | python3 -c '
import statistics, sys
wall = {"other": [], "this": []}
cpu = {"other": [], "this": []}
peak = {"other": [], "this": []}
for line in sys.stdin:
    which, seconds, user, system, rss = line.split()
    wall[which].append(float(seconds))
    cpu[which].append(float(user) + float(system))
    peak[which].append(int(rss) / 1024)
for name in wall:
    print(f"{name:<6} wall median {statistics.median(wall[name]):.3f} s, CPU median "
          f"{statistics.median(cpu[name]):.3f} s (min {min(cpu[name]):.3f}, max {max(cpu[name]):.3f}), "
          f"peak {statistics.median(peak[name]):.0f} MiB, {len(wall[name])} runs")
for what, values in (("wall", wall), ("CPU", cpu), ("peak memory", peak)):
    ratio = statistics.median(values["this"]) / statistics.median(values["other"])
    print(f"this / other, {what}: {ratio:.3f} (above 1: this build uses more)")
'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
