"""`netrig run FILE --cluster ADDR` of a lab with `placement:`: one lab spread over hosts,
each measurement's processes on the hosts of their nodes, every run stored here.

The client builds the lab over the hosts as `netrig up --cluster` does (`labs.up_with`),
then runs the experiment's runs one after another, as the local runner does (the same
`_Session`: a lab is kept while the network is the same). A measurement plugin runs here,
in the client, against a `ClusterRuntime`: every process it starts in a node (`popen`,
`exec`) starts on that node's host (`nodeops.spawn`) and is polled from here, so an iperf3
client on one host reaches its server on another across the VXLAN tunnels, and the tools'
outputs come back here. Events act on the hosts of their nodes: a link's two ends each on
its host (`labs.link_with`), a node's daemons on the node's host.

A host lost mid-run: its calls fail, the run is stored as failed with the reason ("host h2
was lost mid-run"), the lab's parts on the other hosts are removed, and the next run builds
the lab again on the hosts left (a failed build, e.g. fewer hosts than `placement:` asks
for, fails the sweep point's runs with that reason: never a silent zero). Ctrl-C: the run
is cut short (its processes ended on their hosts), stored as interrupted, every host's part
removed; `--resume` continues. A client killed without a word (kill -9): each host removes
its part by itself within seconds, once the scheduler has forgotten the sweep's lease.
"""

from __future__ import annotations

import codecs
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.markup import escape

from netrig.base.sample import MeasurementFailed
from netrig.cluster import labs, nodeops, parts
from netrig.cluster.host import FACTS_KEY
from netrig.cluster.sweep import HostResultStore, connect, hosts_of
from netrig.cluster.tasks import take_lease
from netrig.experiment.interrupt import StopSignal
from netrig.experiment.runner import (
    Outcome,
    Reporter,
    RunResult,
    Silent,
    _Session,
    close_experiment,
    open_experiment,
)
from netrig.lab.build import BadInput, LabError
from netrig.lab.ledger import Ledger
from netrig.lab.runtime import LabRuntime
from netrig.plan.experiment import ExperimentPlan, SweepPoint
from netrig.plan.model import LabPlan
from netrig.plan.runs import PlannedRun, plan_runs

POLL = 0.02  # seconds between polls of a process on another host
SLICE = 0.5  # seconds a call waits before it checks that its host is still there


class HostLost(MeasurementFailed):
    """A host of the lab left the cluster (its worker died) while the run used it."""

    def __init__(self, host: str, what: str) -> None:
        super().__init__(f"host {host} was lost mid-run ({what}); its part of the lab is gone")
        self.host = host


class _Sink:
    """Where a remote process's stdout or stderr goes here: a file the plugin gave
    (a spool), a buffer (PIPE, read by `communicate`), or nowhere."""

    def __init__(self, target: Any, text: bool) -> None:
        self.file = target if hasattr(target, "write") else None
        self.keep = target == subprocess.PIPE
        self.text = text or (self.file is not None and "b" not in getattr(self.file, "mode", ""))
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.chunks: list[Any] = []
        self.read = 0  # bytes read from the host

    def add(self, data: bytes, final: bool = False) -> None:
        self.read += len(data)
        piece: Any = self.decoder.decode(data, final) if self.text else data
        if self.file is not None:
            self.file.write(piece)
            self.file.flush()
        elif self.keep:
            self.chunks.append(piece)

    def value(self) -> Any:
        if not self.keep:
            return None
        return ("" if self.text else b"").join(self.chunks)


class RemoteProcess:
    """A process in a node on another host, as a plugin uses a Popen: pid (the host's),
    poll, wait, communicate, send_signal, terminate, kill, returncode; `end_group` ends
    its process group there (netrig.lab.procs.end_group calls it)."""

    def __init__(self, runtime: ClusterRuntime, host: str, node: str, handle: str, pid: int,
                 args: Sequence[str], stdout: Any, stderr: Any, text: bool) -> None:
        self.runtime, self.host, self.node, self.handle = runtime, host, node, handle
        self.pid, self.args = pid, list(args)
        self.what = f"{os.path.basename(self.args[0])} in {node} still running"
        self.returncode: int | None = None
        self.out = _Sink(stdout, text)
        self.err = self.out if stderr == subprocess.STDOUT else _Sink(stderr, text)

    def poll(self) -> int | None:
        if self.returncode is None:
            rc, out, err = self.runtime.call(self.host, self.what, nodeops.poll, self.handle,
                                             self.out.read, self.err.read)
            done = rc is not None
            self.out.add(out, done)
            if self.err is not self.out:
                self.err.add(err, done)
            self.returncode = rc
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0,
                                                self.out.value(), self.err.value())
            time.sleep(POLL)
        return self.returncode  # type: ignore[return-value]

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:
        self.wait(timeout)
        return self.out.value(), None if self.err is self.out else self.err.value()

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            self.runtime.call(self.host, self.what, nodeops.signal, self.handle, int(signum))

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def end_group(self, grace: float = 2.0) -> None:
        if self.returncode is None:
            self.runtime.call(self.host, self.what, nodeops.end_group, self.handle,
                              grace)
            self.poll()


