"""Remove what the ledger says netrig made, and nothing else.

Processes go first (recorded ones by PID and start time; then any process still living in
one of the lab's namespaces, found by namespace identity, never by name pattern), then the
namespaces, whose veths and bridges the kernel removes with them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass

from netrig.lab import netns
from netrig.lab.ledger import Ledger, ObjectRecord, process_alive, process_starttime


@dataclass
class TeardownReport:
    lab: str
    namespaces: int = 0
    processes: int = 0
    skipped: list[str] | None = None


def teardown(ledger: Ledger, lab: str, wait: float = 2.0) -> TeardownReport:
    """Idempotent: a second call finds nothing and succeeds."""
    report = TeardownReport(lab, skipped=[])
    objects = ledger.objects(lab)
    ns_objects = [o for o in objects if o.kind == "netns"]
    # namespace identities to look for processes in: only those still mounted at the
    # recorded name (a freed namespace's inode number can be reused by someone else's)
    inodes = set()
    for o in ns_objects:
        current = netns.ns_inode(o.name)
        if current and (not o.inode or current == o.inode):
            inodes.add(current)
    victims = {}
    for o in objects:
        if o.kind == "process" and o.pid and process_starttime(o.pid) == o.starttime:
            victims[o.pid] = o.starttime
    for pid in pids_in_namespaces(inodes):
        victims.setdefault(pid, process_starttime(pid))
    report.processes = end_processes(victims, wait)
    for o in ns_objects:
        if _owned(o):
            if netns.delete(o.name):
                report.namespaces += 1
        elif netns.exists(o.name):
            assert report.skipped is not None
            report.skipped.append(o.name)
    shutil.rmtree(ledger.lab_dir(lab), ignore_errors=True)
    ledger.forget_lab(lab)
    return report


def _owned(o: ObjectRecord) -> bool:
    """Ours if its identity matches the record; an intent-only record (kill -9 between the
    record and the update, a window of microseconds) is trusted by name."""
    current = netns.ns_inode(o.name)
    if o.inode:
        return current == o.inode or (current is None and netns.exists(o.name))
    return True


def pids_in_namespaces(inodes: set[int]) -> list[int]:
    """PIDs whose network namespace is one of ours (identity, not a name pattern)."""
    if not inodes:
        return []
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            ino = os.stat(f"/proc/{entry}/ns/net").st_ino
        except OSError:
            continue
        if ino in inodes:
            found.append(int(entry))
    return found


def end_processes(victims: dict[int, int | None], wait: float) -> int:
    """SIGTERM, a grace period, then SIGKILL; each PID checked against its start time."""
    alive = {pid: st for pid, st in victims.items() if process_starttime(pid) == st}
    for pid in alive:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while alive and time.monotonic() < deadline:
        _reap(alive)
        alive = {p: st for p, st in alive.items() if process_alive(p, st)}
        if alive:
            time.sleep(0.02)
    for pid, st in alive.items():
        if process_starttime(pid) == st:
            _signal(pid, signal.SIGKILL)
    _reap(alive)
    return len(victims)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _reap(pids: dict[int, int | None]) -> None:
    """Collect our own children so they do not linger as zombies."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
