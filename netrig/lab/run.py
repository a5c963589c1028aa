"""Run programs inside a lab node: its network namespace, its own /sys, optionally its own /run
and its binds (host files seen at other paths inside the node, e.g. a router's config).

An exec helper enters the node, then execs the program: it joins the node's network
namespace, unshares a mount namespace that does not propagate back to the host, mounts a
sysfs that shows the node's devices (as `ip netns exec` does), bind-mounts the node's private
run directory over /run when asked (daemons such as batmand keep pid files and sockets per
node; a folder `etc/NAME` in it is the node's own /etc/NAME where /etc/NAME exists: FRR's
/etc/frr, so what vtysh writes there stays in the node), and mounts the node's binds (host
files seen at other paths inside the node; a bind target the host lacks is created in an
overlay private to the node). The helper is netrig-nsexec (netrig/native/
netrig_nsexec.c, compiled with gcc at first use); a node with binds or /etc views, or a host
without gcc, gets the same steps in Python (`python -m netrig.lab.nsexec`, ~30 ms more per start).

Why not subprocess's preexec_fn: Python documents it as unsafe when threads run (the child
may deadlock on a lock another thread held at fork), and netrig's runner starts processes
from several threads at once. The helper is started by a plain subprocess (vfork/posix_spawn,
no Python code in the child), which is also cheaper than fork (benchmarks/process_start.py).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from netrig.lab import netns

ETC_VIEWS = "etc"  # folder of the private run directory whose folders replace those of /etc
VAR_TMP = "var-tmp"  # beside a node's private /run: its /var/tmp (FRR leaves crash buffers)


def node_dir_mount_point(private_run: str) -> str | None:
    """Where, inside a node's private run directory, its node directory (the folder that
    holds it and the node's config files) is bound so that it keeps its path once the run
    directory is the node's /run; None when that path is not under /run (nothing hides it)."""
    node_dir = os.path.dirname(os.path.normpath(private_run))
    if not node_dir.startswith("/run/"):
        return None
    return os.path.join(private_run, node_dir.removeprefix("/run/"))


def etc_views(private_run: str) -> list[str]:
    """The folders of /etc the node has its own of (under its private run directory)."""
    try:
        names = os.listdir(os.path.join(private_run, ETC_VIEWS))
    except FileNotFoundError:
        return []
    return [n for n in names if os.path.isdir(os.path.join("/etc", n))]


Binds = Sequence[tuple[str, str, bool]]  # (host path, path in the node, read-only)
PYTHON_HELPER = (sys.executable, "-m", "netrig.lab.nsexec")


@functools.cache
def helper() -> tuple[str, ...]:
    """The argv prefix that enters a node without binds or /etc views: the compiled helper,
    else Python."""
    from netrig.native import compile as native_compile

    try:
        return (native_compile.nsexec(),)
    except (native_compile.BuildError, OSError):
        return PYTHON_HELPER


def command(
    ns: str,
    argv: Sequence[str],
    private_run: str | None = None,
    binds: Binds = (),
    env: Any = None,
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
    where = [netns.ns_path(ns), private_run or "-"]
    if binds or (private_run and etc_views(private_run)):  # the C helper does neither
        return [*PYTHON_HELPER, *where, "--binds", json.dumps([list(b) for b in binds]),
                program, *argv[1:]]  # fmt: skip
    return [*helper(), *where, program, *argv[1:]]


def run(
    ns: str, argv: Sequence[str], private_run: str | None = None, binds: Binds = (), **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(command(ns, argv, private_run, binds, kwargs.get("env")), **kwargs)


def popen(
    ns: str, argv: Sequence[str], private_run: str | None = None, binds: Binds = (), **kwargs: Any
) -> subprocess.Popen[Any]:
    return subprocess.Popen(command(ns, argv, private_run, binds, kwargs.get("env")), **kwargs)
