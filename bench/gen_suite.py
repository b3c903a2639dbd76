#!/usr/bin/env python3
"""Writes a large looptrace suite for the eval benchmark.

    python3 bench/gen_suite.py [--tasks N] [--seed S] [--tasks-file] OUTPUT

With --tasks-file the same tasks go to `tasks.jsonl` beside OUTPUT, one per line, and OUTPUT
names it (`"tasks_file": "tasks.jsonl"`): the streamed form of the same suite.

The same N and seed always give the same file. The mix follows sample_traces/suite.json:
scripted `actions` tasks and raw `responses` tasks that call the calculator and finish, runs
that recover after invalid output, tool errors (unknown tool, division by zero, bad arguments),
budget exhaustion, output that never becomes valid, scripts that run out (internal errors) and
bare finishes. Every task carries the expectation its outcome should meet.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

OPERATIONS = ("add", "subtract", "multiply", "divide")
SYMBOLS = {"add": "+", "subtract": "-", "multiply": "×", "divide": "/"}

# (kind, weight): shares of the suite, in percent.
MIX = (
    ("raw_calc", 28),
    ("scripted_calc", 24),
    ("raw_recovers", 10),
    ("scripted_two_calcs", 10),
    ("scripted_tool_error_then_finish", 7),
    ("scripted_budget", 8),
    ("raw_never_valid", 6),
    ("raw_script_too_short", 3),
    ("scripted_bad_arguments", 2),
    ("scripted_finish_only", 2),
)

INVALID_OUTPUTS = (
    "Sure! The answer is {r}.",
    "I think it is {r}.",
    '{{"type":"finish"}}',
    '{{"type":"answer","answer":"{r}"}}',
    '{{"type":"tool_call","tool_name":"calculator"}}',
    '{{"type":"finish","answer":{r}}}',
    '{{"type":"finish","answer":"{r}","confidence":0.9}}',
    "[1, 2, 3]",
)


def number(rng: random.Random) -> int | float:
    if rng.random() < 0.2:
        return round(rng.uniform(-100, 100), rng.choice((1, 2)))
    return rng.randint(-50, 500)


def py_result(left: int | float, op: str, right: int | float) -> str:
    """The calculator's answer as Python prints it (the answer text, not checked by the tool)."""
    if op == "add":
        return str(left + right)
    if op == "subtract":
        return str(left - right)
    if op == "multiply":
        return str(left * right)
    return str(left / right) if right != 0 else "undefined"


def call(left: object, op: object, right: object) -> dict:
    return {
        "type": "tool_call",
        "tool_name": "calculator",
        "arguments": {"left": left, "operation": op, "right": right},
    }


def finish(answer: str) -> dict:
    return {"type": "finish", "answer": answer}


def raw(action: dict) -> str:
    return json.dumps(action, ensure_ascii=False, separators=(",", ":"))


def calculation(rng: random.Random) -> tuple[int | float, str, int | float, str]:
    op = rng.choice(OPERATIONS)
    left, right = number(rng), number(rng)
    if op == "divide" and right == 0:
        right = 7
    return left, op, right, py_result(left, op, right)


