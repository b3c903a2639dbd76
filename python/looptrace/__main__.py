"""`python -m looptrace ARGS...`: runs the installed binary with ARGS."""

import os
import subprocess
import sys

from looptrace import find_looptrace_bin


def main() -> None:
    binary = find_looptrace_bin()
    if sys.platform == "win32":
        sys.exit(subprocess.call([binary, *sys.argv[1:]]))
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
