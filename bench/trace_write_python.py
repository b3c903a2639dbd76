"""The write-up's JsonlTraceWriter: opens the file in append mode for every event."""
import json
import sys
import time

events = int(sys.argv[1])
path = sys.argv[2]
open(path, "w").close()
record = {"run_id": "run-bench-0001", "step": 1, "event_type": "observation", "tool_name": "calculator",
          "output": "chars=2;sha256=44c8031cb036a7350d8b9b8603af662a4b9cdbd2f96e8d5de5af435c9c35da69",
          "is_error": False, "duration_ms": 0.004}
start = time.perf_counter()
for _ in range(events):
    with open(path, "a", encoding="utf-8", newline="\n") as stream:
        json.dump(record, stream, ensure_ascii=False, separators=(",", ":"))
        stream.write("\n")
rate = events / (time.perf_counter() - start)
print(f"python, reopen: {rate:>13.0f} events/s ({events} events)")