def task(rng: random.Random, index: int, kind: str) -> dict:
    left, op, right, result = calculation(rng)
    prompt = f"compute {left} {SYMBOLS[op]} {right}"
    t: dict = {"id": f"{kind.replace('_', '-')}-{index:06d}", "prompt": prompt}
    if kind == "raw_calc":
        answer = f"{left} {SYMBOLS[op]} {right} = {result}"
        t["model"] = {"responses": [raw(call(left, op, right)), raw(finish(answer))]}
        t["expect"] = {"exit_reason": "finished", "answer_contains": result, "max_steps_used": 2}
    elif kind == "scripted_calc":
        t["model"] = {"actions": [call(left, op, right), finish(result)]}
        t["expect"] = {"exit_reason": "finished", "answer": result}
    elif kind == "raw_recovers":
        bad = rng.choice(INVALID_OUTPUTS).format(r=result)
        t["model"] = {"responses": [bad, raw(call(left, op, right)), raw(finish(result))]}
        t["expect"] = {"exit_reason": "finished", "answer": result}
    elif kind == "scripted_two_calcs":
        left2, op2, right2, result2 = calculation(rng)
        t["prompt"] = f"{prompt}, then {left2} {SYMBOLS[op2]} {right2}"
        t["model"] = {
            "actions": [
                call(left, op, right),
                call(left2, op2, right2),
                finish(f"{result} and {result2}"),
            ]
        }
        t["expect"] = {"exit_reason": "finished", "answer_contains": result2}
    elif kind == "scripted_tool_error_then_finish":
        t["prompt"] = f"what is {left} / 0?"
        t["model"] = {"actions": [call(left, "divide", 0), finish("it is undefined")]}
        t["expect"] = {"exit_reason": "finished", "answer_contains": "undefined"}
    elif kind == "scripted_budget":
        t["prompt"] = "keep adding ones"
        t["max_steps"] = 3
        t["model"] = {
            "actions": [
                call(1, "add", 1),
                {
                    "type": "tool_call",
                    "tool_name": "search",
                    "arguments": {"query": "next number"},
                },
                call(2, "divide", 0),
            ]
        }
        t["expect"] = {"exit_reason": "max_steps_exceeded"}
    elif kind == "raw_never_valid":
        t["max_steps"] = 2
        t["model"] = {
            "responses": [
                rng.choice(INVALID_OUTPUTS).format(r=result),
                rng.choice(INVALID_OUTPUTS).format(r=result),
            ]
        }
        t["expect"] = {"exit_reason": "invalid_model_output"}
    elif kind == "raw_script_too_short":
        t["prompt"] = f"{prompt}, then check it"
        t["model"] = {"responses": [raw(call(left, op, right))]}
        t["expect"] = {"exit_reason": "internal_error"}
    elif kind == "scripted_bad_arguments":
        bad = rng.choice(
            (
                {"left": left, "operation": op},
                {"left": str(left), "operation": op, "right": right},
                {"left": left, "operation": op, "right": right, "precision": 2},
                {"left": left, "operation": "power", "right": right},
            )
        )
        t["model"] = {
            "actions": [
                {"type": "tool_call", "tool_name": "calculator", "arguments": bad},
                call(left, op, right),
                finish(result),
            ]
        }
        t["expect"] = {"exit_reason": "finished", "answer": result, "max_steps_used": 3}
    elif kind == "scripted_finish_only":
        t["prompt"] = "say hello"
        t["model"] = {"actions": [finish("hello")]}
    else:
        raise ValueError(kind)
    return t


def suite(tasks: int, seed: int) -> dict:
    rng = random.Random(seed)
    kinds = [kind for kind, _ in MIX]
    weights = [weight for _, weight in MIX]
    return {
        "name": f"bench-{tasks}",
        "defaults": {"max_steps": 5, "capture": "summary"},
        "tasks": [task(rng, i, rng.choices(kinds, weights)[0]) for i in range(tasks)],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--tasks-file", action="store_true")
    args = parser.parse_args()
    if args.tasks < 1:
        parser.error("--tasks must be at least 1")
    whole = suite(args.tasks, args.seed)
    if args.tasks_file:
        lines = os.path.join(os.path.dirname(os.path.abspath(args.output)), "tasks.jsonl")
        with open(lines, "w", encoding="utf-8", newline="\n") as out:
            for one in whole.pop("tasks"):
                out.write(json.dumps(one, ensure_ascii=False, separators=(",", ":")) + "\n")
        whole["tasks_file"] = "tasks.jsonl"
    with open(args.output, "w", encoding="utf-8", newline="\n") as out:
        json.dump(whole, out, ensure_ascii=False, indent=1)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
