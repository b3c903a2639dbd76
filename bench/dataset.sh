#!/usr/bin/env bash
# Measures evaluating a dataset (`"dataset"` in a suite): wall time, CPU time (user + system) and
# peak resident memory (`/usr/bin/time`) of `looptrace eval` over generated JSONL datasets of
# 100,000 and 1,000,000 rows (`What is A + B?`, a scripted model that answers right nine times in
# ten), each run with `--only` one row (checking every row: the floor of an evaluation) and over
# every row.
#
#   bench/dataset.sh                  # 100,000 and 1,000,000 rows, 1 run of each
#   ROWS="1000 10000" RUNS=3 bench/dataset.sh
#   LOOPTRACE=/path/to/other/looptrace bench/dataset.sh   # another build, same datasets
#
# Outputs go under bench/out/dataset (or BENCH_OUT): the whole 1,000,000-row evaluation writes
# about 1.5 GB of traces (`--trace-layout single --trace-flush run`). Never run in CI.
set -euo pipefail

cd "$(dirname "$0")/.."
ROWS=${ROWS:-100000 1000000}
RUNS=${RUNS:-1}
OUT=${BENCH_OUT:-bench/out/dataset}
LOOPTRACE=${LOOPTRACE:-${CARGO_TARGET_DIR:-target}/release/looptrace}

echo "== building (release)" >&2
cargo build --release --quiet --bin looptrace
mkdir -p "$OUT"
for n in $ROWS; do
  python3 - "$n" "$OUT" <<'PY'
import json, random, sys
n, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(5)
with open(f"{out}/rows-{n}.jsonl", "w") as rows:
    for i in range(n):
        a, b = rng.randint(0, 999), rng.randint(0, 999)
        reply = str(a + b) if rng.random() < 0.9 else str(a + b + 1)
        rows.write(json.dumps({"id": f"q{i:07d}", "question": f"What is {a} + {b}?",
                               "answer": str(a + b), "reply": reply}) + "\n")
suite = {"name": f"sums-{n}", "dataset": {
    "path": f"rows-{n}.jsonl", "id": "{id}", "prompt": "Answer with the number only: {question}",
    "model": {"actions": [{"type": "finish", "answer": "{reply}"}]},
    "expect": {"answer": "{answer}"}}}
json.dump(suite, open(f"{out}/suite-{n}.json", "w"), indent=1)
PY
done

measure() {
  local name=$1
  shift
  local walls=() cpus=() peaks=()
  for ((run = 0; run < RUNS; run++)); do
    rm -rf "$OUT/run"
    /usr/bin/time -f '%e %U %S %M' -o "$OUT/time" "$LOOPTRACE" eval "$@" --jobs 2 --out "$OUT/run" \
      -q --format json --trace-layout single --trace-flush run >/dev/null 2>&1 || true
    read -r wall user sys peak < <(tail -1 "$OUT/time")
    walls+=("$wall")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')")
    peaks+=("$peak")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  printf '%-36s %8.2f s wall %8.2f s CPU %9.1f MB\n' "$name" "$(median "${walls[@]}")" \
    "$(median "${cpus[@]}")" "$(awk -v k="$(median "${peaks[@]}")" 'BEGIN { print k / 1024 }')"
}

echo
echo "--jobs 2, $(nproc) cores; medians of $RUNS runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $ROWS; do
  measure "$n rows, --only one row" "$OUT/suite-$n.json" --only q0000003
  measure "$n rows, every row" "$OUT/suite-$n.json"
done
rm -rf "$OUT/run" "$OUT/time"
