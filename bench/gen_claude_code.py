#!/usr/bin/env python3
"""Writes a synthetic corpus of Claude Code session transcripts for benchmarking `report` and
`import` on a foreign format.

    python3 bench/gen_claude_code.py OUT_DIR SIZE [SEED]

SIZE is a byte count (`1073741824`, `512M`, `1G`). The same SIZE and SEED always give the same
files. The shape follows docs/import.md's description of the format: one folder per project
(`OUT_DIR/-home-dev-projectN/`), one `<sessionId>.jsonl` per session, every line a compact JSON
object with `type`, `uuid`, `parentUuid`, `sessionId`, `version`, `cwd`, `gitBranch`, `timestamp`
and `message` (an Anthropic Messages API message). A model response is split over one line per
content block (`thinking`, `text`, `tool_use`) sharing `message.id`; tool results come back as
`user` lines of `tool_result` blocks with the structured `toolUseResult` beside them, as the real
transcripts have. Sub-agent sessions are files of their own with `isSidechain` and `agentId`.

Line sizes are those of real sessions: most lines are a few hundred bytes to a few KB (the
envelope alone is about 400 bytes); about 6% of tool results are 10 to 200 KB (files read, test
and build output), and since the result is written twice (the block and `toolUseResult`) those
lines are 20 to 400 KB. Sessions range from a few KB to about 40 MB. Endings: most prompts end
with a text answer; some are interrupted, some end on an API error, some end with a tool call
left unanswered (a session cut off).
"""

import json
import random
import sys
import time
import uuid
from pathlib import Path

WORDS = (
    "the agent reads file config value returns error check budget tool model step line trace "
    "output answer compute sum total test build fails passes import module function class "
    "struct impl fn let mut self return match if else for while loop async await"
).split()
TOOLS = ["Bash", "Read", "Edit", "Write", "Grep", "Glob", "TodoWrite", "Task", "WebFetch"]


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(float(text[:-1]) * units[text[-1:].upper()])
    return int(text)


class Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        # Text is cut from one long block of words: generating words one by one for a gigabyte
        # would take minutes.
        self.block = " ".join(self.rng.choice(WORDS) for _ in range(200_000))
        self.clock = 1_760_000_000.0

    def text(self, n):
        start = self.rng.randrange(0, len(self.block) - n - 1) if n < len(self.block) - 1 else 0
        out = self.block[start : start + n]
        while len(out) < n:
            out += "\n" + self.block[: n - len(out)]
        return out

    def uuid(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def timestamp(self):
        self.clock += self.rng.uniform(0.2, 20)
        seconds = int(self.clock)
        millis = int((self.clock - seconds) * 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"

    def result_size(self):
        roll = self.rng.random()
        if roll < 0.06:
            return self.rng.randint(10_000, 200_000)
        if roll < 0.30:
            return self.rng.randint(1_000, 8_000)
        return self.rng.randint(20, 1_000)


class Session:
    def __init__(self, gen, project, agent_id=None, parent_session=None):
        self.gen = gen
        self.id = parent_session or gen.uuid()
        self.agent_id = agent_id
        self.cwd = "/home/dev/" + project
        self.parent = None
        self.lines = []
        self.size = 0

    def line(self, kind, message=None, **extra):
        g = self.gen
        uid = g.uuid()
        record = {
            "parentUuid": self.parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.id,
            "version": "2.0.28",
            "gitBranch": "main",
        }
        if self.agent_id is not None:
            record["agentId"] = self.agent_id
        record["type"] = kind
        if message is not None:
            record["message"] = message
        record.update(extra)
        record["uuid"] = uid
        record["timestamp"] = g.timestamp()
        self.parent = uid
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        self.lines.append(text)
        self.size += len(text) + 1

    def prompt(self, text):
        self.line("user", {"role": "user", "content": text})

    def assistant(self, blocks, stop=None):
        g = self.gen
        message_id = "msg_" + g.uuid().replace("-", "")[:24]
        usage = {
            "input_tokens": g.rng.randint(3, 20),
            "cache_creation_input_tokens": g.rng.randint(0, 5000),
            "cache_read_input_tokens": g.rng.randint(0, 90000),
            "output_tokens": g.rng.randint(1, 2000),
            "service_tier": "standard",
        }
        for block in blocks:
            self.line(
                "assistant",
                {
                    "model": "claude-sonnet-4-5-20250929",
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "content": [block],
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                },
                requestId="req_" + g.uuid().replace("-", "")[:24],
            )

    def tool_call(self, name):
        g = self.gen
        call_id = "toolu_" + g.uuid().replace("-", "")[:24]
        if name == "Bash":
            arguments = {"command": "cargo test " + g.text(40), "description": g.text(30)}
        elif name in ("Read", "Write", "Edit"):
            arguments = {"file_path": f"{self.cwd}/src/{g.text(12).replace(' ', '_')}.rs"}
            if name != "Read":
                arguments["content" if name == "Write" else "new_string"] = g.text(
                    g.rng.randint(100, 4000)
                )
        else:
            arguments = {"pattern": g.text(20)}
        return call_id, {"type": "tool_use", "id": call_id, "name": name, "input": arguments}

    def tool_result(self, call_id, name):
        g = self.gen
        content = g.text(g.result_size())
        is_error = g.rng.random() < 0.08
        block = {"tool_use_id": call_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        if name == "Bash":
            structured = {"stdout": content, "stderr": "", "interrupted": False, "isImage": False}
        else:
            structured = {"type": "text", "file": {"filePath": self.cwd, "content": content}}
        self.line("user", {"role": "user", "content": [block]}, toolUseResult=structured)

    def run(self, target):
        """One prompt and its turns; returns when the prompt is done."""
        g = self.gen
        self.prompt(g.text(g.rng.randint(20, 2000)))
        for _ in range(g.rng.randint(1, 30)):
            blocks = []
            if g.rng.random() < 0.5:
                blocks.append({"type": "thinking", "thinking": g.text(g.rng.randint(50, 3000)),
                               "signature": g.text(300).replace(" ", "")})
            if g.rng.random() < 0.4:
                blocks.append({"type": "text", "text": g.text(g.rng.randint(20, 800))})
            name = g.rng.choice(TOOLS)
            call_id, call = self.tool_call(name)
            blocks.append(call)
            self.assistant(blocks, stop="tool_use")
            if self.size >= target and g.rng.random() < 0.5:
                return "cut"  # the session ends here: a tool call left unanswered
            self.tool_result(call_id, name)
        roll = g.rng.random()
        if roll < 0.03:
            self.line(
                "assistant",
                {"role": "assistant", "id": "msg_err", "model": "<synthetic>",
                 "content": [{"type": "text", "text": "API Error: 529 overloaded"}]},
                isApiErrorMessage=True,
            )
        elif roll < 0.08:
            self.prompt([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
        else:
            self.assistant([{"type": "text", "text": g.text(g.rng.randint(20, 2000))}],
                           stop="end_turn")
        return "done"


def session_target(rng):
    roll = rng.random()
    if roll < 0.5:
        return rng.randint(5_000, 500_000)
    if roll < 0.9:
        return rng.randint(500_000, 5_000_000)
    return rng.randint(5_000_000, 40_000_000)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    total = parse_size(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) == 4 else 7
    gen = Gen(seed)
    written = 0
    files = 0
    while written < total:
        project = f"-home-dev-project{gen.rng.randint(1, 12)}"
        folder = out / project
        folder.mkdir(parents=True, exist_ok=True)
        sidechain = gen.rng.random() < 0.15
        session = Session(
            gen,
            project,
            agent_id=gen.uuid()[:8] if sidechain else None,
        )
        target = min(session_target(gen.rng), total - written)
        session.line("file-history-snapshot", None, messageId=gen.uuid(), snapshot={
            "messageId": gen.uuid(), "trackedFileBackups": {}, "timestamp": gen.timestamp()},
            isSnapshotUpdate=False)
        while session.size < target:
            if session.run(target) == "cut":
                break
        name = f"agent-{session.agent_id}.jsonl" if sidechain else f"{session.id}.jsonl"
        with open(folder / name, "w", encoding="utf-8") as f:
            f.write("\n".join(session.lines))
            f.write("\n")
        written += session.size
        files += 1
    print(f"{files} sessions, {written} bytes in {out}")


if __name__ == "__main__":
    main()
