"""Counts the runs of one trace per exit reason with DuckDB, as `looptrace report` counts them
(a run without an ending is `incomplete`; a bare `internal_error` event ends its run), reading
the JSONL with `read_ndjson` and only the three columns the counts need declared, so DuckDB
neither samples the file for a schema nor builds the other fields. For bench/duckdb_compare.sh.

    python3 bench/duckdb_counts.py TRACE [THREADS]

Prints `reason=runs` pairs in report's order, then the seconds the query took.
"""

import sys
import time

import duckdb

ORDER = ("finished", "max_steps_exceeded", "invalid_model_output", "internal_error", "incomplete")

QUERY = """
SELECT coalesce(reason, 'incomplete') AS reason, count(*) AS runs
FROM (
    SELECT run_id,
        max(CASE event_type WHEN 'run_finished' THEN exit_reason
                            WHEN 'internal_error' THEN 'internal_error' END) AS reason
    FROM read_ndjson(?, columns = {run_id: 'VARCHAR', event_type: 'VARCHAR', exit_reason: 'VARCHAR'},
                     maximum_object_size = 16777216)
    GROUP BY run_id
)
GROUP BY 1
"""


def main():
    trace = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    began = time.perf_counter()
    counts = dict(con.execute(QUERY, [trace]).fetchall())
    seconds = time.perf_counter() - began
    print(" ".join(f"{reason}={counts.get(reason, 0)}" for reason in ORDER))
    print(f"query {seconds:.3f} s")


if __name__ == "__main__":
    main()