class ClusterRuntime(LabRuntime):
    """A lab spread over hosts, as a measurement plugin sees it: processes start in their
    node on its host; what needs the node's namespace in this process (a plugin's own
    netlink or packet socket, a file in the node's folder) is refused with the reason."""

    def __init__(self, plan: LabPlan, ledger: Ledger, client: Any, address: str,
                 where: dict[str, str]) -> None:
        super().__init__(plan, ledger)
        from netrig.rig.prepare import catalog

        self.catalog = catalog()
        self.client, self.address, self.where = client, address, where
        self.address_of = {n: a for a, n in hosts_of(client).items()}
        self.touched: set[str] = set()  # hosts that ran a process of the current run
        self.lost: str | None = None
        self._protocol: Any = None

    @property
    def protocol(self) -> Any:
        if self._protocol is None:
            from netrig import routing

            self._protocol = routing.make(self.plan.protocol, self.plan.routing_options)
        return self._protocol

    def with_ledger(self, ledger: Ledger) -> ClusterRuntime:
        return self  # nothing of it is in a ledger here; the hosts keep their own

    def host_of(self, node: str) -> str:
        self.plan.node(node)
        return self.where[node]

    def call(self, host: str, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """FN(*ARGS) on HOST; HostLost if the host leaves the cluster meanwhile."""
        address = self.address_of.get(host)
        if self.lost or address is None:
            raise HostLost(self.lost or host, what)
        future = self.client.submit(fn, *args, workers=[address], allow_other_workers=False,
                                    pure=False)
        try:
            while True:
                try:
                    return future.result(timeout=SLICE)
                except TimeoutError:
                    if address not in hosts_of(self.client):
                        self.lost = host
                        raise HostLost(host, what) from None
                except (MeasurementFailed, LabError, subprocess.SubprocessError):
                    raise  # the host's own answer (its error, sent back)
                except Exception:  # the worker died with the task (KilledWorker, a closed
                    # comm), or the host's own error: which one, the scheduler knows
                    if address not in hosts_of(self.client):
                        self.lost = host
                        raise HostLost(host, what) from None
                    raise
        finally:
            if not future.done():
                future.cancel()

    # -------------------------------------------------------------- processes

    # a stand-in for the Popen that LabRuntime.popen returns: the part plugins use here
    def popen(self, node: str, argv: Sequence[str], label: str | None = None,  # type: ignore[override]
              **kwargs: Any) -> RemoteProcess:
        host = self.host_of(node)
        label = label or f"{self.name}/{node}/{os.path.basename(argv[0])}/{time.monotonic_ns()}"
        handle, pid = self.call(host, f"starting {argv[0]} in {node}", nodeops.spawn,
                                self.name, node, list(argv), label,
                                bool(kwargs.get("start_new_session")))
        self.touched.add(host)
        text = bool(kwargs.get("text") or kwargs.get("universal_newlines")
                    or kwargs.get("encoding") or kwargs.get("errors"))
        return RemoteProcess(self, host, node, handle, pid, argv, kwargs.get("stdout"),
                             kwargs.get("stderr"), text)

    def exec(self, node: str, argv: Sequence[str], **kwargs: Any
             ) -> subprocess.CompletedProcess[Any]:
        capture = kwargs.pop("capture_output", False)
        timeout = kwargs.pop("timeout", None)
        check = kwargs.pop("check", False)
        if kwargs.get("input") is not None:
            raise MeasurementFailed(f"input to a process in {node} on another host is not "
                                    "done yet")
        kwargs.setdefault("text", True)
        out = subprocess.PIPE if capture else kwargs.get("stdout", subprocess.PIPE)
        err = subprocess.PIPE if capture else kwargs.get("stderr", subprocess.PIPE)
        proc = self.popen(node, argv, stdout=out, stderr=err, start_new_session=True,
                          text=kwargs["text"], errors=kwargs.get("errors"))
        try:
            rc = proc.wait(timeout)
        finally:
            if proc.returncode is None:
                proc.end_group(0.5)
        stdout, stderr = proc.communicate()
        done = subprocess.CompletedProcess(list(argv), rc, stdout, stderr)
        if check:
            done.check_returncode()
        return done

    def listening_ports(self, node: str, proc: Any, proto: str = "tcp") -> set[int]:
        if not isinstance(proc, RemoteProcess):
            return set()
        return set(self.call(proc.host, "a listening check", nodeops.listening_ports,
                             proc.handle, self.name, node, proto))

    def _elsewhere(self, node: str, what: str) -> MeasurementFailed:
        return MeasurementFailed(
            f"{what} of node {node}, which is on host {self.where.get(node, '?')}: a "
            "measurement of a lab spread over hosts may only start processes in its nodes "
            "(iperf3, ping and command do)")

    def ns(self, node: str) -> str:
        raise self._elsewhere(node, "this measurement needs the network namespace")

    def node_dir(self, node: str) -> str:
        raise self._elsewhere(node, "this measurement needs a file in the folder")

    def exists(self) -> bool:
        return True

    # -------------------------------------------------------------- faults, health

    def apply_event(self, event: Any) -> None:
        """An event of the timeline, on the hosts of its nodes (faults.apply calls it)."""
        if event.kind in ("link-down", "link-up"):
            labs.link_with(self.client, self.name, event.target[0], event.target[1],
                           event.kind == "link-up", self.address)
            return
        hosts = sorted({self.host_of(n) for n in event.target})
        for host in hosts:
            error = self.call(host, str(event), nodeops.apply_event, self.name, event.kind,
                              tuple(event.target), event.rate)
            if error:
                raise LabError(error)

    def trace_pairs(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str, Any]]:
        """(source, target, path) of each pair, host by host (the runner's paths beside a
        run with events: `labs.trace_with`)."""
        from netrig.lab.trace import Hop, Path

        out = []
        for a, b in pairs:
            hops, reached, error = labs.trace_with(self.client, self.name, a, self.addr(b))
            path = Path(tuple(Hop(node, iface) for _h, node, iface in hops), reached, error)
            out.append((a, b, path))
        return out

    def daemon_failures(self, lines: int = 20) -> list[tuple[str, str]]:
        failed = []
        for host in sorted(set(self.where.values())):
            failed += [(f"{host}: {line.split(':', 1)[0]}", line.split(":", 1)[-1])
                       for line in self.call(host, "its daemons", nodeops.daemon_failures,
                                             self.name)]
        return failed

    def wait_converged(self, when: str = "") -> float:
        """Until the pairs across hosts answer again (`netrig up --cluster`'s check), the
        routing daemons of every host still running; LabError otherwise."""
        start = time.monotonic()
        if self.protocol.runs_daemons():
            crashed = self.daemon_failures()
            if crashed:
                raise LabError(f"{crashed[0][0]} exited {when}: {crashed[0][1]}")
        address_of = {h: self.address_of[h] for h in set(self.where.values())}
        labs.check_with(self.client, address_of, self.plan, self.where)
        return time.monotonic() - start


