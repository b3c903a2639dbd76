#!/usr/bin/env python3
"""Writes the many-small-runs trace of the speed benchmarks: the traces of the write-up's Python
loop (bench/python_loop.py) over a generated suite, repeated with new run ids.

    python3 bench/gen_small_runs.py [--tasks 2000] [--copies 120] [--seed 5] OUTPUT
    python3 bench/gen_small_runs.py --full LOOPTRACE OUTPUT

With the defaults: 2,000 runs repeated 120 times, 240,000 runs of a few events each, every
repetition's run ids suffixed with `-cN`, one run after another (each trace file as the loop
wrote it). The same arguments always give the same bytes apart from the loop's `duration_ms`.
The loop writes summary traces, which `report` reads but `replay` refuses; with `--full` the
same suite is run by `LOOPTRACE eval --capture full` instead, for traces that replay.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--copies", type=int, default=120)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--full", metavar="LOOPTRACE", help="record full-capture traces with this looptrace")
    parser.add_argument("output")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        suite = pathlib.Path(scratch, "suite.json")
        out = pathlib.Path(scratch, "out")
        subprocess.run(
            [sys.executable, HERE / "gen_suite.py", "--tasks", str(args.tasks), "--seed", str(args.seed), suite],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        # Both exit 1 when an expectation fails; their traces are what matters here.
        if args.full:
            command = [args.full, "eval", suite, "--out", out, "--capture", "full", "--format", "csv"]
        else:
            command = [sys.executable, HERE / "python_loop.py", suite, out]
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs = []
        # The loop writes OUT/traces/, eval OUT/runs/<eval-id>/traces/.
        for path in sorted(out.glob("**/traces/*.jsonl")):
            runs.append([json.loads(line) for line in path.read_text().splitlines() if line.strip()])
    if not runs:
        print("no traces were written", file=sys.stderr)
        return 1
    written = 0
    with open(args.output, "w", encoding="utf-8") as sink:
        for copy in range(args.copies):
            for events in runs:
                for event in events:
                    line = dict(event, run_id=f"{event['run_id']}-c{copy}")
                    sink.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
                    sink.write("\n")
                written += 1
    print(f"{written} runs, {pathlib.Path(args.output).stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
