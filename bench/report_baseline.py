"""Baseline for bench/report.sh: the exit-reason counts of `looptrace report`, with json.loads per line."""

import json
import sys
from collections import Counter

REASONS = ["finished", "max_steps_exceeded", "invalid_model_output", "internal_error", "incomplete"]


def main(paths):
    exits = Counter()
    open_runs = set()
    for path in paths:
        with open(path, "rb") as trace:
            for line in trace:
                if not line.strip():
                    continue
                event = json.loads(line)
                run_id, kind = event["run_id"], event["event_type"]
                if kind == "run_started":
                    if run_id in open_runs:
                        exits["incomplete"] += 1
                    open_runs.add(run_id)
                elif kind in ("run_finished", "internal_error"):
                    exits[event.get("exit_reason") or "internal_error"] += 1
                    open_runs.discard(run_id)
    exits["incomplete"] += len(open_runs)
    for reason in REASONS:
        print(reason, exits[reason])


if __name__ == "__main__":
    main(sys.argv[1:])
