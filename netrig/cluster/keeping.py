"""What a worker host keeps between Dask tasks: its one lab thread, the sweeps' sessions
(each with its lab) and the leases they were built under. Below the modules that use it
(tasks: sweeps' runs; parts and nodeops: a spread lab's parts), so none reaches up."""

from __future__ import annotations

import threading
from typing import Any

from netrig.lab import netns

sessions: dict[str, Any] = {}  # sweep → its tasks.HostSession (the lab kept up)
sweep_leases: dict[str, str] = {}  # sweep → the lease its client holds at the scheduler
part_leases: dict[str, str] = {}  # spread lab (its part here) → the lease of its sweep
_thread: netns.Worker | None = None
_thread_lock = threading.Lock()


def lab_thread() -> netns.Worker:
    """The one thread of this worker process that does lab work."""
    global _thread
    with _thread_lock:
        if _thread is None:
            _thread = netns.Worker("netrig-host")
        return _thread


def leases() -> set[str]:
    """The leases of what this worker keeps (sweeps' labs, spread labs' parts)."""
    return set(sweep_leases.values()) | set(part_leases.values())


def held(lab: str) -> bool:
    """Is lab LAB here kept for a sweep (released when it ends, or when its client goes)?"""
    return lab in part_leases or any(
        s.lab is not None and s.lab.name == lab for s in list(sessions.values()))
