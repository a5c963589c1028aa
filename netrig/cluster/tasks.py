"""What runs on a worker: one planned run of an experiment, and releasing its lab.

A worker keeps the lab of its last sweep point up between runs (as the local runner does),
in a session per sweep. All lab work of a worker happens on one long-lived thread of its
own: the ledger's SQLite connection belongs to the thread that opened it, and namespace
switches stay inside worker threads. The Dask task only hands the work over and waits.

Ctrl-C on the client becomes `interrupt(sweep)` on every worker: the run being measured
is cut short as locally (KeyboardInterrupt in the measuring thread, SIGINT to the tools it
started), stored as interrupted by the client, and the lab is released.

A client that dies without a word (kill -9, its host gone) cannot ask for that. Its sweep
holds a lease at the scheduler (`take_lease`: one key, a task that never runs, which Dask
forgets the moment the client disconnects); each run names it, and so does each part of a
spread lab that `netrig run --cluster` builds. The worker asks the scheduler every
`netrig.cluster.worker.WATCH_INTERVAL` seconds whether the leases of what it keeps still
exist (`leases`), and `reap`s what a gone lease held: the run being measured is cut short,
then the lab goes down through `release` (a spread lab's part through `down_part`'s
path). Only what this worker built under a lease is reaped; a lab of `netrig up --cluster`
has none and stays until `netrig down`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from netrig.base.sample import Sample
from netrig.cluster import keeping
from netrig.cluster.host import HostConfig, current
from netrig.experiment.runner import Outcome, RunResult, _Session
from netrig.host.facts import collect_host_facts
from netrig.lab.ledger import Ledger
from netrig.plan.experiment import ExperimentPlan, SweepPoint
from netrig.plan.runs import PlannedRun
from netrig.rig.prepare import experiment_programs


@dataclass
class RunReport:
    """One run as a worker gives it back: the result, when, where, and what it noted."""

    run: PlannedRun
    status: str
    samples: dict[str, list[Sample]]
    outputs: dict[str, dict[str, str]]
    reason: str | None
    stderr: str | None
    started: datetime
    ended: datetime
    host: str
    host_facts: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    began: bool = True  # False: stopped before it started (nothing to store)
    labs_built: int = 0  # labs this run had to build on its host
    failed_measurements: list[str] | None = None  # a failure theirs alone (RunResult's)


class ThreadStop:
    """The runner's stop signal for a worker thread: set by `interrupt`, not by a signal."""

    def __init__(self) -> None:
        self.name = ""
        self._armed: int | None = None  # the thread id while a measurement may be cut short
        self._lock = threading.Lock()

    @property
    def requested(self) -> bool:
        return bool(self.name)

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        with self._lock:
            if self.name:
                raise KeyboardInterrupt
            self._armed = threading.get_ident()
        try:
            yield
        finally:
            with self._lock:
                self._armed = None

    def request(self, name: str, ledger_dir: str) -> None:
        with self._lock:
            self.name = self.name or name
            tid, self._armed = self._armed, None
        if tid is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(tid), ctypes.py_object(KeyboardInterrupt)
            )
            _interrupt_tools(ledger_dir)


def _interrupt_tools(ledger_dir: str) -> None:
    """SIGINT to this worker's own child processes that are not lab daemons (those the
    ledger records): the measurement tools, as a Ctrl-C in a terminal reaches them."""
    ledger = Ledger(ledger_dir)
    try:
        daemons = {o.pid for o in ledger.objects(kind="process") if o.pid}
    finally:
        ledger.close()
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in daemons:
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2 :].split()[1] == me:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry), signal.SIGINT)


class _Notes:
    """A runner reporter that keeps the notes, to send them back with the run."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def begin(self, *_: Any) -> None:
        pass

    def run_started(self, *_: Any) -> None:
        pass

    def run_ended(self, *_: Any) -> None:
        pass

    def note(self, message: str) -> None:
        self.lines.append(message)

    def end(self) -> None:
        pass


class HostSession(_Session):
    """The runner's session on one host: the lab of the current sweep point, kept up."""

    def __init__(self, exp: ExperimentPlan, config: HostConfig) -> None:
        for point in exp.points:
            point.plan = config.localize(point.plan)
        super().__init__(exp, None, _Notes(), Outcome(0, "ok"), config.ledger())  # type: ignore[arg-type]
        self.config = config
        self.stop = ThreadStop()
        self.facts = collect_host_facts(experiment_programs(exp))
        self.last: tuple[RunResult, datetime, datetime] | None = None
        self.runs_done = 0

    def _record(
        self, run: PlannedRun, point: SweepPoint, result: RunResult, started: datetime
    ) -> None:
        self.last = (result, started, datetime.now(UTC))

    def run_one(self, run: PlannedRun) -> RunReport:
        notes: _Notes = self.say  # type: ignore[assignment]
        notes.lines.clear()
        if self.exp.cooldown and self.runs_done:  # the pause between runs, on this host
            try:
                with self.stop.armed():
                    time.sleep(self.exp.cooldown)
            except KeyboardInterrupt:
                return not_started(run, self.stop.name)
        self.runs_done += 1
        self.last = None
        built = self.outcome.labs_built
        self.run_all([run], self.stop)  # type: ignore[arg-type]
        if self.last is None:  # stopped before it could measure
            return not_started(run, self.stop.name)
        result, started, ended = self.last
        return RunReport(
            run, result.status, result.samples, result.outputs, result.reason, result.stderr,
            started, ended, self.config.name, self.facts, list(notes.lines),
            labs_built=self.outcome.labs_built - built,
            failed_measurements=result.failed_measurements,
        )

    def close(self) -> None:
        """The lab down (the runner's session), then this host's ledger connection."""
        try:
            super().close()
        finally:
            self.ledger.close()


