"""Processes that plugins start in a lab's nodes: ending them by PID (or by the process group
we started), waiting for them, and what sockets they hold (to tell when a server listens)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any


def end_process(proc: subprocess.Popen[Any], grace: float = 2.0) -> None:
    """End a process we started, by its PID: SIGTERM, a grace period, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def end_group(proc: subprocess.Popen[Any], grace: float = 2.0) -> None:
    """End a process started with start_new_session and everything in its process group
    (a shell and the tool it runs), by the group id, which is the PID we started.

    Once the leader is reaped its PID stays reserved while members of its group live; if a
    process with that PID exists again, the group is gone and the number belongs to someone
    else (a daemon that made itself a session leader, say): it is left alone.

    A process on another host (a lab spread over hosts) ends its group there."""
    remote = getattr(proc, "end_group", None)
    if remote is not None:
        remote(grace)
        return
    if proc.poll() is not None and os.path.exists(f"/proc/{proc.pid}"):
        return
    if proc.poll() is None or _group_alive(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            proc.poll()
            time.sleep(0.01)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_all(procs: Sequence[subprocess.Popen[Any]], deadline: float) -> bool:
    """Wait for every process until the monotonic deadline; False if some still run."""
    for proc in procs:
        left = deadline - time.monotonic()
        try:
            proc.wait(max(left, 0.0))
        except subprocess.TimeoutExpired:
            return False
    return True


def socket_inodes(pid: int) -> set[str]:
    """Inodes of the sockets process `pid` holds open."""
    inodes: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def listening_ports(pid: int, proto: str = "tcp") -> set[int]:
    """Ports that process `pid` itself listens on (another process's listener does not count)."""
    mine = socket_inodes(pid)
    ports: set[int] = set()
    for name in (proto, proto + "6"):
        try:
            with open(f"/proc/{pid}/net/{name}") as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in mine:  # TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports
