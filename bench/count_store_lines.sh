#!/usr/bin/env bash
# Counts the lines of code of the run store (issue 30's "folder, rerun, lock and leftover code"):
# what creates, reads, folds, copies, locks and prunes `DIR/runs/`, and what a resume or a rerun
# reads of it. Lines of code: not blank, not a comment, not in a file's `#[cfg(test)]` module.
# The merge's coverage proof (`src/eval/merge/`) is left out: it reasons about rows and shards,
# not folders, and would be the same without a run store.
#
#   bench/count_store_lines.sh          # each file, then the total
set -euo pipefail

cd "$(dirname "$0")/.."
FILES=(
  src/eval/store/*.rs
  src/eval/folder_lock.rs
  src/eval/rerun.rs
  src/eval/layout.rs
  src/eval/rows_on_disk.rs
  src/eval/engine/resume.rs
  src/eval/engine/paths.rs
  src/eval/engine/view.rs
  src/cli/gc.rs
  src/cli/run_store_inputs.rs
)
awk '
  FNR == 1 { done = 0; block = 0 }
  done { next }
  /^[[:space:]]*#\[cfg\(test\)\]/ { done = 1; next }
  block { if ($0 ~ /\*\//) block = 0; next }
  /^[[:space:]]*\/\*/ { if ($0 !~ /\*\//) block = 1; next }
  /^[[:space:]]*$/ || /^[[:space:]]*\/\// { next }
  { lines[FILENAME]++; total++ }
  END {
    for (f in lines) printf "%6d %s\n", lines[f], f
    printf "%6d total\n", total
  }
' "${FILES[@]}" | sort -k2 | awk '/ total$/ { last = $0; next } { print } END { print last }'
