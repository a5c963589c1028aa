"""On a host: the processes a measurement of a lab spread over hosts starts in this host's
nodes (`netrig run --cluster` of a lab with `placement:`), and the faults of its events.

The client runs the measurement plugin; every process the plugin starts in a node is
started here, on the node's host, through the host's own lab (`Lab.popen`: recorded in the
host's ledger by PID, so `down` ends it if nobody else does). Its output goes to files in
the node's folder; the client reads them in pieces while it polls (`poll`), and a process
is forgotten here once the client has read its exit status and its last output.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals
import subprocess
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from netrig.cluster import parts
from netrig.lab import procs
from netrig.lab.build import LabError
from netrig.lab.teardown import teardown


@dataclass
class _Started:
    proc: subprocess.Popen[Any]
    out: str
    err: str


_started: dict[str, _Started] = {}
_lock = threading.Lock()
READ_MAX = 4 << 20  # bytes of output sent back per poll


def _gone(name: str, node: str) -> LabError:
    return LabError(f"host {parts.current().name} has no node {node} of a lab {name!r}")


def spawn(name: str, node: str, argv: list[str], label: str | None,
          new_session: bool = False) -> tuple[str, int]:
    """Start ARGV in NODE (here): (handle, pid)."""
    with parts.attached(name, node) as here:
        if here is None:
            raise _gone(name, node)
        _config, lab = here
        handle = uuid.uuid4().hex[:16]
        folder = lab.node_dir(node)
        out = os.path.join(folder, f"spawned-{handle}.out")
        err = os.path.join(folder, f"spawned-{handle}.err")
        with open(out, "wb") as fo, open(err, "wb") as fe:
            proc = lab.popen(node, argv, label=label, stdout=fo, stderr=fe,
                             stdin=subprocess.DEVNULL, start_new_session=new_session)
    with _lock:
        _started[handle] = _Started(proc, out, err)
    return handle, proc.pid


def _read(path: str, offset: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(READ_MAX)
    except FileNotFoundError:
        return b""


def poll(handle: str, out_at: int, err_at: int) -> tuple[int | None, bytes, bytes]:
    """(exit status or None, stdout and stderr from those offsets). Once it has exited and
    everything is read, the process is forgotten here."""
    with _lock:
        started = _started.get(handle)
    if started is None:
        raise LabError(f"no process {handle} on host {parts.current().name} (its lab went "
                       "down, or the host restarted)")
    rc = started.proc.poll()
    out, err = _read(started.out, out_at), _read(started.err, err_at)
    if rc is not None and len(out) < READ_MAX and len(err) < READ_MAX:
        _forget(handle)
    return rc, out, err


def _forget(handle: str) -> None:
    with _lock:
        started = _started.pop(handle, None)
    if started is not None:
        for path in (started.out, started.err):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def signal(handle: str, signum: int) -> None:
    """Send SIGNUM to the process (by PID, only while it runs)."""
    with _lock:
        started = _started.get(handle)
    if started is not None and started.proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            started.proc.send_signal(signals.Signals(signum))


def end_group(handle: str, grace: float) -> None:
    """End the process and its process group (`procs.end_group`, here)."""
    with _lock:
        started = _started.get(handle)
    if started is not None:
        procs.end_group(started.proc, grace)


def listening_ports(handle: str, name: str, node: str, proto: str) -> set[int]:
    """The ports the process listens on, once it is inside NODE's namespace."""
    with _lock:
        started = _started.get(handle)
    if started is None or started.proc.poll() is not None:
        return set()
    with parts.attached(name, node) as here:
        if here is None:
            raise _gone(name, node)
        return here[1].listening_ports(node, started.proc, proto)


def forget_lab(name: str) -> None:
    """Processes of lab NAME's measurements that nobody polls any more: end and forget
    them (the lab goes down; the ledger ends whatever is left)."""
    with _lock:
        handles = list(_started)
    for handle in handles:
        with _lock:
            started = _started.get(handle)
        if started is not None and f"/{name}/" in started.out:
            procs.end_process(started.proc, grace=0.5)
            _forget(handle)


def down_part(name: str, lease: str | None = None) -> tuple[str, int]:
    """Dask task on every host: remove this host's part of lab NAME (namespaces removed),
    the processes its measurements started here first. LEASE (the worker's watchdog): only
    if the part is still the one built under that lease."""
    from netrig.cluster.keeping import lab_thread as _lab_thread
    from netrig.cluster.keeping import part_leases as _part_leases

    def work() -> tuple[str, int]:
        config = parts.current()
        if lease is not None and _part_leases.get(name) != lease:
            return config.name, 0
        _part_leases.pop(name, None)
        forget_lab(name)  # processes of its measurements: the teardown ends them
        ledger = config.ledger()
        try:
            if name not in ledger.all_lab_names():
                return config.name, 0
            return config.name, teardown(ledger, name).namespaces
        finally:
            ledger.close()

    return _lab_thread().call(work)


def apply_event(name: str, kind: str, target: tuple[str, ...], rate: int | None) -> str | None:
    """A node's event on this host (node-stop, node-start), or a link-rate event of a
    link whose both ends are here. None if done; the error otherwise."""
    from netrig.lab import faults

    with parts.attached(name, *target) as here:
        if here is None:
            return f"no host has {'-'.join(target)} of lab {name}"
        _config, lab = here
        try:
            if kind == "node-stop":
                faults.stop_node(lab, target[0])
            elif kind == "node-start":
                faults.start_node(lab, target[0])
            elif kind == "link-rate":
                on_host = [n for n in target if n in lab.plan.nodes]
                if len(on_host) == 2:
                    faults.set_rate(lab, target[0], target[1], rate)
                else:  # a cut link: this host's tunnel end
                    node, peer = on_host[0], next(n for n in target if n != on_host[0])
                    tunnel = parts._tunnel_to(lab.ledger.lab_dir(name), node, peer)
                    if tunnel is None:
                        return f"lab {name} has no link {'-'.join(target)}"
                    parts.tunnel_rate(lab.ns(node), int(tunnel["index"]), rate)
            else:
                return f"{kind} is not a host event"
        except Exception as exc:  # sent back as text: the run records it
            return str(exc).strip("'\"")
    return None


def daemon_failures(name: str) -> list[str]:
    """Daemons of this host's part of lab NAME that are no longer running (label: log)."""
    with parts.attached(name) as here:
        if here is None:
            return [f"host {parts.current().name} has no part of lab {name}"]
        return [f"{label}: {tail}" for label, tail in here[1].daemon_failures(5)]
