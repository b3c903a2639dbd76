#!/usr/bin/env bash
# Copies seed inputs into fuzz/corpus/<target>/ (gitignored): recorded traces and their lines for
# trace_line, raw model responses for parse_json_action, suites for suite_load.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=fuzz/corpus
mkdir -p "$corpus/trace_line" "$corpus/parse_json_action" "$corpus/suite_load" "$corpus/readers_agree"

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

# The readers' agreement starts from the same traces and lines.
cp "$corpus"/trace_line/* "$corpus/readers_agree/"

for target in trace_line parse_json_action suite_load readers_agree; do
    echo "$target: $(find "$corpus/$target" -type f | wc -l) seeds"
done
