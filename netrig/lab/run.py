"""Run programs inside a lab node: its network namespace, its own /sys, optionally its own /run.

The child enters the node's namespace after fork (preexec), unshares a mount namespace
that does not propagate back to the host, mounts a sysfs that shows the node's devices
(as `ip netns exec` does), and, when asked, bind-mounts the node's private run directory
over /run, so daemons such as batmand keep pid files and sockets per node.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from netrig.lab import netns


def enter_fn(ns: str, private_run: str | None = None) -> Callable[[], None]:
    path = netns.ns_path(ns)

    def enter() -> None:  # runs in the child, between fork and exec
        fd = os.open(path, os.O_RDONLY)
        netns.setns(fd, netns.CLONE_NEWNET)
        os.close(fd)
        netns.unshare(netns.CLONE_NEWNS)
        netns.mount("", "/", None, netns.MS_SLAVE | netns.MS_REC)
        try:
            netns.umount("/sys")
            netns.mount(ns, "/sys", "sysfs", 0)
        except OSError:
            pass  # a sysfs that shows the host's devices is a nuisance, not an error
        if private_run:
            netns.mount(private_run, "/run", None, netns.MS_BIND)

    return enter


def run(
    ns: str, argv: Sequence[str], private_run: str | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(list(argv), preexec_fn=enter_fn(ns, private_run), **kwargs)


def popen(
    ns: str, argv: Sequence[str], private_run: str | None = None, **kwargs: Any
) -> subprocess.Popen[Any]:
    return subprocess.Popen(list(argv), preexec_fn=enter_fn(ns, private_run), **kwargs)
