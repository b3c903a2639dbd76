"""Runs a command and appends `LABEL WALL USER SYS MAXRSS_KB` to FILE: the wall time around it,
the kernel's own accounting of its CPU time in microseconds, and its peak memory as GNU time
reports it. GNU time prints CPU time in hundredths of a second, too coarse to compare commands
that take a few tenths. For the scripts under bench/; Python's own start-up is not in the
figures.

    python3 bench/rusage.py LABEL FILE COMMAND [ARG ...]

The command runs under `/usr/bin/time`, whose child it is: a process forked from Python would
report Python's memory as its peak until it runs the command. Exits with the command's exit code.
"""

import os
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    label, out, command = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
        began = time.perf_counter()
        child = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", peak.name, *command])
        # The rusage of `time` includes that of the command it waited for.
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        kilobytes = int(peak.read().strip().splitlines()[-1])
    with open(out, "a", encoding="utf-8") as times:
        times.write(
            f"{label} {wall:.4f} {usage.ru_utime:.4f} {usage.ru_stime:.4f} {kilobytes}\n"
        )
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
