"""`python -m netrig.lab.nsexec NSPATH RUNDIR|- [--binds JSON] PROGRAM [ARG...]`: enter a
lab node, then exec PROGRAM (see netrig/lab/run.py). The same steps and exit codes as
netrig/native/netrig_nsexec.c, plus the node's binds (JSON: [[host path, path in the node,
read-only], …]) and its /etc views, which the C helper does not do; used for nodes with
those and on hosts without gcc (~30 ms slower per process: the interpreter's start)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
from collections.abc import Sequence

from netrig.lab import netns
from netrig.lab.run import ETC_VIEWS, VAR_TMP, etc_views, node_dir_mount_point


def enter(ns_path: str, private_run: str | None, binds: Sequence[Sequence[object]]) -> None:
    """Join the node: its network namespace, a mount namespace of its own, its /sys, its
    /run, its /var/tmp (what programs leave there goes with the lab) and its binds."""
    fd = os.open(ns_path, os.O_RDONLY | os.O_CLOEXEC)
    netns.setns(fd, netns.CLONE_NEWNET)
    os.close(fd)
    netns.unshare(netns.CLONE_NEWNS)
    netns.mount("", "/", None, netns.MS_SLAVE | netns.MS_REC)
    try:
        netns.umount("/sys")
        netns.mount(os.path.basename(ns_path), "/sys", "sysfs", 0)
    except OSError:
        pass  # a sysfs that shows the host's devices is a nuisance, not an error
    if private_run:
        views = etc_views(private_run)  # read before /run hides the host's view of it
        var_tmp = os.path.join(private_run, "..", VAR_TMP)  # before /run: it may lie there
        # only over a real directory (a /var/tmp linking to /tmp would hide /tmp); like
        # /sys, a nuisance if it fails, not an error
        if os.path.exists(var_tmp) and os.path.isdir("/var/tmp") and not os.path.islink(
            "/var/tmp"
        ):
            with contextlib.suppress(OSError):
                netns.mount(var_tmp, "/var/tmp", None, netns.MS_BIND)
        # the node's own directory (its config files) stays at its path when that lies
        # under /run, which private_run now hides (as netrig_nsexec.c does)
        point = node_dir_mount_point(private_run)
        if point is not None and os.path.isdir(point):
            with contextlib.suppress(OSError):
                netns.mount(os.path.dirname(private_run), point, None, netns.MS_BIND)
        netns.mount(private_run, "/run", None, netns.MS_BIND | netns.MS_REC)
        for name in views:  # /run is the node's now: its etc/NAME is at /run/etc/NAME
            netns.mount(f"/run/{ETC_VIEWS}/{name}", f"/etc/{name}", None, netns.MS_BIND)
    view = os.path.join(os.path.dirname(private_run), "view") if private_run else None
    overlaid: set[str] = set()
    for source, target, read_only in binds:
        source, target = str(source), str(target)
        if not os.path.lexists(target):
            _create_in_view(target, os.path.isdir(source), view, overlaid)
        netns.mount(source, target, None, netns.MS_BIND | netns.MS_REC)
        if read_only:
            flags = netns.MS_BIND | netns.MS_REMOUNT | netns.MS_RDONLY
            netns.mount("none", target, None, flags)


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


def main(argv: list[str]) -> int:
    binds: list[list[object]] = []
    if len(argv) >= 4 and argv[2] == "--binds":
        binds = json.loads(argv[3])
        argv = argv[:2] + argv[4:]
    if len(argv) < 3:
        print("usage: netrig.lab.nsexec NSPATH RUNDIR|- [--binds JSON] PROGRAM [ARG...]",
              file=sys.stderr)  # fmt: skip
        return 125
    ns_path, run_dir, program = argv[0], argv[1], argv[2:]
    try:
        enter(ns_path, None if run_dir == "-" else run_dir, binds)
    except OSError as exc:
        print(f"netrig-nsexec: {exc}", file=sys.stderr)
        return 125
    try:
        os.execv(program[0], program)
    except OSError as exc:
        print(f"netrig-nsexec: {program[0]}: {exc.strerror}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
