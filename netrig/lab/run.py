"""Run programs inside a lab node: its network namespace, its own /sys, optionally its own /run.

The child enters the node's namespace after fork (preexec), unshares a mount namespace
that does not propagate back to the host, mounts a sysfs that shows the node's devices
(as `ip netns exec` does), and, when asked, bind-mounts the node's private run directory
over /run, so daemons such as batmand keep pid files and sockets per node, and mounts the
node's binds (host files seen at other paths inside the node, e.g. a router's config).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from netrig.lab import netns

Binds = Sequence[tuple[str, str, bool]]  # (host path, path in the node, read-only)


def enter_fn(ns: str, private_run: str | None = None, binds: Binds = ()) -> Callable[[], None]:
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
        for source, target, read_only in binds:
            netns.mount(source, target, None, netns.MS_BIND | netns.MS_REC)
            if read_only:
                flags = netns.MS_BIND | netns.MS_REMOUNT | netns.MS_RDONLY
                netns.mount("none", target, None, flags)

    return enter


def run(
    ns: str, argv: Sequence[str], private_run: str | None = None, binds: Binds = (), **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(list(argv), preexec_fn=enter_fn(ns, private_run, binds), **kwargs)


def popen(
    ns: str, argv: Sequence[str], private_run: str | None = None, binds: Binds = (), **kwargs: Any
) -> subprocess.Popen[Any]:
    return subprocess.Popen(list(argv), preexec_fn=enter_fn(ns, private_run, binds), **kwargs)
