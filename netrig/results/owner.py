"""Which process owns a 'running' experiment, so one whose process died (kill -9, a crash,
a power cut) is shown as interrupted instead of running for ever.

The owner is "boot id:pid:start time": the start time tells a reused pid apart, the boot id
a database carried to another host or kept across a reboot.
"""

from __future__ import annotations

import os

from netrig.lab.ledger import process_alive, process_starttime

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def _boot_id() -> str:
    try:
        with open(_BOOT_ID) as fh:
            return fh.read().strip()
    except OSError:
        return ""


def current() -> str:
    """This process, as an owner string."""
    pid = os.getpid()
    return of(pid, process_starttime(pid))


def of(pid: int, starttime: int | None) -> str:
    """The owner string of process `pid` of this boot, started at `starttime`."""
    return f"{_boot_id()}:{pid}:{starttime}"


def alive(owner: str | None) -> bool | None:
    """True while the owning process runs, False once it is gone; None if unknown (a row
    written before owners were recorded)."""
    if not owner:
        return None
    boot, pid, start = owner.rsplit(":", 2)
    if boot != _boot_id():
        return False
    return start != "None" and process_alive(int(pid), int(start))
