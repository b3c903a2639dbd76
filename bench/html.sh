#!/usr/bin/env bash
# Benchmark of the HTML report on a 10,000-run trace: the page's size (it must stay under 5 MB),
# the time `looptrace report -f html` takes to write it, and the time headless Chromium takes to
# load it (navigation start until the script has inflated the data and built the runs table),
# best and median of five loads (bench/html_load.py, selenium).
#
#   bench/html.sh                     # 10000 runs, seed 7
#   RUNS=20000 SEED=3 bench/html.sh
#
# Needs Python with selenium, Chromium and its driver: LOOPTRACE_TEST_PYTHON,
# LOOPTRACE_TEST_CHROMIUM and LOOPTRACE_TEST_CHROMEDRIVER as the tests use them (.ci/run installs
# them). The trace and the page go to bench/out/ (ignored by git). Never run by the tests or CI.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10000}
SEED=${SEED:-7}
OUT=bench/out
mkdir -p "$OUT"
TRACE=$OUT/html-$RUNS-$SEED.jsonl
PAGE=$OUT/html-$RUNS-$SEED.html
PYTHON=${LOOPTRACE_TEST_PYTHON:-python3}
CHROMIUM=${LOOPTRACE_TEST_CHROMIUM:-/usr/bin/chromium}
CHROMEDRIVER=${LOOPTRACE_TEST_CHROMEDRIVER:-/usr/bin/chromedriver}

cargo build --release --quiet --bin looptrace --example gen_traces
TARGET=${CARGO_TARGET_DIR:-target}
[ -s "$TRACE" ] || "$TARGET"/release/examples/gen_traces "$TRACE" "${RUNS}runs" "$SEED"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "trace: $TRACE, $(stat -c %s "$TRACE") bytes"

start=$EPOCHREALTIME
/usr/bin/time -f "%M" -o "$OUT/html.rss" "$TARGET"/release/looptrace report "$TRACE" -f html -o "$PAGE"
end=$EPOCHREALTIME
SIZE=$(stat -c %s "$PAGE")
python3 -c "print(f'written in {$end - $start:.3f} s, peak memory {$(tail -n 1 "$OUT/html.rss")} KB')"
python3 -c "
size = $SIZE
print(f'page: {size} bytes ({size / 1e6:.2f} MB, {size / $RUNS:.0f} bytes per run)')
if size >= 5_000_000:
    raise SystemExit('the page is over 5 MB')
"
"$PYTHON" bench/html_load.py "$CHROMIUM" "$CHROMEDRIVER" "$PAGE" 5
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