def not_started(run: PlannedRun, why: str) -> RunReport:
    now = datetime.now(UTC)
    return RunReport(run, "interrupted", {}, {}, f"interrupted by {why}", None, now, now,
                     current().name, {}, began=False)


_sessions: dict[str, HostSession] = keeping.sessions
_stopped: dict[str, str] = {}  # sweeps interrupted on this worker → the signal's name
_leases = keeping.sweep_leases
_part_leases = keeping.part_leases
CLIENT_GONE = "client gone"  # the stop's name when the client left without releasing
_lab_thread = keeping.lab_thread
leases = keeping.leases
held = keeping.held


def run_planned(sweep: str, exp: ExperimentPlan, run: PlannedRun,
                lease: str | None = None) -> RunReport:
    """Dask task: one run of the experiment on this host (its lab built if needed); LEASE:
    the key its client holds at the scheduler (the lab goes when the key does)."""

    def work() -> RunReport:
        if sweep in _stopped:
            return not_started(run, _stopped[sweep])
        session = _sessions.get(sweep)
        if session is None:
            _release_stale({p.plan.name for p in exp.points})
            session = _sessions[sweep] = HostSession(exp, current())
        if lease:
            _leases[sweep] = lease
        return session.run_one(run)

    return _lab_thread().call(work)


def _release_stale(names: set[str]) -> None:
    """A lab of these names kept by an earlier sweep whose client went away without
    releasing it (killed): the new sweep's lab replaces it."""
    for other, session in list(_sessions.items()):
        if session.lab is not None and session.lab.name in names:
            del _sessions[other]
            _leases.pop(other, None)
            session.close()


def release(sweep: str) -> str:
    """Dask task (or client.run): tear down the sweep's lab on this host; the host's name."""

    def work() -> str:
        _drop(sweep)
        return current().name

    return _lab_thread().call(work)


def _drop(sweep: str, stopped: str | None = None) -> str | None:
    """On the lab thread: the sweep's session closed (its lab down) and forgotten; STOPPED:
    what a run of it that starts later returns (interrupted by that), else nothing is kept.
    The lab's name, if there was one."""
    session = _sessions.pop(sweep, None)
    _leases.pop(sweep, None)
    if stopped:
        _stopped[sweep] = stopped
    else:
        _stopped.pop(sweep, None)
    if session is None:
        return None
    name = session.lab.name if session.lab is not None else None
    session.close()
    return name


LEASE_RESOURCE = "netrig-lease"  # offered by no worker: a lease's task never runs


def take_lease(client: Any, what: str) -> tuple[str, Any]:
    """A lease for a sweep of CLIENT: a key at the scheduler that lives as long as the
    client holds the future returned (and is connected). (key, future): keep the future
    until the sweep's labs are released.

    A task no worker may run (it asks for a resource none offers), not scattered data:
    it waits at the scheduler alone, so no host lost takes it along (Dask's memory manager
    keeps one replica of a scattered value nobody needs, and a worker killed with it had
    made the scheduler forget the key: every other host released a live sweep's lab)."""
    key = f"netrig-lease-{what}"
    return key, client.submit(str, client.id, key=key, resources={LEASE_RESOURCE: 1},
                              pure=False)


def reap(gone: set[str]) -> list[str]:
    """What the leases GONE held (their clients left the scheduler without releasing
    anything): each sweep's run cut short and its lab released, each spread lab's part
    removed. Called off the lab thread (the watchdog's); the labs removed."""
    from netrig.cluster.nodeops import down_part

    removed = []
    for sweep, lease in list(_leases.items()):
        if lease not in gone:
            continue
        interrupt(sweep, CLIENT_GONE)  # a run in a measurement ends now, not at its end

        def work(sweep: str = sweep, lease: str = lease) -> str | None:
            if _leases.get(sweep) != lease:  # released meanwhile
                return None
            return _drop(sweep, stopped=CLIENT_GONE)  # a run Dask started already: not begun

        name = _lab_thread().call(work)
        if name:
            removed.append(name)
    for lab, lease in list(_part_leases.items()):
        if lease in gone:
            _host, namespaces = down_part(lab, lease)
            if namespaces:
                removed.append(lab)
    return removed


def interrupt(sweep: str, name: str = "SIGINT") -> bool:
    """client.run on every worker: stop the sweep's current run; True if there was one."""
    _stopped[sweep] = name
    session = _sessions.get(sweep)
    if session is None:
        return False
    session.stop.request(name, session.config.state_dir)
    return True
