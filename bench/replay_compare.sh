#!/usr/bin/env bash
# `replay --tools recorded` and `eval --traces` of two builds side by side: for each trace, the
# two binaries run alternately (BEFORE, AFTER, BEFORE, ...), and the script prints per command
# the median CPU time (user + system, which the machine's load changes far less than wall time),
# MB of input per CPU second, the peak memory, the ratio after / before, and `eval --traces`'s
# CPU against `replay`'s of the same build. Both builds must give the same report: the first
# round's outputs are compared (replay's whole report; eval's exit code and totals line).
#
#   BEFORE=/path/to/old/looptrace bench/replay_compare.sh TRACE...
#   ROUNDS=3 BEFORE=... AFTER=target/release/looptrace bench/replay_compare.sh a.jsonl b.jsonl
#   COMMANDS=replay BEFORE=... bench/replay_compare.sh a.jsonl   # the replay half only
#   EVAL_ARGS="--trace-layout single" BEFORE=... bench/replay_compare.sh a.jsonl
#   COMMANDS="replay eval_traces eval_check" BEFORE=... bench/replay_compare.sh a.jsonl
#
# `eval_check` times `eval --traces`'s load check alone: the trace is given with a second file
# whose one line is malformed, so eval reads and checks every line, then exits 2 having written
# nothing. The summary then splits `eval --traces`'s CPU into the check and the rest, each as a
# multiple of `replay`'s.
#
# Each evaluation writes a folder of its own, and the folders are deleted only after every round
# of a trace, then given SETTLE seconds (default 10): deleting a gigabyte of files just before a
# run costs that run seconds of system time in the file system's cleanup, not in looptrace.
#
# The traces are those of bench/stream_flat.sh (`examples/gen_full_traces.rs`, and
# `bench/gen_small_runs.py --full` for many small runs). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BEFORE:?set BEFORE to the looptrace binary to compare against}"
AFTER=${AFTER:-target/release/looptrace}
ROUNDS=${ROUNDS:-3}
COMMANDS=${COMMANDS:-replay eval_traces}
OUT=${OUT:-bench/out/replay-compare}
EVAL_ARGS=${EVAL_ARGS:-}
SETTLE=${SETTLE:-10}
mkdir -p "$OUT"
printf '{"run_id": not json\n' > "$OUT/malformed.jsonl"
RUN=0
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# run WHO NAME TRACE: one timed run, its line appended to $OUT/times.
run() {
    local who=$1 name=$2 trace=$3 bin
    bin=$([ "$who" = before ] && echo "$BEFORE" || echo "$AFTER")
    RUN=$((RUN + 1))
    local eval_out="$OUT/eval-$RUN-$who"
    local code=0
    case $name in
        eval_check) /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" \
            "$bin" eval --traces "$trace" --traces "$OUT/malformed.jsonl" --out "$eval_out" -q > /dev/null 2> "$OUT/$who.err" || code=$?
            if [ "$code" != 2 ] || [ -e "$eval_out" ]; then
                echo "$who eval_check: exit code $code, expected 2 and no output folder" >&2
                exit 1
            fi
            code=0
            : > "$OUT/$who.$name.out" ;;
        replay) /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" \
            "$bin" replay --tools recorded "$trace" > "$OUT/$who.$name.out" 2> "$OUT/$who.err" || code=$? ;;
        # shellcheck disable=SC2086 # EVAL_ARGS is a list of flags
        eval_traces) /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" \
            "$bin" eval --traces "$trace" --out "$eval_out" $EVAL_ARGS --format csv -q > /dev/null 2> "$OUT/$who.err" || code=$?
            # The counts the evaluation wrote, which both builds must agree on.
            python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"])' \
                "$eval_out/results.json" > "$OUT/$who.$name.out" ;;
    esac
    if [ "$code" -gt 1 ]; then
        echo "$who $name failed with exit code $code:" >&2
        tail -n 5 "$OUT/$who.err" >&2
        exit 1
    fi
    echo "$code" >> "$OUT/$who.$name.out"
    echo "$who $name $(basename "$trace") $(stat -c %s "$trace") $(tail -n 1 "$OUT/time")" >> "$OUT/times"
}

: > "$OUT/times"
rm -rf "$OUT"/eval-* # an earlier, interrupted run's
for TRACE in "$@"; do
    cat "$TRACE" > /dev/null # into the page cache
    for NAME in $COMMANDS; do
        for ROUND in $(seq "$ROUNDS"); do
            run before "$NAME" "$TRACE"
            run after "$NAME" "$TRACE"
            if [ "$ROUND" = 1 ] && ! cmp -s "$OUT/before.$NAME.out" "$OUT/after.$NAME.out"; then
                echo "the two builds disagree on $NAME of $TRACE:" >&2
                diff "$OUT/before.$NAME.out" "$OUT/after.$NAME.out" | head -n 10 >&2
                exit 1
            fi
        done
    done
    rm -rf "$OUT"/eval-*
    sync
    sleep "$SETTLE"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$OUT/times" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
runs = {}
for who, name, trace, size, wall, user, system, peak in rows:
    runs.setdefault((trace, int(size), name, who), []).append((float(user) + float(system), int(peak) / 1024))
cpu = {}
print(f"{'trace':<34}{'command':<13}{'CPU s before → after':>24}{'ratio':>7}{'MB/CPU-s':>18}{'peak MB':>18}")
for (trace, size, name, who) in sorted(runs):
    if who != "after":
        continue
    before, after = runs[(trace, size, name, "before")], runs[(trace, size, name, "after")]
    b, a = statistics.median(c for c, _ in before), statistics.median(c for c, _ in after)
    pb, pa = max(p for _, p in before), max(p for _, p in after)
    cpu[(trace, name, "before")], cpu[(trace, name, "after")] = b, a
    mb = size / 1e6
    print(f"{trace:<34}{name:<13}{b:>11.2f} → {a:<10.2f}{a / b:>7.2f}{mb / b:>8.0f} → {mb / a:<7.0f}{pb:>8.1f} → {pa:<7.1f}")
for trace in sorted({t for t, _, _ in cpu}):
    for who in ("before", "after"):
        if (trace, "replay", who) in cpu and (trace, "eval_traces", who) in cpu:
            ratio = cpu[(trace, "eval_traces", who)] / cpu[(trace, "replay", who)]
            print(f"{trace} {who}: eval --traces / replay CPU {ratio:.2f}x")
            if (trace, "eval_check", who) in cpu:
                check = cpu[(trace, "eval_check", who)] / cpu[(trace, "replay", who)]
                print(f"{trace} {who}:   of which the load check {check:.2f}x, the rest {ratio - check:.2f}x")
PY
