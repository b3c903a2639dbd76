#!/usr/bin/env python3
"""The minimal Python agent loop of the original write-up, run over a looptrace suite.

    python3 bench/python_loop.py SUITE OUT_DIR

It does the work `looptrace eval SUITE --out OUT_DIR` does, the write-up's way: for every task a
FakeModel (scripted `actions`) or a fake raw model behind the strict JSON adapter (`responses`),
the calculator tool with its own argument checks, the run loop with `max_steps`, and a JSONL trace
in OUT_DIR/traces/<id>.jsonl written by a JsonlTraceWriter that opens the file in append mode for
every event. Summaries are `chars=N;sha256=HEX`. The events carry the same fields as looptrace's
summary traces, so both write the same bytes apart from the timings. At the end it checks the
expectations, writes OUT_DIR/results.json and prints the exit-reason counts.

Standard library only (Python 3.11). Replay tasks are not supported.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol, TypeAlias

# --- Run data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    prompt: str


@dataclass(frozen=True)
class ToolCall:
    tool_name: str
    arguments: Mapping[str, object]


@dataclass(frozen=True)
class Finish:
    answer: str


Action: TypeAlias = ToolCall | Finish


@dataclass(frozen=True)
class Observation:
    tool_name: str
    content: str
    is_error: bool = False
    error_kind: str | None = None


@dataclass(frozen=True)
class ModelFeedback:
    content: str
    is_error: bool = True


HistoryItem: TypeAlias = ToolCall | Observation | ModelFeedback


class ExitReason(StrEnum):
    FINISHED = "finished"
    MAX_STEPS_EXCEEDED = "max_steps_exceeded"
    INVALID_MODEL_OUTPUT = "invalid_model_output"
    INTERNAL_ERROR = "internal_error"


@dataclass(frozen=True)
class RunResult:
    exit_reason: ExitReason
    answer: str | None
    steps_used: int
    error: str | None = None


# --- Models --------------------------------------------------------------------------------------


class Model(Protocol):
    def next_action(self, task: Task, history: Sequence[HistoryItem]) -> Action: ...


class InvalidModelOutputError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class FakeModelExhaustedError(RuntimeError):
    pass


class FakeModel:
    """Returns scripted actions in order and records every call."""

    def __init__(self, actions: Sequence[Action]) -> None:
        self._actions = list(actions)
        self.calls: list[tuple[Task, tuple[HistoryItem, ...]]] = []

    def next_action(self, task: Task, history: Sequence[HistoryItem]) -> Action:
        self.calls.append((task, tuple(history)))
        if len(self.calls) > len(self._actions):
            raise FakeModelExhaustedError(
                f"scripted model exhausted after {len(self._actions)} actions"
            )
        return self._actions[len(self.calls) - 1]


class FakeRawJsonModel:
    """Returns scripted raw responses in order and records every call."""

    def __init__(self, responses: Sequence[str]) -> None:
        self._responses = list(responses)
        self.calls: list[tuple[Task, tuple[HistoryItem, ...]]] = []

    def next_response(self, task: Task, history: Sequence[HistoryItem]) -> str:
        self.calls.append((task, tuple(history)))
        if len(self.calls) > len(self._responses):
            raise FakeModelExhaustedError(
                f"scripted model exhausted after {len(self._responses)} responses"
            )
        return self._responses[len(self.calls) - 1]


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _only_fields(record: Mapping[str, object], allowed: tuple[str, ...], action: str) -> None:
    for key in sorted(record):
        if key not in allowed:
            raise InvalidModelOutputError(
                "unexpected_field", f'unexpected field "{key}" in a {action} action'
            )


def _field(record: Mapping[str, object], name: str, kind: type, expected: str) -> object:
    if name not in record:
        raise InvalidModelOutputError("missing_field", f'missing field "{name}"')
    value = record[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidModelOutputError(
            "wrong_field_type",
            f'field "{name}" must be {expected}, got {_type_name(value)}',
        )
    return value


def parse_json_action(raw: str) -> Action:
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as error:
        raise InvalidModelOutputError(
            "invalid_json", f"model output is not valid JSON: {error}"
        ) from None
    if not isinstance(record, dict):
        raise InvalidModelOutputError(
            "not_an_object",
            f"model output must be a JSON object, got {_type_name(record)}",
        )
    action_type = _field(record, "type", str, "a string")
    if action_type == "tool_call":
        _only_fields(record, ("type", "tool_name", "arguments"), "tool_call")
        tool_name = _field(record, "tool_name", str, "a string")
        arguments = _field(record, "arguments", dict, "an object")
        return ToolCall(tool_name=tool_name, arguments=arguments)  # type: ignore[arg-type]
    if action_type == "finish":
        _only_fields(record, ("type", "answer"), "finish")
        return Finish(answer=_field(record, "answer", str, "a string"))  # type: ignore[arg-type]
    raise InvalidModelOutputError(
        "unknown_action_type",
        f'unknown action type "{action_type}": expected "tool_call" or "finish"',
    )


class JsonModelAdapter:
    def __init__(self, raw_model: FakeRawJsonModel) -> None:
        self._raw_model = raw_model

    def next_action(self, task: Task, history: Sequence[HistoryItem]) -> Action:
        return parse_json_action(self._raw_model.next_response(task, history))


# --- Tools ---------------------------------------------------------------------------------------


class ToolError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


ToolFunction: TypeAlias = Callable[[Mapping[str, object]], str]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: Mapping[str, object]
    output_description: str
    error_description: str


@dataclass(frozen=True)
class ToolDefinition:
    spec: ToolSpec
    handler: ToolFunction


CALCULATOR_SPEC = ToolSpec(
    name="calculator",
    description=(
        "Perform one binary arithmetic operation. Supports add, subtract, multiply, and divide."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "left": {"type": "number"},
            "operation": {
                "type": "string",
                "enum": ["add", "subtract", "multiply", "divide"],
            },
            "right": {"type": "number"},
        },
        "required": ["left", "operation", "right"],
        "additionalProperties": False,
    },
    output_description="The arithmetic result encoded as a string.",
    error_description=(
        "Rejects missing or extra arguments, invalid types, unsupported operations, "
        "and division by zero."
    ),
)


def _number(arguments: Mapping[str, object], name: str) -> int | float:
    if name not in arguments:
        raise ToolError("invalid_arguments", f'missing argument "{name}"')
    value = arguments[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError("invalid_arguments", f'argument "{name}" must be a number')
    return value


def run_calculator(arguments: Mapping[str, object]) -> str:
    for key in arguments:
        if key not in ("left", "operation", "right"):
            raise ToolError("invalid_arguments", f'unexpected argument "{key}"')
    left = _number(arguments, "left")
    right = _number(arguments, "right")
    if "operation" not in arguments:
        raise ToolError("invalid_arguments", 'missing argument "operation"')
    operation = arguments["operation"]
    if not isinstance(operation, str):
        raise ToolError("invalid_arguments", 'argument "operation" must be a string')
    if operation == "add":
        result = left + right
    elif operation == "subtract":
        result = left - right
    elif operation == "multiply":
        result = left * right
    elif operation == "divide":
        if right == 0:
            raise ToolError("division_by_zero", "division by zero")
        result = left / right
    else:
        raise ToolError("unsupported_operation", f"unsupported operation: {operation}")
    if isinstance(result, float) and not math.isfinite(result):
        raise ToolError("non_finite_result", "result is not a finite number")
    return str(result)


TOOL_REGISTRY = {
    CALCULATOR_SPEC.name: ToolDefinition(spec=CALCULATOR_SPEC, handler=run_calculator),
}


def get_tool_specs() -> list[ToolSpec]:
    return [definition.spec for definition in TOOL_REGISTRY.values()]


def execute_tool(call: ToolCall) -> Observation:
    definition = TOOL_REGISTRY.get(call.tool_name)
    if definition is None:
        return Observation(
            tool_name=call.tool_name,
            content=f"unknown tool: {call.tool_name}",
            is_error=True,
            error_kind="unknown_tool",
        )
    try:
        content = definition.handler(call.arguments)
    except ToolError as error:
        return Observation(
            tool_name=call.tool_name, content=str(error), is_error=True, error_kind=error.kind
        )
    return Observation(tool_name=call.tool_name, content=content)


# --- Traces --------------------------------------------------------------------------------------


def summarize(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"chars={len(text)};sha256={digest}"


def _ms(seconds: float) -> float:
    return round(seconds * 1e6) / 1e3


class JsonlTraceWriter:
    def __init__(self, path: Path) -> None:
        self._path = path

    def append(self, record: Mapping[str, object]) -> None:
        with self._path.open("a", encoding="utf-8", newline="\n") as stream:
            json.dump(record, stream, ensure_ascii=False, separators=(",", ":"))
            stream.write("\n")


@dataclass
class RunStats:
    tool_calls: int = 0
    tool_errors: int = 0
    feedback: int = 0
    steps_used: int = 0
    error_kind: str | None = None
    history: list[HistoryItem] = field(default_factory=list)


def run_agent_result(
    run_id: str,
    task: Task,
    model: Model,
    writer: JsonlTraceWriter,
    stats: RunStats,
    *,
    max_steps: int = 5,
) -> RunResult:
    history = stats.history

    def finished(result: RunResult, error_kind: str | None) -> RunResult:
        record: dict[str, object] = {
            "run_id": run_id,
            "step": result.steps_used,
            "event_type": "run_finished",
        }
        if result.exit_reason != ExitReason.FINISHED:
            stats.error_kind = error_kind
            record["error_kind"] = error_kind
        record["exit_reason"] = str(result.exit_reason)
        record["steps_used"] = result.steps_used
        if result.error is not None:
            record["error"] = summarize(result.error)
        writer.append(record)
        return result

    writer.append(
        {
            "run_id": run_id,
            "step": 0,
            "event_type": "run_started",
            "schema": "looptrace.trace/1",
            "capture": "summary",
            "hash": "sha256",
            "max_steps": max_steps,
            "input_summary": summarize(task.prompt),
        }
    )
    for step in range(1, max_steps + 1):
        stats.steps_used = step
        started = time.perf_counter()
        try:
            action = model.next_action(task, history)
        except InvalidModelOutputError as error:
            feedback = ModelFeedback(content=str(error))
            writer.append(
                {
                    "run_id": run_id,
                    "step": step,
                    "event_type": "model_feedback",
                    "output": summarize(feedback.content),
                    "is_error": True,
                    "error_kind": error.kind,
                    "duration_ms": _ms(time.perf_counter() - started),
                }
            )
            stats.feedback += 1
            history.append(feedback)
            if step == max_steps:
                return finished(
                    RunResult(
                        exit_reason=ExitReason.INVALID_MODEL_OUTPUT,
                        answer=None,
                        steps_used=step,
                        error=str(error),
                    ),
                    error.kind,
                )
            continue
        except Exception as error:
            # A bug or a broken model: record internal_error, then re-raise.
            finished(
                RunResult(
                    exit_reason=ExitReason.INTERNAL_ERROR,
                    answer=None,
                    steps_used=step,
                    error=f"model failed: {error}",
                ),
                "model_failure",
            )
            raise
        duration = _ms(time.perf_counter() - started)
        if isinstance(action, Finish):
            writer.append(
                {
                    "run_id": run_id,
                    "step": step,
                    "event_type": "model_action",
                    "action_type": "finish",
                    "output": summarize(action.answer),
                    "duration_ms": duration,
                }
            )
            return finished(
                RunResult(exit_reason=ExitReason.FINISHED, answer=action.answer, steps_used=step),
                None,
            )
        writer.append(
            {
                "run_id": run_id,
                "step": step,
                "event_type": "model_action",
                "action_type": "tool_call",
                "tool_name": action.tool_name,
                "argument_keys": sorted(action.arguments),
                "duration_ms": duration,
            }
        )
        started = time.perf_counter()
        observation = execute_tool(action)
        record: dict[str, object] = {
            "run_id": run_id,
            "step": step,
            "event_type": "observation",
            "tool_name": observation.tool_name,
            "output": summarize(observation.content),
            "is_error": observation.is_error,
        }
        if observation.error_kind is not None:
            record["error_kind"] = observation.error_kind
        record["duration_ms"] = _ms(time.perf_counter() - started)
        writer.append(record)
        stats.tool_calls += 1
        stats.tool_errors += observation.is_error
        history.append(action)
        history.append(observation)
    return finished(
        RunResult(
            exit_reason=ExitReason.MAX_STEPS_EXCEEDED,
            answer=None,
            steps_used=max_steps,
            error=f"no finish within max_steps={max_steps}",
        ),
        "budget_exhausted",
    )


# --- The batch -----------------------------------------------------------------------------------


def action_from_record(record: Mapping[str, object]) -> Action:
    if record.get("type") == "finish":
        return Finish(answer=str(record["answer"]))
    return ToolCall(tool_name=str(record["tool_name"]), arguments=dict(record["arguments"]))  # type: ignore[call-overload]


def check(expect: Mapping[str, object], result: RunResult) -> tuple[str, list[str]]:
    if not expect:
        return "none", []
    failures = []
    if "exit_reason" in expect and expect["exit_reason"] != result.exit_reason:
        failures.append(f"expected exit reason {expect['exit_reason']}, got {result.exit_reason}")
    if "answer" in expect and expect["answer"] != result.answer:
        failures.append("the answer differs")
    if "answer_contains" in expect and str(expect["answer_contains"]) not in (result.answer or ""):
        failures.append("the answer lacks the expected text")
    if "max_steps_used" in expect and result.steps_used > int(expect["max_steps_used"]):  # type: ignore[call-overload]
        failures.append(f"used {result.steps_used} steps")
    return ("failed" if failures else "met"), failures


def run_task(spec: Mapping[str, object], default_steps: int, traces: Path) -> dict[str, object]:
    started = time.perf_counter()
    task_id = str(spec["id"])
    task = Task(prompt=str(spec["prompt"]))
    max_steps = int(spec.get("max_steps", default_steps))  # type: ignore[call-overload]
    source: Mapping[str, object] = spec["model"]  # type: ignore[assignment]
    model: Model
    if "responses" in source:
        kind = "responses"
        model = JsonModelAdapter(FakeRawJsonModel(source["responses"]))  # type: ignore[arg-type]
    elif "actions" in source:
        kind = "actions"
        model = FakeModel([action_from_record(a) for a in source["actions"]])  # type: ignore[attr-defined]
    else:
        raise SystemExit(f"task {task_id}: only `responses` and `actions` models are supported")
    writer = JsonlTraceWriter(traces / f"{task_id}.jsonl")
    stats = RunStats()
    try:
        result = run_agent_result(task_id, task, model, writer, stats, max_steps=max_steps)
    except Exception as error:  # noqa: BLE001 - one task's crash must not stop the batch
        result = RunResult(
            exit_reason=ExitReason.INTERNAL_ERROR,
            answer=None,
            steps_used=stats.steps_used,
            error=f"model failed: {error}",
        )
    verdict, failures = check(spec.get("expect", {}), result)  # type: ignore[arg-type]
    entry: dict[str, object] = {
        "id": task_id,
        "model": kind,
        "exit_reason": str(result.exit_reason),
        "steps_used": result.steps_used,
        "max_steps": max_steps,
    }
    if result.answer is not None:
        entry["answer"] = summarize(result.answer)
    entry.update(
        tool_calls=stats.tool_calls,
        tool_errors=stats.tool_errors,
        feedback=stats.feedback,
        duration_ms=_ms(time.perf_counter() - started),
    )
    if result.exit_reason != ExitReason.FINISHED:
        entry["error_kind"] = stats.error_kind
        if result.error is not None:
            entry["error"] = summarize(result.error)
    entry["expectation"] = verdict
    if failures:
        entry["failures"] = failures
    entry["trace"] = f"traces/{task_id}.jsonl"
    return entry


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    suite_path, out = Path(sys.argv[1]), Path(sys.argv[2])
    suite = json.loads(suite_path.read_text(encoding="utf-8"))
    default_steps = int(suite.get("defaults", {}).get("max_steps", 5))
    traces = out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    get_tool_specs()
    results = [run_task(spec, default_steps, traces) for spec in suite["tasks"]]
    exit_reasons = {reason.value: 0 for reason in ExitReason}
    expectations = {"met": 0, "failed": 0, "none": 0}
    for entry in results:
        exit_reasons[entry["exit_reason"]] += 1  # type: ignore[index]
        expectations[entry["expectation"]] += 1  # type: ignore[index]
    totals = {"tasks": len(results), "exit_reasons": exit_reasons, "expectations": expectations}
    document = {"suite": {"name": suite["name"], "tasks": len(results)}, "totals": totals, "tasks": results}
    (out / "results.json").write_text(
        json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    print(json.dumps(totals))
    return 1 if expectations["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
