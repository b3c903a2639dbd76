"""Runs every ```sql block of docs/sql.md, in order, on one trace file with DuckDB, and prints the
seconds each block took and the exit reasons it counted (for bench/sql.sh).

    python3 bench/sql_queries.py TRACE
"""

import json
import pathlib
import sys
import time

import duckdb

FILES = "'traces/*.jsonl'"


def blocks(page):
    text = page.read_text()
    out = []
    rest = text
    while "```sql\n" in rest:
        body = rest.split("```sql\n", 1)[1]
        sql, rest = body.split("```", 1)
        out.append((sql[3:].split(":", 1)[0], sql))
    return out


def main():
    trace = sys.argv[1]
    page = pathlib.Path(__file__).resolve().parent.parent / "docs" / "sql.md"
    con = duckdb.connect()
    timings = {}
    results = {}
    start = time.perf_counter()
    for name, sql in blocks(page):
        if name == "sampled":
            continue  # shows DuckDB's guess; no part of the numbers
        began = time.perf_counter()
        cursor = con.execute(sql.replace(FILES, "'" + trace.replace("'", "''") + "'"))
        rows = cursor.fetchall() if cursor.description else []
        timings[name] = round(time.perf_counter() - began, 3)
        results[name] = rows
    total = time.perf_counter() - start
    print(json.dumps({"seconds": round(total, 3), "blocks": timings}))
    print(" ".join(f"{reason}={runs}" for reason, runs, _ in results["exit_reasons"]))


if __name__ == "__main__":
    main()
