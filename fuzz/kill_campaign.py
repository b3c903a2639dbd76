#!/usr/bin/env python3
"""Kills evaluations with SIGKILL at random moments and checks that `--resume` and
`--rerun-failed` still end where an uninterrupted run ends.

Mode `corpus` resumes `eval --traces` of a corpus recorded from the suite (written many runs at a
time: a kill may cut off a batch of finished runs, never leave a row without its run).

Each trial starts an evaluation, kills it after a random delay, then runs it again with
`--resume` (or the same `--rerun-failed`), killing some of those attempts too, until one
finishes. After every kill, each run the folder's `results.json` names (if it has one) must be in
its trace; at the end the results must equal the uninterrupted run's (apart from run ids,
timings and trace paths), `report DIR` must count exactly the runs the results name, each
complete, and after `looptrace gc DIR` nothing a crash left is there.

    fuzz/kill_campaign.py                       # resume and rerun, 40 trials each
    fuzz/kill_campaign.py --mode corpus --trials 20
    fuzz/kill_campaign.py --mode rerun --trials 100 --tasks 5000 --seed 7

Uses target/release/looptrace (built first) unless LOOPTRACE names a binary. Writes under
fuzz/out/kill/ (gitignored). Exit 1 when a trial ends anywhere else.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYOUTS = [
    [],
    ["--trace-layout", "single"],
    ["--trace-layout", "single", "--trace-flush", "run"],
    ["--repeat", "2"],
]
# `eval --traces`: its default (one trace file, runs written in batches), each run's events written
# at its end, and a file per run.
CORPUS_LAYOUTS = [
    [],
    ["--trace-flush", "run"],
    ["--trace-layout", "per-task"],
]
# What differs between two runs of the same tasks.
VOLATILE = ("run_id", "duration_ms", "started_at", "trace", "carried_over")


def looptrace():
    binary = os.environ.get("LOOPTRACE")
    if binary:
        return binary
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "--bin", "looptrace"], cwd=ROOT, check=True
    )
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "looptrace")


def rows(folder):
    with open(os.path.join(folder, "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    kept = [{k: v for k, v in row.items() if k not in VOLATILE} for row in results["tasks"]]
    return results["totals"], kept, {row["run_id"] for row in results["tasks"]}


def traces_problem(binary, folder, layout, run_ids):
    """What is wrong with the folder's traces, or None."""
    # Nothing below `runs/` is ever written aside; `gc` removes the unsealed runs of killed
    # attempts and the temporary file a kill while the view was replaced left.
    gc = subprocess.run([binary, "gc", folder], capture_output=True)
    if gc.returncode != 0:
        return f"gc exited {gc.returncode}: {gc.stderr.decode()[-300:]}"
    hidden = [
        os.path.join(root, name)
        for root, _, names in os.walk(os.path.join(folder, "runs"))
        for name in names
        if name.startswith(".")
    ]
    hidden += [name for name in os.listdir(folder) if ".tmp-" in name]
    if hidden:
        return f"left behind: {hidden[:3]}"
    # `report DIR` reads the runs the view names, each row's run once.
    traces = folder
    out = subprocess.run([binary, "report", traces, "-f", "json"], capture_output=True)
    if out.returncode != 0:
        return f"report exited {out.returncode}: {out.stderr.decode()[-300:]}"
    report = json.loads(out.stdout)
    incomplete = sum(
        row["runs"] for row in report["exit_reasons"]["rows"] if row["exit_reason"] == "incomplete"
    )
    if report["input"]["runs"] != len(run_ids) or incomplete or report["warnings"]:
        return f"traces hold {report['input']['runs']} runs for {len(run_ids)} rows, {incomplete} incomplete, warnings {report['warnings'][:2]}"
    return None


def missing_runs(folder):
    """How many runs the folder's results.json names that its traces do not hold (0 without a
    results.json): what a kill may never leave."""
    path = os.path.join(folder, "results.json")
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    held = {}

    def runs_of(trace):
        if trace not in held:
            runs = set()
            try:
                with open(os.path.join(folder, trace), encoding="utf-8") as f:
                    runs = {json.loads(line)["run_id"] for line in f if line.endswith("\n")}
            except FileNotFoundError:
                pass
            held[trace] = runs
        return held[trace]

    return sum(1 for row in results["tasks"] if row["run_id"] not in runs_of(row["trace"]))


def run_killed(first, again, kill_chance, rng, max_delay, folder):
    """Runs `first`, then `again` until one finishes, killing each attempt but the last with
    `kill_chance`. Returns the exit code, standard error, how many attempts were killed, and how
    many runs the results named that the traces did not hold after a kill."""
    killed = 0
    missing = 0
    for attempt in range(4):
        command = first if attempt == 0 else again
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if attempt < 3 and rng.random() < kill_chance:
            time.sleep(rng.uniform(0.0, max_delay))
            process.send_signal(signal.SIGKILL)
        _, err = process.communicate()
        if process.returncode == -signal.SIGKILL:
            killed += 1
            missing += missing_runs(folder)
        if process.returncode in (0, 1):
            break
    return process.returncode, err, killed, missing


