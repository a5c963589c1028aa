"""Run programs inside a lab node: its network namespace, its own /sys, optionally its own /run.

A small exec helper (netrig/native/netrig_nsexec.c, compiled with gcc at first use; a Python
fallback without a compiler) enters the node's namespace, unshares a mount namespace that
does not propagate back to the host, mounts a sysfs that shows the node's devices (as
`ip netns exec` does), bind-mounts the node's private run directory over /run when asked
(daemons such as batmand keep pid files and sockets per node), then execs the program.

Why not subprocess's preexec_fn: Python documents it as unsafe when threads run (the child
may deadlock on a lock another thread held at fork), and netrig's runner starts processes
from several threads at once. The helper is started by a plain subprocess (vfork/posix_spawn,
no Python code in the child), which is also cheaper than fork (benchmarks/process_start.py).
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from netrig.lab import netns


@functools.cache
def helper() -> tuple[str, ...]:
    """The argv prefix that enters a node: the compiled helper, else the Python one."""
    from netrig.native import compile as native_compile

    try:
        return (native_compile.nsexec(),)
    except (native_compile.BuildError, OSError):
        return (sys.executable, "-m", "netrig.lab.nsexec")


def command(
    ns: str, argv: Sequence[str], private_run: str | None = None, env: Any = None
) -> list[str]:
    """The argv that runs argv in node namespace ns. The program is looked up here, with
    the PATH the child will have, so a missing one raises FileNotFoundError in the caller
    as subprocess does for any program."""
    program = argv[0]
    if os.sep not in program:
        path = (env if env is not None else os.environ).get("PATH", os.defpath)
        found = shutil.which(program, path=path)
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        program = found
    elif os.path.isabs(program) and not os.path.exists(program):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    return [*helper(), netns.ns_path(ns), private_run or "-", program, *argv[1:]]


def run(
    ns: str, argv: Sequence[str], private_run: str | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(command(ns, argv, private_run, kwargs.get("env")), **kwargs)


def popen(
    ns: str, argv: Sequence[str], private_run: str | None = None, **kwargs: Any
) -> subprocess.Popen[Any]:
    return subprocess.Popen(command(ns, argv, private_run, kwargs.get("env")), **kwargs)
