#!/usr/bin/env bash
# Copies seed inputs into fuzz/corpus/<target>/ (gitignored): recorded traces and their lines for
# trace_line and readers_agree, raw model responses for parse_json_action, suites for suite_load,
# other agents' trajectories for import.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=fuzz/corpus
mkdir -p "$corpus/trace_line" "$corpus/parse_json_action" "$corpus/suite_load" "$corpus/readers_agree" \
    "$corpus/import"

# Whole trace files, then each of their lines alone.
for file in sample_traces/*.jsonl tests/bad_inputs/trace_*.jsonl; do
    [ -f "$file" ] || continue
    [ "$(stat -c %s "$file")" -le 65536 ] || continue
    cp "$file" "$corpus/trace_line/$(basename "$file")"
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        printf '%s\n' "$line" >"$corpus/trace_line/$(basename "$file" .jsonl).line$n"
    done <"$file"
done

# One raw response per seed.
for file in sample_traces/responses.txt tests/fixtures/responses/*.txt tests/bad_inputs/responses_*.txt; do
    [ -f "$file" ] || continue
    [ "$(stat -c %s "$file")" -le 65536 ] || continue
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        [ -n "$line" ] || continue
        printf '%s' "$line" >"$corpus/parse_json_action/$(basename "$file" .txt).line$n"
    done <"$file"
done

# Suites, good and bad.
for file in sample_traces/*.json tests/fixtures/*/*.json tests/bad_inputs/suite_*.json; do
    [ -f "$file" ] || continue
    [ "$(stat -c %s "$file")" -le 65536 ] || continue
    cp "$file" "$corpus/suite_load/$(basename "$file")"
done
# Six tasks that start alike, on one line and indented: suites the loader cuts into parts.
task='{"id": "tN", "prompt": "p", "model": {"actions": [{"type": "tool_call", "tool_name": "calculator", "arguments": {"left": N, "operation": "add", "right": 1}}, {"type": "finish", "answer": "a"}]}}'
tasks=$(for n in 0 1 2 3 4 5; do printf '%s' "${task//N/$n}"; [ "$n" = 5 ] || printf ', '; done)
printf '{"name": "s", "tasks": [%s]}\n' "$tasks" >"$corpus/suite_load/parts-one-line.json"
tasks=$(for n in 0 1 2 3 4 5; do printf '\n  %s' "${task//N/$n}"; [ "$n" = 5 ] || printf ','; done)
printf '{\n "name": "s",\n "tasks": [%s\n ]\n}\n' "$tasks" >"$corpus/suite_load/parts-indented.json"

# The readers' agreement starts from the same traces and lines.
cp "$corpus"/trace_line/* "$corpus/readers_agree/"

# Every importer's fixtures (the generated ones, zstd `.eval` archives included; the crafted zip
# bombs) and the sample traces, each behind the byte that makes the import
# target show it under a file name of its kind (the order of NAMES in fuzz_targets/import.rs).
name_byte() {
    case "$1" in
        *exit_statuses_*.yaml) echo 5 ;;
        *.traj.json) echo 2 ;;
        *.traj) echo 1 ;;
        *.eval) echo 3 ;;
        rollout-*.jsonl) echo 6 ;;
        *trace.json) echo 7 ;;
        *.json) echo 4 ;;
        *) echo 0 ;;
    esac
}
# Spans from real instrumentations (tests/fixtures/otel-import/<writer>/<case>) share case names,
# so each seed is named by its folder too.
for file in tests/fixtures/import/*/* tests/fixtures/import/*/*/* tests/fixtures/archives/*.eval \
    tests/fixtures/otel-import/*/* sample_traces/*.jsonl; do
    [ -f "$file" ] || continue
    [ "$(stat -c %s "$file")" -le 65536 ] || continue
    base=$(basename "$file")
    seed="$(basename "$(dirname "$file")")-$base"
    { printf "\\$(printf '%03o' "$(name_byte "$base")")"; cat "$file"; } >"$corpus/import/$seed"
done

for target in trace_line parse_json_action suite_load readers_agree import; do
    echo "$target: $(find "$corpus/$target" -type f | wc -l) seeds"
done
