"""Which process owns a 'running' experiment, so one whose process died (kill -9, a crash,
a power cut) is shown as interrupted instead of running for ever.

The owner is "boot id:pid:start time": the start time tells a reused pid apart, the boot id
a database carried to another host or kept across a reboot.
"""

from __future__ import annotations

import os

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def _boot_id() -> str:
    try:
        with open(_BOOT_ID) as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (None: no such process, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] == "Z" else int(fields[19])


def current() -> str:
    """This process, as an owner string."""
    pid = os.getpid()
    return f"{_boot_id()}:{pid}:{_start_time(pid)}"


def alive(owner: str | None) -> bool | None:
    """True while the owning process runs, False once it is gone; None if unknown (a row
    written before owners were recorded)."""
    if not owner:
        return None
    boot, pid, start = owner.rsplit(":", 2)
    if boot != _boot_id():
        return False
    return start != "None" and _start_time(int(pid)) == int(start)