class SpreadSession(_Session):
    """The local runner's session, its lab spread over the cluster's hosts."""

    def __init__(self, exp: ExperimentPlan, store: HostResultStore, say: Reporter,
                 outcome: Outcome, client: Any, address: str, hosts: int | None,
                 pins: dict[str, str] | None = None, lease: str | None = None) -> None:
        self.scratch = tempfile.mkdtemp(prefix="netrig-spread-")
        super().__init__(exp, store, say, outcome, Ledger(self.scratch))
        self.client, self.address, self.hosts, self.pins = client, address, hosts, pins
        self.lease = lease  # the hosts remove their parts once it is gone (client dead)
        self.facts = client.get_metadata([FACTS_KEY], default={})
        self.spread: ClusterRuntime | None = None

    def _lab_for(self, point: SweepPoint) -> str | None:
        if point.network in self.broken:
            return self.broken[point.network]
        spread = self.spread
        if spread is not None and spread.lost is None and self.network == point.network:
            present = set(hosts_of(self.client).values())
            gone = sorted(set(spread.where.values()) - present)
            if not gone:  # the lab kept for the next run: every host of it still there
                spread.touched.clear()
                return None
            self.say.note(f"[yellow]host {', '.join(gone)} is gone[/]; the lab's other parts "
                          "are removed and it is built again on the hosts left")
        self._down()
        t0 = time.perf_counter()
        self.say.note(f"[dim]building lab {point.plan.name} ({len(point.plan.nodes)} nodes) "
                      f"over {self.hosts or 'all'} hosts[/]")
        try:
            built = labs.up_with(self.client, point.plan, self.address, self.hosts or None,
                                 check=True, pins=self.pins, lease=self.lease)
        except LabError as exc:
            reason = f"lab {point.plan.name} could not be built across hosts: {exc}"
            self.broken[point.network] = reason
            self.say.note(escape(reason))
            return reason
        finally:
            self.outcome.lab_seconds += time.perf_counter() - t0
        per_host: dict[str, int] = {}
        for host in built.where.values():
            per_host[host] = per_host.get(host, 0) + 1
        shown = ", ".join(f"{h} {n} nodes" for h, n in sorted(per_host.items()))
        self.say.note(f"[dim]lab {built.name}: {shown}; {built.cut} links are VXLAN tunnels[/]")
        self.spread = ClusterRuntime(point.plan, self.ledger, self.client, self.address,
                                     built.where)
        self.lab, self.network = self.spread, point.network  # type: ignore[assignment]
        self.outcome.labs_built += 1
        return None

    def _record(self, run: PlannedRun, point: SweepPoint, result: RunResult,
                started: datetime) -> None:
        self.say.run_ended(self.exp, run, result.status, result.reason)
        spread = self.spread
        if spread is not None and spread.lost:
            self.say.note(f"[yellow]host {spread.lost} is gone[/]; the lab's other parts are "
                          "removed, the next run builds it again on the hosts left")
            self._down()
        if run.warmup:
            return
        hosts = sorted(spread.touched or set(spread.where.values())) if spread else []
        run_id = self.store.record_run(  # type: ignore[call-arg]
            self.outcome.experiment_id, point.values, run.repetition,
            result.status,
            result.samples, result.reason, result.stderr, started=started,
            ended=datetime.now(UTC), outputs=result.outputs,
            host="+".join(hosts) or None,  # the hosts its processes ran on
            host_facts=(self.facts.get(hosts[0], {}) if len(hosts) == 1
                        else {h: self.facts.get(h, {}) for h in hosts}),
            failed_measurements=result.failed_measurements,
        )
        self.outcome.run_ids.append(run_id)
        setattr(self.outcome, result.status, getattr(self.outcome, result.status) + 1)

    def _down(self) -> None:
        spread, self.spread = self.spread, None
        self.lab, self.network = None, None
        if spread is None:
            return
        t0 = time.perf_counter()
        present = {n: a for a, n in hosts_of(self.client).items()}
        try:
            labs.down_with(self.client, present, spread.name)
        finally:
            self.outcome.lab_seconds += time.perf_counter() - t0

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.ledger.close()
            shutil.rmtree(self.scratch, ignore_errors=True)


