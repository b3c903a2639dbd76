"""The `looptrace` command, installed from a wheel. It has no Python API: run `looptrace` or
`python -m looptrace`."""

import os
import sys
import sysconfig


def find_looptrace_bin() -> str:
    """The path of the installed `looptrace` binary."""
    exe = "looptrace" + sysconfig.get_config_var("EXE")
    candidates = [
        os.path.join(sysconfig.get_path("scripts"), exe),
        os.path.join(sysconfig.get_path("scripts", vars={"base": sys.base_prefix}), exe),
    ]
    user_scheme = {"nt": "nt_user", "posix": "posix_user"}.get(os.name)
    if user_scheme and user_scheme in sysconfig.get_scheme_names():
        candidates.append(os.path.join(sysconfig.get_path("scripts", scheme=user_scheme), exe))
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"the looptrace binary is not in any of {candidates}")
