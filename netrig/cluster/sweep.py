"""`netrig run FILE --cluster ADDR`: the sweep's runs on the cluster's hosts, stored here.

The client is the one writer of the results database: workers send each run back (samples,
outputs, the host's name and facts) and the client stores it when it arrives. Each host has
its own queue (`blocks.assign`: every host runs every sweep point where it can, in the
experiment's order), two runs in flight per host (the second waits on the host for the
Dask resource, so the host starts it as soon as the first ends, without a round trip to
the client); a host whose queue is empty takes the last run of the longest queue, so no
host idles while another has work, and a host left without work releases its lab at once.

A worker that dies mid-run: Dask gives its task to another worker (the task's host is a
loose restriction), that run is stored once, when it finishes there; the dead host's queue
is shared among the others. Ctrl-C: the workers cut the current runs short (stored as
interrupted, as locally), queued runs are dropped, every host releases its lab. A client
that dies without a word (kill -9): each host releases the sweep's lab by itself within a
few seconds, once the scheduler has forgotten the sweep's lease (see `tasks`).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from rich.markup import escape

from netrig.cluster import blocks, tasks
from netrig.cluster.host import FACTS_KEY, RESOURCE
from netrig.experiment.interrupt import StopSignal
from netrig.experiment.runner import (
    Outcome,
    Reporter,
    ResultStore,
    Silent,
    close_experiment,
    open_experiment,
)
from netrig.lab.build import BadInput, LabError
from netrig.plan.experiment import ExperimentPlan
from netrig.plan.runs import PlannedRun, plan_runs


class HostResultStore(ResultStore, Protocol):
    """netrig.results.store.ResultStore as the cluster uses it: each run with its host."""

    def record_run(self, experiment_id: int, point: Mapping[str, Any], repetition: int,
                   status: Any, samples: Any = None, reason: str | None = None,
                   stderr: str | None = None, *, started: datetime | None = None,
                   ended: datetime | None = None, outputs: Any = None, host: str | None = None,
                   host_facts: Mapping[str, Any] | None = None,
                   failed_measurements: Any = None) -> int: ...


CONNECT_TIMEOUT = 10.0
IN_FLIGHT = 2  # runs sent to a host at once: the next waits there for the one measured
RELEASE_TIMEOUT = 120.0


REFUSED_GRACE = 1.0  # s: a scheduler that is still starting may refuse for a moment


def connect(address: str) -> Any:
    """A Dask client of the scheduler at `address`; LabError if it cannot be reached."""
    if refused_for_a_while(address):
        raise LabError(
            f"cannot reach the cluster scheduler {address}: connection refused (nothing "
            "listens there: is the scheduler running, and is that its port?)"
        )
    from distributed import Client

    try:
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise LabError(f"cannot reach the cluster scheduler {address}: {exc}") from None


def scheduler_host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a tcp:// scheduler address (or one without a scheme), None for
    another scheme; ValueError for one Dask cannot read (no port)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme != "tcp":
        return None
    host, port = parse_host_port(location)
    return host, int(port)


def refused_for_a_while(address: str) -> bool:
    """Does a TCP scheduler address refuse every connection for REFUSED_GRACE seconds?

    Dask's Client tries a refused address again until its timeout, so a mistyped port or
    a scheduler not started cost CONNECT_TIMEOUT before the message. Anything else (no
    route, no answer, another scheme) is left to the Client and its timeout."""
    try:
        where = scheduler_host_port(address)
    except ValueError:
        return False
    if where is None:
        return False
    deadline = time.monotonic() + REFUSED_GRACE
    while True:
        try:
            with socket.create_connection(where, timeout=REFUSED_GRACE):
                return False
        except ConnectionRefusedError:
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.1)
        except OSError:
            return False


@dataclass
class Placed:
    """Where a lab file asks its nodes to go on a cluster: `placement: {hosts: N}` (0: all
    the cluster's hosts) and `host: NAME` of single nodes."""

    hosts: int = 0
    pins: dict[str, str] = field(default_factory=dict)


def placement_of(path: str, overrides: Mapping[str, str] | None = None) -> Placed | None:
    """The placement of the experiment's lab, or None when it has neither `placement:` nor
    a node with `host:` (a sweep of whole labs, one per host)."""
    from netrig.model.experiment import load_experiment_model, substitute_point

    model = load_experiment_model(path, overrides)
    lab = substitute_point(model, model.points()[0]).lab
    return placed(lab.data)


def placed(doc: Any) -> Placed | None:
    """`placement:` and the nodes' `host:` of a lab file's data (None: neither is there)."""
    if not isinstance(doc, dict):
        return None
    pins = {str(n["name"]): str(n["host"]) for n in doc.get("nodes") or []
            if isinstance(n, dict) and n.get("host") and n.get("name")}
    if "placement" not in doc and not pins:
        return None
    spec = doc.get("placement") or {}
    return Placed(int(spec.get("hosts") or 0) if isinstance(spec, dict) else 0, pins)


def hosts_of(client: Any) -> dict[str, str]:
    """Worker address → host name, of the workers that are netrig hosts.

    Asked of the scheduler each time: `client.scheduler_info()` returns a cached identity
    that the client's own periodic refresh (every 2 s, without workers) may overwrite just
    after the fetch, and then every host looked gone at once ("no host is left")."""
    workers = client.sync(client.scheduler.identity, n_workers=-1)["workers"]
    return {
        addr: str(info.get("name") or addr)
        for addr, info in workers.items()
        if RESOURCE in (info.get("resources") or {})
    }


@dataclass
class _Flight:
    host: str  # the host it was sent to (Dask may run it elsewhere if that host is lost)
    run: PlannedRun


@dataclass
class _Dispatch:
    client: Any
    sweep: str
    exp_data: Any  # the experiment, scattered to every worker once
    queues: dict[str, deque[PlannedRun]]
    address_of: dict[str, str]  # host → worker address
    lease: str | None = None  # the key this client holds at the scheduler (tasks.take_lease)
    inflight: dict[Any, _Flight] = field(default_factory=dict)
    counter: itertools.count[int] = field(default_factory=itertools.count)
    releases: dict[str, Any] = field(default_factory=dict)  # host → its release task

    def busy(self, host: str) -> bool:
        """As many runs in flight as a host is given at once (one measured, one waiting)."""
        return sum(f.host == host for f in self.inflight.values()) >= IN_FLIGHT

    def next_run(self, host: str) -> PlannedRun | None:
        queue = self.queues.get(host)
        if queue:
            return queue.popleft()
        longest = max(self.queues.values(), key=len, default=None)
        if longest and len(longest) > 1:  # steal: the other host keeps its next run
            return longest.pop()
        return None

    def submit(self, host: str, run: PlannedRun) -> None:
        future = self.client.submit(
            tasks.run_planned,
            self.sweep,
            self.exp_data,
            run,
            self.lease,
            key=f"netrig-run-{self.sweep}-{next(self.counter)}",
            workers=[self.address_of[host]],
            allow_other_workers=True,  # a lost host's run goes to another host
            resources={RESOURCE: 1},
            pure=False,
        )
        self.inflight[future] = _Flight(host, run)

    def fill(self, say: Reporter, exp: ExperimentPlan) -> None:
        """IN_FLIGHT runs on every host that has work left; a host that has none (nothing
        queued, nothing in flight, nothing to take over) releases its lab now, not after
        the others' last runs."""
        for _ in range(IN_FLIGHT):
            for host in self.address_of:
                if not self.busy(host):
                    run = self.next_run(host)
                    if run is not None:
                        self.releases.pop(host, None)  # given work again (a lost host's)
                        self.submit(host, run)
                        say.run_started(exp, run)
        if any(len(q) > 1 for q in self.queues.values()):
            return
        for host, addr in self.address_of.items():
            idle = not self.queues.get(host) and not any(
                f.host == host for f in self.inflight.values())
            if idle and host not in self.releases:
                self.releases[host] = self.release(host, addr)

    def release(self, host: str, addr: str) -> Any:
        return self.client.submit(
            tasks.release, self.sweep, key=f"netrig-release-{self.sweep}-{host}-"
            f"{next(self.counter)}", workers=[addr], allow_other_workers=False,
            resources={RESOURCE: 1}, pure=False,
        )

    def lose(self, gone: list[str], say: Reporter) -> None:
        """Hosts that left: their queued runs go to the hosts left."""
        for host in gone:
            del self.address_of[host]
            left = list(self.queues.pop(host, deque()))
            say.note(f"[yellow]host {host} is gone[/]; its {len(left)} queued runs go to the "
                     f"other hosts, its current run is retried on one of them")
            if self.address_of and left:
                for other, runs in blocks.spread(left, list(self.address_of)).items():
                    self.queues[other].extend(runs)


def run_on_cluster(
    exp: ExperimentPlan,
    store: HostResultStore,
    address: str,
    *,
    resume: bool = False,
    reporter: Reporter | None = None,
) -> Outcome:
    """Run every planned run not stored yet on the cluster's hosts; store them here."""
    say = reporter or Silent()
    client = connect(address)
    try:
        return _run(exp, store, client, address, resume, say)
    finally:
        client.close()


def _run(exp: ExperimentPlan, store: HostResultStore, client: Any, address: str, resume: bool,
         say: Reporter) -> Outcome:
    address_of = {name: addr for addr, name in hosts_of(client).items()}
    if not address_of:
        raise BadInput(f"no netrig worker is connected to {address} (start `netrig worker "
                       f"--scheduler {address}` on each host)")
    runs = plan_runs(len(exp.points), exp.repeat, exp.order, exp.warmup)  # type: ignore[arg-type]
    facts = client.get_metadata([FACTS_KEY], default={})
    with StopSignal() as stop:
        eid, done, todo = open_experiment(store, exp, runs, resume, lambda: {
            "cluster": address, "hosts": {h: facts.get(h, {}) for h in address_of}})  # fmt: skip
        outcome = Outcome(eid, "ok", skipped=len(done))
        sweep = uuid.uuid4().hex[:12]
        queues = {h: deque(q) for h, q in blocks.assign(todo, sorted(address_of)).items()}
        say.begin(exp, [r for q in queues.values() for r in q], len(done))
        say.note(f"[dim]{len(address_of)} hosts: {', '.join(sorted(address_of))}[/]")
        # held until the hosts have released their labs: if this process dies first, the
        # scheduler forgets the key, and each host releases the sweep's lab by itself
        lease, _held = tasks.take_lease(client, sweep)
        dispatch = _Dispatch(client, sweep, client.scatter(exp, broadcast=True, hash=False),
                             queues, address_of, lease)
        try:
            _loop(exp, store, dispatch, outcome, say, stop)
        finally:
            _finish(exp, store, dispatch, outcome, say, stop)
    return outcome


def _loop(exp: ExperimentPlan, store: HostResultStore, dispatch: _Dispatch, outcome: Outcome,
          say: Reporter, stop: StopSignal) -> None:
    from distributed import wait

    dispatch.fill(say, exp)
    while dispatch.inflight and not stop.requested:
        try:
            finished = wait(list(dispatch.inflight), timeout=0.5, return_when="FIRST_COMPLETED")
        except TimeoutError:
            finished = None
        if finished is not None:
            for future in finished.done:
                flight = dispatch.inflight.pop(future)
                if not _store(exp, store, future, flight, outcome, say):
                    return
        present = {name: addr for addr, name in hosts_of(dispatch.client).items()}
        gone = [h for h in dispatch.address_of if h not in present]
        if gone:
            dispatch.lose(gone, say)
        for host, addr in present.items():  # a host that joined (or came back) helps out
            if host not in dispatch.address_of:
                dispatch.address_of[host] = addr
                dispatch.queues.setdefault(host, deque())
                say.note(f"host {host} joined")
        if not dispatch.address_of:
            say.note("[red]no host is left[/]; the runs not stored can be run with --resume")
            outcome.signal = "no hosts left"
            return
        dispatch.fill(say, exp)


def _store(exp: ExperimentPlan, store: HostResultStore, future: Any, flight: _Flight,
           outcome: Outcome, say: Reporter) -> bool:
    """Store one finished run; False when the sweep must stop (stop_on_failure, interrupt)."""
    run = flight.run
    point = exp.points[run.point]
    if future.status == "error":
        exc = future.exception()
        now = datetime.now(UTC)
        report = tasks.RunReport(run, "failed", {}, {}, f"lost on the cluster: "
                                 f"{type(exc).__name__}: {exc}", None, now, now, flight.host, {})
    else:
        report = future.result()
    for note in report.notes:
        say.note(f"[dim]{report.host}:[/] {note}")
    outcome.labs_built += report.labs_built
    if report.status == "interrupted" and not report.began:
        return False  # never started: nothing to store
    say.run_ended(exp, run, report.status, report.reason)
    if not run.warmup:
        run_id = store.record_run(
            outcome.experiment_id, point.values, run.repetition,
            report.status,
            report.samples, report.reason, report.stderr, started=report.started,
            ended=report.ended, outputs=report.outputs, host=report.host,
            host_facts=report.host_facts, failed_measurements=report.failed_measurements,
        )
        outcome.run_ids.append(run_id)
        setattr(outcome, report.status, getattr(outcome, report.status) + 1)
    if report.status == "ok" and not run.warmup:
        outcome.last_ok = point.label
    if report.status == "failed" and exp.stop_on_failure:
        outcome.stopped_at = point.label
        say.note(escape(f"stopped at the first failure ({point.label}): {report.reason}"))
        return False
    if report.status == "interrupted":
        outcome.signal = outcome.signal or "SIGINT"
        return False
    return True


def _finish(exp: ExperimentPlan, store: HostResultStore, dispatch: _Dispatch, outcome: Outcome,
            say: Reporter, stop: StopSignal) -> None:
    """Cut short what still runs, store what comes back, release every host's lab."""
    from distributed import wait

    client = dispatch.client
    for queue in dispatch.queues.values():
        queue.clear()
    if not dispatch.address_of:  # nobody can finish them
        for future in dispatch.inflight:
            future.cancel()
        dispatch.inflight.clear()
    if dispatch.inflight:
        if stop.requested:  # else (stop_on_failure) the runs in flight finish as they are
            client.run(tasks.interrupt, dispatch.sweep, stop.name)
        with contextlib.suppress(TimeoutError):
            wait(list(dispatch.inflight), timeout=RELEASE_TIMEOUT)
        for future, flight in list(dispatch.inflight.items()):
            if future.done():
                _store(exp, store, future, flight, outcome, say)
            else:
                future.cancel()
        dispatch.inflight.clear()
    releases = [
        dispatch.releases.get(h) or dispatch.release(h, addr)
        for h, addr in dispatch.address_of.items()
    ]
    try:
        wait(releases, timeout=RELEASE_TIMEOUT)
    except TimeoutError:
        say.note("[yellow]some host did not release its lab in time[/]; "
                 "`netrig clean` on that host removes it")
    close_experiment(store, outcome, stop, say)