def campaign(binary, mode, suite, failing_suite, trials, rng, out):
    # What an evaluation runs: the suite, or in corpus mode every run recorded from it.
    def source(the_suite):
        return ["--traces", the_suite] if mode == "corpus" else [the_suite]

    def eval_into(folder, the_suite, layout):
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(
            [binary, "eval"] + source(the_suite) + ["--out", folder, "-q", "--jobs", "2"] + layout,
            stdout=subprocess.DEVNULL,
            check=False,
        )

    layouts = CORPUS_LAYOUTS if mode == "corpus" else LAYOUTS
    if mode == "corpus":
        # The corpus: every run of the suite, recorded with full capture in one file.
        recorded = os.path.join(out, "recorded")
        subprocess.run(
            [binary, "eval", suite, "--out", recorded, "-q", "--capture", "full",
             "--trace-layout", "single"],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        runs = os.path.join(recorded, "runs")
        suite = os.path.join(out, "corpus.jsonl")
        shutil.copyfile(os.path.join(runs, os.listdir(runs)[0], "traces.jsonl"), suite)

    def commands(folder, layout):
        if mode in ("resume", "corpus"):
            first = [binary, "eval"] + source(suite) + ["--out", folder, "-q", "--jobs", "2"] + layout
            return (first, first + ["--resume"])
        # A rerun keeps the layout of the results it updates unless told otherwise.
        repeat = [x for x in layout if x not in ("--trace-layout", "single")]
        again = [binary, "eval", suite, "--rerun-failed", os.path.join(folder, "results.json"),
                 "-q", "--jobs", "2"] + repeat
        return (again, again)

    expected = {}
    # Kills land anywhere within the time an uninterrupted run takes.
    duration = {}
    for i, layout in enumerate(layouts):
        folder = os.path.join(out, f"{mode}-reference-{i}")
        started = time.monotonic()
        if mode in ("resume", "corpus"):
            eval_into(folder, suite, layout)
        else:
            eval_into(folder, failing_suite, layout)
            started = time.monotonic()
            subprocess.run(commands(folder, layout)[0], stdout=subprocess.DEVNULL, check=False)
        duration[i] = time.monotonic() - started
        expected[i] = rows(folder)[:2]
    bad = 0
    kills = 0
    for trial in range(trials):
        i = rng.randrange(len(layouts))
        layout = layouts[i]
        # Resumed evaluations start over the folder an earlier trial of the layout completed,
        # as a rerun of a CI job would.
        folder = os.path.join(out, f"{mode}-trial-{i}")
        if mode == "rerun":
            eval_into(folder, failing_suite, layout)
        first, again = commands(folder, layout)
        # The first attempt is always killed in resume mode, so something is left to resume.
        code, err, killed, missing = run_killed(
            first, again, 0.7 if mode == "rerun" else 1.0, rng, duration[i], folder
        )
        kills += killed
        where = f"{mode} trial {trial} ({' '.join(layout) or 'defaults'})"
        if missing:
            print(f"{where}: after a kill, results.json named {missing} runs its traces did not hold")
            bad += 1
        if code not in (0, 1):
            print(f"{where}: exit {code}: {err.decode()[-300:]}")
            bad += 1
            continue
        totals, kept, run_ids = rows(folder)
        if (totals, kept) != expected[i]:
            print(f"{where}: results differ from the uninterrupted run's ({totals} vs {expected[i][0]})")
            bad += 1
        problem = traces_problem(binary, folder, layout, run_ids)
        if problem:
            print(f"{where}: {problem}")
            bad += 1
    print(f"{mode}: {trials} trials, {kills} evaluations killed before they ended, {bad} trials ended elsewhere")
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["resume", "rerun", "corpus", "both"], default="both")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    binary = looptrace()
    out = os.path.join(ROOT, "fuzz", "out", "kill")
    os.makedirs(out, exist_ok=True)
    suite = os.path.join(out, "suite.json")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_suite.py"),
                    "--tasks", str(args.tasks), suite], check=True)
    # The same tasks with about 30% of the expectations turned around, so that a rerun with the
    # first suite has failures to rerun.
    rng = random.Random(args.seed)
    with open(suite, encoding="utf-8") as f:
        failing = json.load(f)
    for task in failing["tasks"]:
        if "expect" in task and rng.random() < 0.3:
            wrong = "finished" if task["expect"].get("exit_reason") == "internal_error" else "internal_error"
            task["expect"] = {"exit_reason": wrong}
    failing_suite = os.path.join(out, "suite-failing.json")
    with open(failing_suite, "w", encoding="utf-8") as f:
        json.dump(failing, f)
    modes = ["resume", "rerun"] if args.mode == "both" else [args.mode]
    bad = sum(campaign(binary, mode, suite, failing_suite, args.trials, rng, out) for mode in modes)
    shutil.rmtree(out, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
