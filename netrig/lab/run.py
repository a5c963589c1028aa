"""Run programs inside a lab node: its network namespace, its own /sys, optionally its own /run.

The child enters the node's namespace after fork (preexec), unshares a mount namespace
that does not propagate back to the host, mounts a sysfs that shows the node's devices
(as `ip netns exec` does), and, when asked, bind-mounts the node's private run directory
over /run, so daemons such as batmand keep pid files and sockets per node. A folder
`etc/NAME` in the private run directory is the node's own /etc/NAME (where /etc/NAME exists):
FRR's /etc/frr, so what vtysh writes there stays in the node.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from netrig.lab import netns

ETC_VIEWS = "etc"  # folder of the private run directory whose folders replace those of /etc


def _etc_views(private_run: str) -> list[str]:
    try:
        names = os.listdir(os.path.join(private_run, ETC_VIEWS))
    except FileNotFoundError:
        return []
    return [n for n in names if os.path.isdir(os.path.join("/etc", n))]


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
            views = _etc_views(private_run)
            netns.mount(private_run, "/run", None, netns.MS_BIND)
            for name in views:  # /run is the node's now: its etc/NAME is at /run/etc/NAME
                netns.mount(f"/run/{ETC_VIEWS}/{name}", f"/etc/{name}", None, netns.MS_BIND)

    return enter


def run(
    ns: str, argv: Sequence[str], private_run: str | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(list(argv), preexec_fn=enter_fn(ns, private_run), **kwargs)


def popen(
    ns: str, argv: Sequence[str], private_run: str | None = None, **kwargs: Any
) -> subprocess.Popen[Any]:
    return subprocess.Popen(list(argv), preexec_fn=enter_fn(ns, private_run), **kwargs)
