"""Baseline for bench/import.sh: the least a script does to count runs in Claude Code sessions,
json.loads of every line and a count of the prompts (user lines whose content is text, other than
the marker of an interrupted request)."""

import json
import sys
from pathlib import Path


def main(folder):
    prompts = 0
    lines = 0
    for path in sorted(Path(folder).rglob("*.jsonl")):
        with open(path, "rb") as session:
            for line in session:
                if not line.strip():
                    continue
                record = json.loads(line)
                lines += 1
                if record.get("type") != "user":
                    continue
                content = (record.get("message") or {}).get("content")
                if isinstance(content, str):
                    prompts += 1
                elif isinstance(content, list) and not any(
                    isinstance(b, dict)
                    and (
                        b.get("type") == "tool_result"
                        or str(b.get("text", "")).startswith("[Request interrupted")
                    )
                    for b in content
                ):
                    prompts += 1
    print(f"lines {lines} prompts {prompts}")


if __name__ == "__main__":
    main(sys.argv[1])