def run_spread(exp: ExperimentPlan, store: HostResultStore, address: str, hosts: int | None,
               *, resume: bool = False, reporter: Reporter | None = None,
               pins: dict[str, str] | None = None) -> Outcome:
    """Run every planned run not stored yet, each on the lab spread over the hosts."""
    say = reporter or Silent()
    client = connect(address)
    try:
        present = {n: a for a, n in hosts_of(client).items()}
        if not present:
            raise BadInput(f"no netrig worker is connected to {address} (start `netrig "
                           f"worker --scheduler {address}` on each host)")
        if hosts and hosts > len(present):
            raise BadInput(f"placement asks for {hosts} hosts; {address} has {len(present)}: "
                           f"{', '.join(sorted(present))}")
        unknown = sorted({h for h in (pins or {}).values() if h not in present})
        if unknown:
            raise BadInput(f"host: {', '.join(unknown)} is no host of {address} (it has "
                           f"{', '.join(sorted(present))})")
        for point in exp.points:  # refused before anything is stored, not a failed run each
            parts.check_spreadable(point.plan)
        names = {p.plan.name for p in exp.points}
        taken = sorted(f"{lab} on {h}" for h, there in labs.status_with(client).items()
                       for lab, *_ in there if lab in names)
        if taken:  # refused before anything is stored
            raise BadInput(f"lab {', '.join(taken)} is up already; `netrig down NAME --cluster "
                           f"{address}` removes it (or run with --name)")
        runs = plan_runs(len(exp.points), exp.repeat, exp.order, exp.warmup)  # type: ignore[arg-type]
        facts = client.get_metadata([FACTS_KEY], default={})
        with StopSignal() as stop:
            eid, done, todo = open_experiment(store, exp, runs, resume, lambda: {
                "cluster": address, "placement": {"hosts": hosts or len(present)},
                "hosts": {h: facts.get(h, {}) for h in present}})  # fmt: skip
            outcome = Outcome(eid, "ok", skipped=len(done))
            say.begin(exp, todo, len(done))
            # held until every part is removed: if this process dies first, the scheduler
            # forgets the key and each host removes its part by itself
            lease, _held = take_lease(client, uuid.uuid4().hex[:12])
            session = SpreadSession(exp, store, say, outcome, client, address, hosts, pins,
                                    lease)
            try:
                session.run_all(todo, stop)
            except BaseException:
                outcome.unfinished = True  # stored as interrupted (resumable), never as ok
                raise
            finally:
                session.close()
                close_experiment(store, outcome, stop, say)
        return outcome
    finally:
        client.close()
