"""Run programs inside a lab node: its network namespace, its own /sys, optionally its own /run.

The child enters the node's namespace after fork (preexec), unshares a mount namespace
that does not propagate back to the host, mounts a sysfs that shows the node's devices
(as `ip netns exec` does), and, when asked, bind-mounts the node's private run directory
over /run, so daemons such as batmand keep pid files and sockets per node (a folder
`etc/NAME` in it is the node's own /etc/NAME where /etc/NAME exists: FRR's /etc/frr, so what
vtysh writes there stays in the node), and mounts the node's binds (host files seen at
other paths inside the node, e.g. a router's config); a bind target the host lacks is
created in an overlay private to the node (`_create_in_view`).
"""

from __future__ import annotations

import errno
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
            views = _etc_views(private_run)
            netns.mount(private_run, "/run", None, netns.MS_BIND)
            for name in views:  # /run is the node's now: its etc/NAME is at /run/etc/NAME
                netns.mount(f"/run/{ETC_VIEWS}/{name}", f"/etc/{name}", None, netns.MS_BIND)
        view = os.path.join(os.path.dirname(private_run), "view") if private_run else None
        overlaid: set[str] = set()
        for source, target, read_only in binds:
            if not os.path.lexists(target):
                _create_in_view(target, os.path.isdir(source), view, overlaid)
            netns.mount(source, target, None, netns.MS_BIND | netns.MS_REC)
            if read_only:
                flags = netns.MS_BIND | netns.MS_REMOUNT | netns.MS_RDONLY
                netns.mount("none", target, None, flags)

    return enter


def _create_in_view(target: str, is_dir: bool, view: str | None, overlaid: set[str]) -> None:
    """A bind target the host lacks is made in the node's own view: the nearest directory
    that exists gets an overlay whose upper layer is the node's (`<node dir>/view`), so
    the new file or directory exists for the node's programs only, never on the host."""
    anchor = os.path.dirname(target)
    while not os.path.isdir(anchor):
        anchor = os.path.dirname(anchor)
    if view is None or anchor == "/":
        raise OSError(errno.ENOENT, f"{target} does not exist and cannot be made in the node")
    if anchor not in overlaid:
        upper, work = view + "/upper" + anchor, view + "/work" + anchor
        os.makedirs(upper, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        layers = f"lowerdir={anchor},upperdir={upper},workdir={work}"
        netns.mount("overlay", anchor, "overlay", 0, layers)
        overlaid.add(anchor)
    if is_dir:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "a"):
            pass


def run(
    ns: str, argv: Sequence[str], private_run: str | None = None, binds: Binds = (), **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(list(argv), preexec_fn=enter_fn(ns, private_run, binds), **kwargs)


def popen(
    ns: str, argv: Sequence[str], private_run: str | None = None, binds: Binds = (), **kwargs: Any
) -> subprocess.Popen[Any]:
    return subprocess.Popen(list(argv), preexec_fn=enter_fn(ns, private_run, binds), **kwargs)
