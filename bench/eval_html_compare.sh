#!/usr/bin/env bash
# Paired comparison of `looptrace eval SUITE --html PAGE` between two builds: the page of an
# evaluation is now folded from the runs as they are written, where it used to read the traces
# the evaluation had just written. The two binaries run alternately on a scripted suite of
# TASKS tasks (bench/gen_suite.py), each into a fresh output folder; the medians of CPU time
# (user + system), wall time and peak memory and their ratios are printed with the load average
# around the runs, and, for scale, the same evaluation of this build without `--html`.
#
#   bench/eval_html_compare.sh OTHER_LOOPTRACE                 # 3,000 tasks, 5 pairs, per-task
#   TASKS=5000 RUNS=7 LAYOUT=single bench/eval_html_compare.sh /work/bin-main/looptrace
#
# Outputs go under /dev/shm (BENCH_OUT), so file creation on disk does not drown the page's
# cost. Never run by the tests or CI.
set -euo pipefail
cd "$(dirname "$0")/.."

OTHER=${1:?usage: bench/eval_html_compare.sh OTHER_LOOPTRACE}
TASKS=${TASKS:-3000}
RUNS=${RUNS:-5}
LAYOUT=${LAYOUT:-per-task}
JOBS=${JOBS:-2}
OUT=${BENCH_OUT:-/dev/shm/looptrace-eval-html}
TARGET=${CARGO_TARGET_DIR:-target}
THIS=${LOOPTRACE:-$TARGET/release/looptrace}
mkdir -p "$OUT"

[ -n "${LOOPTRACE_PREBUILT:-}" ] || cargo build --release --quiet --bin looptrace
SUITE=$OUT/suite-$TASKS.json
[ -s "$SUITE" ] || python3 bench/gen_suite.py --tasks "$TASKS" "$SUITE"

run() { # which binary html?
    local which=$1 binary=$2 html=$3 folder=$OUT/out-$1
    rm -rf "$folder" "$OUT/page.html"
    local page=()
    [ "$html" = yes ] && page=(--html "$OUT/page.html")
    /usr/bin/time -f "$which %e %U %S %M" -o "$OUT/time" \
        "$binary" eval "$SUITE" --out "$folder" -q --jobs "$JOBS" --trace-layout "$LAYOUT" \
        "${page[@]}" > /dev/null || true
    cat "$OUT/time"
}

echo "suite: $TASKS tasks, --jobs $JOBS, --trace-layout $LAYOUT, $(nproc) cores, outputs in $OUT"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
    run other "$OTHER" yes
    run this "$THIS" yes
    run no-html "$THIS" no
done | python3 -c '
import statistics, sys
wall, cpu, peak = {}, {}, {}
for line in sys.stdin:
    which, seconds, user, system, rss = line.split()
    wall.setdefault(which, []).append(float(seconds))
    cpu.setdefault(which, []).append(float(user) + float(system))
    peak.setdefault(which, []).append(int(rss) / 1024)
for name in wall:
    print(f"{name:<8} wall median {statistics.median(wall[name]):.3f} s, CPU median "
          f"{statistics.median(cpu[name]):.3f} s (min {min(cpu[name]):.3f}, max {max(cpu[name]):.3f}), "
          f"peak {statistics.median(peak[name]):.1f} MiB, {len(wall[name])} runs")
for what, values in (("wall", wall), ("CPU", cpu), ("peak memory", peak)):
    ratio = statistics.median(values["this"]) / statistics.median(values["other"])
    print(f"this / other, {what}: {ratio:.3f} (above 1: this build uses more)")
med = {w: statistics.median(cpu[w]) for w in cpu}
this_page, other_page = med["this"] - med["no-html"], med["other"] - med["no-html"]
print(f"CPU of the page (with --html minus without): this {this_page:.3f} s, other {other_page:.3f} s")
'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT"/out-* "$OUT/page.html"
