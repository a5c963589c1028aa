"""`python -m netrig.lab.nsexec NSPATH RUNDIR|- PROGRAM [ARG...]`: netrig-nsexec in Python,
for hosts without a C compiler (same arguments and exit codes as netrig/native/
netrig_nsexec.c; ~30 ms slower per process, the interpreter's start)."""

from __future__ import annotations

import os
import sys

from netrig.lab import netns


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: netrig.lab.nsexec NSPATH RUNDIR|- PROGRAM [ARG...]", file=sys.stderr)
        return 125
    ns_path, run_dir, program = argv[0], argv[1], argv[2:]
    try:
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
        if run_dir != "-":
            netns.mount(run_dir, "/run", None, netns.MS_BIND)
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
