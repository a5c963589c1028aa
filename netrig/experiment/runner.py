"""Run an experiment: build labs, run the planned runs, store each run in one transaction.

    exp = load_experiment("ring.yaml")
    with ResultStore("netrig.db") as store:
        outcome = run_experiment(exp, store)

A lab is built for the first run and kept while the next run's network is the same (the
sweep point changes only measurement options); it is rebuilt when the network part changes.
The lab is named after the experiment, so experiments of different names run side by side.

A failing measurement makes a failed run (with the reason and the tool's stderr); a lab that
cannot be built fails the runs of its sweep point. With `stop_on_failure` the experiment ends
at the first failed run (a sweep for a limit: the longest chain that still works).

With `events:` the measurements of a run start together while a timeline applies the faults;
their interval samples are put on the timeline's clock, the lab is restored afterwards, and
`netrig.experiment.disruption` derives outage, reconvergence and throughput
before/during/after. Ctrl-C or SIGTERM stops the current run, stores it as `interrupted`,
tears the lab down and keeps every finished run; `resume=True` continues the newest
unfinished experiment of the same file (same hash) where it stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from rich.markup import escape

from netrig import measure
from netrig.base.sample import MeasurementFailed, Sample
from netrig.experiment import disruption
from netrig.experiment.interrupt import StopSignal
from netrig.host.facts import collect_host_facts
from netrig.lab import faults
from netrig.lab.build import BadInput, LabError, preflight
from netrig.lab.ledger import Ledger
from netrig.lab.trace import Tracer
from netrig.plan.experiment import DERIVED_NAME, ExperimentPlan, MeasureStep, SweepPoint
from netrig.plan.routes import distances
from netrig.plan.runs import PlannedRun, plan_runs, point_key, remaining
from netrig.rig import Lab
from netrig.rig.prepare import experiment_programs

STEADY_TIMEOUT = 90.0  # seconds a run with events waits for shortest paths before it starts
HEAL_TIMEOUT = 60.0  # seconds a lab netrig does not route may take to carry it all again


# read-only properties: the store's records are frozen dataclasses
class StoredExperiment(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def file_hash(self) -> str: ...
    @property
    def status(self) -> str: ...


class StoredRun(Protocol):
    @property
    def status(self) -> str: ...


class ResultStore(Protocol):
    """Where runs go: netrig.results.store.ResultStore (the runner sits below the results
    layer, so it names only what it calls)."""

    path: Any

    def experiments(self) -> Sequence[StoredExperiment]: ...
    def runs(self, experiment_id: int) -> Sequence[StoredRun]: ...
    def completed_points(self, experiment_id: int) -> set[tuple[str, int]]: ...
    def begin_experiment(self, name: str, file_text: str, host_facts: Mapping[str, Any],
                         measurements: Mapping[str, str] | None = None) -> int: ...
    def resume_experiment(self, experiment_id: int) -> None: ...
    def owned_by(self, pid: int, starttime: int | None) -> bool: ...
    def finish_experiment(self, experiment_id: int, status: Any) -> None: ...
    def record_run(self, experiment_id: int, point: Mapping[str, Any], repetition: int,
                   status: Any, samples: Any = None, reason: str | None = None,
                   stderr: str | None = None, *, started: datetime | None = None,
                   ended: datetime | None = None, outputs: Any = None,
                   failed_measurements: Any = None) -> int: ...


class Reporter(Protocol):
    """What the runner tells its user interface (the CLI's progress bar, or nothing)."""

    def begin(self, exp: ExperimentPlan, runs: list[PlannedRun], stored: int) -> None: ...
    def run_started(self, exp: ExperimentPlan, run: PlannedRun) -> None: ...
    def run_ended(
        self, exp: ExperimentPlan, run: PlannedRun, status: str, reason: str | None
    ) -> None: ...
    def note(self, message: str) -> None: ...
    def end(self) -> None: ...


class Silent:
    """A reporter that says nothing (the Python API's default)."""

    def begin(self, exp: ExperimentPlan, runs: list[PlannedRun], stored: int) -> None:
        pass

    def run_started(self, exp: ExperimentPlan, run: PlannedRun) -> None:
        pass

    def run_ended(self, exp: ExperimentPlan, run: PlannedRun, status: str, reason: str | None) -> None:
        pass

    def note(self, message: str) -> None:
        pass

    def end(self) -> None:
        pass


@dataclass
class Outcome:
    experiment_id: int
    status: str  # ok | failed | interrupted
    ok: int = 0
    failed: int = 0
    interrupted: int = 0
    skipped: int = 0  # stored before (resume)
    labs_built: int = 0
    lab_seconds: float = 0.0  # building and tearing down labs
    signal: str = ""
    stopped_at: str = ""  # stop_on_failure: the sweep point whose run failed first
    last_ok: str = ""  # the newest sweep point whose run succeeded
    unfinished: bool = False  # an error (not a failed run) ended the sweep before its end
    run_ids: list[int] = field(default_factory=list)


@dataclass
class StepOutcome:
    """What one measurement gave: samples and texts, or why it failed (with the samples it
    still had), and when its tool started (monotonic clock)."""

    samples: list[Sample]
    texts: dict[str, str]
    started: float
    reason: str | None = None
    stderr: str | None = None


@dataclass
class RunResult:
    status: str
    samples: dict[str, list[Sample]]
    outputs: dict[str, dict[str, str]]
    reason: str | None = None
    stderr: str | None = None
    reasons: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)  # measurements that failed
    whole_run_failed: bool = False  # an event failed: no measurement's values hold

    @property
    def failed_measurements(self) -> list[str] | None:
        """The measurements whose failure failed the run, when it was theirs alone (the
        others' values still count); None when the whole run failed. A run with events
        derives `events` from every measurement, so it fails with any of them."""
        if self.status != "failed" or self.whole_run_failed or not self.failed_steps:
            return None
        derived = [DERIVED_NAME] if DERIVED_NAME in self.samples else []
        return self.failed_steps + derived

    def add(self, step: MeasureStep, outcome: StepOutcome, several: bool) -> None:
        self.samples[step.name] = outcome.samples
        if outcome.texts:
            self.outputs[step.name] = outcome.texts
        if outcome.reason is not None:
            self.failed_steps.append(step.name)
            named = not several or outcome.reason.startswith(f"{step.name}: ")
            # a tool's reason may name it already ("iperf3: unable to connect…")
            self.reasons.append(outcome.reason if named else f"{step.name}: {outcome.reason}")
            if outcome.stderr:
                self.errors.append(outcome.stderr.strip())

    def finish(self) -> RunResult:
        if self.reasons:
            self.status, self.reason = "failed", "; ".join(self.reasons)
            self.stderr = "\n".join(e for e in self.errors if e) or None
        return self


def run_step(lab: Lab, step: MeasureStep, own_ledger: bool = False) -> StepOutcome:
    """One measurement; a failure (or a bug in a plugin) becomes a failed outcome, not an
    exception. `own_ledger`: in a thread of its own, with its own ledger connection (SQLite
    connections belong to the thread that opened them)."""
    begun = time.monotonic()
    measure.started_at(begun)  # clear a mark left over in this thread
    ledger = Ledger(lab.ledger.state_dir) if own_ledger else None
    if ledger is not None:
        lab = lab.with_ledger(ledger)  # type: ignore[assignment]
    try:
        items = step.plugin.run(lab, step.options, step.timeout)
    except MeasurementFailed as exc:
        return StepOutcome(list(exc.samples), {}, measure.started_at(begun), exc.reason, exc.stderr)
    except Exception as exc:  # a bug or an OS error: a failed run, not a lost experiment
        return StepOutcome(
            [],
            {},
            measure.started_at(begun),
            f"internal error: {type(exc).__name__}: {exc}",
            traceback.format_exc(),
        )
    finally:
        if ledger is not None:
            ledger.close()
    samples = [s for s in items if isinstance(s, Sample)]
    texts = {t.name: t.text for t in items if isinstance(t, measure.Text)}
    return StepOutcome(samples, texts, measure.started_at(begun))


def _pairs(steps: list[MeasureStep]) -> list[tuple[str, str]]:
    """(source, target) of each measurement's traffic, both ways."""
    pairs: list[tuple[str, str]] = []
    for step in steps:
        o = step.options
        a = getattr(o, "src", None) or getattr(o, "client", None) or getattr(o, "sender", None)
        b = getattr(o, "dst", None) or getattr(o, "server", None) or getattr(o, "receiver", None)
        if isinstance(a, str) and isinstance(b, str) and (a, b) not in pairs:
            pairs += [(a, b), (b, a)]
    return pairs


def _shortest_costs(plan: Any, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """Link-cost distance of each (source, target): what a shortest-path protocol settles on."""

    index = {name: i for i, name in enumerate(plan.nodes)}
    rows = [index[link.a] for link in plan.links]
    cols = [index[link.b] for link in plan.links]
    dist = distances(len(index), len(index), rows, cols, [link.cost for link in plan.links])
    return {(a, b): float(dist[index[a], index[b]]) for a, b in pairs}


def _trace(lab: Lab, pairs: list[tuple[str, str]]) -> list[tuple[str, str, Any]]:
    """(source, target, path) of each pair, per the kernels' FIBs (a lab spread over hosts
    traces host by host: its `trace_pairs`)."""
    across = getattr(lab, "trace_pairs", None)
    if across is not None:
        return across(pairs)

    with Tracer(lab.plan) as tracer:
        return [(a, b, tracer.trace(a, lab.addr(b))) for a, b in pairs]


def _paths(lab: Lab, steps: list[MeasureStep], timeout: float = 0.0) -> list[str]:
    """The hops each measurement's traffic takes, both ways: whether a fault was on the path
    at all is what an outage of 0 needs to be read.

    With a `timeout` (before a timeline), first wait until that traffic takes shortest
    paths: after the previous run's faults a protocol is "converged" (everyone reaches
    everyone) long before it is back on its shortest paths (OSPF re-forms an adjacency in
    ~40 s, babeld's metric smoothing keeps a detour for tens of seconds), and a cut on a path
    the traffic no longer takes measures nothing. A note says so if the wait timed out."""
    plan = lab.plan
    pairs = _pairs(steps)
    switched = any(n.kind == "switch" for n in plan.nodes.values())
    routed = plan.protocol not in ("none", "bridge") and not switched
    want = _shortest_costs(plan, pairs) if timeout > 0 and routed else {}
    cost = {(link.a, link.b): link.cost for link in plan.links}
    cost.update({(b, a): c for (a, b), c in list(cost.items())})

    def detour(a: str, b: str, hops: list[str]) -> bool:
        got = sum(cost.get(h, 0) for h in itertools.pairwise(hops))
        return hops[-1:] != [b] or got != want[a, b]

    deadline = time.monotonic() + timeout
    try:
        while True:
            traced = _trace(lab, pairs)
            longer = [f"{a} → {b}" for a, b, path in traced if want and detour(a, b, path.nodes())]
            if not longer or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    except Exception as exc:  # a trace is a note beside the run, never its failure
        return [f"trace failed: {exc}"]
    lines = [f"{a} → {b}: {path}" for a, b, path in traced]
    if longer:
        lines.append(f"(not on a shortest path after {timeout:g} s: {', '.join(longer)})")
    return lines


def _reached(lab: Lab, pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (source, target) pairs whose traffic arrives, per the kernels' FIBs."""
    try:
        return {(a, b) for a, b, path in _trace(lab, pairs) if path.reached}
    except Exception:  # a trace is a note beside the run, never its failure
        return set()


def _wait_reached(lab: Lab, pairs: set[tuple[str, str]], timeout: float) -> None:
    """Until the traffic of every pair arrives again; LabError naming those that do not
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while pairs:
        missing = sorted(pairs - _reached(lab, sorted(pairs)))
        if not missing:
            return
        if time.monotonic() > deadline:
            names = ", ".join(f"{a} → {b}" for a, b in missing)
            raise LabError(f"not reached again within {timeout:g} s: {names}")
        time.sleep(0.25)


def _timeline_text(timeline: faults.Timeline) -> str:
    lines = [
        f"{actual:8.3f} s  {event}" + (f"  FAILED: {error}" if error else "")
        for _at, actual, event, error in timeline.log
    ]
    missed = len(timeline.events) - len(timeline.log)
    if missed:
        lines.append(f"({missed} later events not reached: the measurements had ended)")
    return "\n".join(lines) + "\n"


def file_hash(exp: ExperimentPlan) -> str:
    return hashlib.sha256(exp.text.encode()).hexdigest()


def find_resumable(store: ResultStore, exp: ExperimentPlan) -> int:
    """The newest unfinished experiment of this name and file hash; BadInput if none."""
    digest = file_hash(exp)
    same = [e for e in store.experiments() if e.name == exp.name and e.file_hash == digest]
    open_ = [e for e in same if e.status != "ok"]
    if open_:
        return open_[-1].id
    if same:
        raise BadInput(
            f"nothing to resume: experiment {exp.name!r} (id {same[-1].id}) of this "
            f"file finished; run without --resume to start a new one"
        )
    raise BadInput(
        f"nothing to resume: no experiment {exp.name!r} of this exact file in "
        f"{store.path} (a changed file or --set/--repeat is a new experiment)"
    )


def run_experiment(
    exp: ExperimentPlan,
    store: ResultStore,
    *,
    resume: bool = False,
    reporter: Reporter | None = None,
    ledger: Ledger | None = None,
) -> Outcome:
    """Run every planned run not stored yet; see the module docstring."""
    say = reporter or Silent()
    own_ledger = ledger is None
    ledger = ledger or _ledger()
    for plan in {p.plan.name: p.plan for p in exp.points}.values():
        _remove_left_behind(plan.name, ledger, store, say)
        preflight(plan, ledger)  # root, and lab names free: refuse before anything is stored
    runs = plan_runs(len(exp.points), exp.repeat, exp.order, exp.warmup)  # type: ignore[arg-type]
    with StopSignal() as stop:  # from here on a signal is a clean stop
        eid, done, todo = open_experiment(
            store, exp, runs, resume, lambda: collect_host_facts(experiment_programs(exp))
        )
        outcome = Outcome(eid, "ok", skipped=len(done))
        say.begin(exp, todo, len(done))
        session = _Session(exp, store, say, outcome, ledger)
        try:
            session.run_all(todo, stop)
        except BaseException:
            outcome.unfinished = True  # stored as interrupted (resumable), never as ok
            raise
        finally:
            session.close()
            close_experiment(store, outcome, stop, say)
            if own_ledger:
                ledger.close()
    return outcome


def _remove_left_behind(name: str, ledger: Ledger, store: ResultStore, say: Reporter) -> None:
    """The lab `name` if a `netrig run` of this store built it and died without removing
    it (kill -9, a crash): so `--resume`, or a new run, builds it again. A lab of that name
    that anything else made (`netrig up`, a running experiment) is left to preflight."""
    record = ledger.lab(name)
    if record is None or os.geteuid() != 0 or record.builder_alive():
        return
    if record.starttime is None or not store.owned_by(record.pid, record.starttime):
        return
    from netrig.lab.teardown import teardown

    teardown(ledger, name)
    say.note(
        f"removed lab {name}, left by netrig run {record.pid} of this database, which ended "
        "without removing it"
    )


def open_experiment(
    store: ResultStore,
    exp: ExperimentPlan,
    runs: list[Any],
    resume: bool,
    metadata: Callable[[], dict[str, Any]],
) -> tuple[int, set[tuple[int, int]], list[Any]]:
    """(experiment id, (point, repetition) pairs done, runs to do): a new experiment with
    metadata() (the hosts' facts), or with resume the last unfinished one of this file,
    running again and owned by this process, less the runs it has stored (here, on a
    cluster or a spread lab alike)."""
    if not resume:
        kinds = {step.name: step.kind for point in exp.points for step in point.steps}
        return store.begin_experiment(exp.name, exp.text, metadata(), kinds), set(), runs
    index = {point_key(p.values): i for i, p in enumerate(exp.points)}
    eid = find_resumable(store, exp)
    store.resume_experiment(eid)  # running again, owned by this process
    done = {(index[k], rep) for k, rep in store.completed_points(eid) if k in index}
    return eid, done, remaining(runs, done)


def close_experiment(
    store: ResultStore, outcome: Outcome, stop: StopSignal, say: Reporter
) -> None:
    """The experiment's final status (interrupted by a signal, failed if a run failed,
    unless stop_on_failure found its limit after a point that worked; else ok) stored, and
    the progress closed."""
    if stop.requested:
        outcome.signal = stop.name
    outcome.status = _final_status(store, outcome.experiment_id, outcome)
    store.finish_experiment(outcome.experiment_id, outcome.status)
    say.end()


def _final_status(store: ResultStore, eid: int, outcome: Outcome) -> str:
    if outcome.signal or outcome.unfinished:
        return "interrupted"  # runs are missing: `--resume` does them
    if outcome.stopped_at and outcome.last_ok:  # stop_on_failure found its limit, the
        return "ok"  # experiment's result (`run` exits 0; `results list` had said failed)
    # an interrupted run that a resume ran again does not make the experiment unfinished
    return "failed" if any(r.status == "failed" for r in store.runs(eid)) else "ok"


def _ledger() -> Ledger:
    if os.geteuid() != 0:
        raise BadInput("netrig must run as root to create network namespaces")
    return Ledger()


class _Session:
    """The state of one `run_experiment`: the current lab and what has been stored."""

    def __init__(
        self,
        exp: ExperimentPlan,
        store: ResultStore,
        say: Reporter,
        outcome: Outcome,
        ledger: Ledger,
    ) -> None:
        self.exp, self.store, self.say, self.outcome = exp, store, say, outcome
        self.ledger = ledger
        self.lab: Lab | None = None
        self.network: str | None = None
        self.broken: dict[str, str] = {}  # network → why its lab could not be built
        self.unreached_said = False  # events after the measurements: said once a session
        self.signal: StopSignal | None = None  # run_all's: it may cut a build short

    def run_all(self, todo: list[PlannedRun], stop: StopSignal) -> None:
        self.signal = stop
        for n, run in enumerate(todo):
            if stop.requested:
                break
            point = self.exp.points[run.point]
            self.say.run_started(self.exp, run)
            started = datetime.now(UTC)
            try:
                lab_problem = self._lab_for(point)
                if stop.requested:
                    break
                started = datetime.now(UTC)  # a run's time is its measurements', not the lab's
                if lab_problem:
                    result = RunResult("failed", {}, {}, lab_problem)
                else:
                    with stop.armed():
                        result = self._measure(point)
            except KeyboardInterrupt:
                result = RunResult("interrupted", {}, {}, f"interrupted by {stop.name or 'SIGINT'}")
            if stop.requested and result.status == "failed":
                # the signal may have reached the tool too (Ctrl-C goes to the whole terminal
                # process group): a failure now is not the network's
                result = RunResult(
                    "interrupted", result.samples, result.outputs, f"interrupted by {stop.name}"
                )
            self._record(run, point, result, started)
            if result.status == "failed" and self.exp.stop_on_failure:
                self.outcome.stopped_at = point.label
                self.say.note(
                    f"stopped at the first failure ({point.label}): {result.reason}"
                    + (
                        f"; the last point that worked: {o.last_ok}"
                        if (o := self.outcome).last_ok
                        else ""
                    )
                )
                break
            if result.status == "ok" and not run.warmup:
                self.outcome.last_ok = point.label
            if result.status == "interrupted":
                self.outcome.signal = stop.name or "SIGINT"
                break
            if self.exp.cooldown and n + 1 < len(todo):
                try:
                    with stop.armed():
                        time.sleep(self.exp.cooldown)
                except KeyboardInterrupt:
                    break
        if stop.requested:
            self.outcome.signal = stop.name

    def _lab_for(self, point: SweepPoint) -> str | None:
        """Make the lab of this point the running one; the reason if it cannot be built."""
        if point.network in self.broken:
            return self.broken[point.network]
        if self.lab is not None and self.network == point.network:
            return None
        self._down()
        t0 = time.perf_counter()
        lab = Lab(point.plan, self.ledger)
        where = f" for {point.label}" if point.values else ""
        self.say.note(f"[dim]building lab {lab.name} ({len(point.plan.nodes)} nodes)"
                      f"{escape(where)}[/]")
        try:
            # a signal stops the build at once, as in `up` (up to 120 s per exec line had
            # passed before `run` heeded Ctrl-C); the lab removes what it had made
            with self.signal.armed() if self.signal is not None else contextlib.nullcontext():
                lab.up(check_reachability=True)
        except LabError as exc:
            reason = f"lab {lab.name} could not be built: {exc}"
            self.broken[point.network] = reason
            self.say.note(escape(reason))  # the kernel's or a tool's words, no markup
            return reason
        finally:
            self.outcome.lab_seconds += time.perf_counter() - t0
        self.lab, self.network = lab, point.network
        self.outcome.labs_built += 1
        return None

    def _measure(self, point: SweepPoint) -> RunResult:
        assert self.lab is not None
        if point.events:
            return self._measure_with_events(point)
        result = RunResult("ok", {}, {})
        for step in point.steps:
            result.add(step, run_step(self.lab, step), several=len(point.steps) > 1)
        return result.finish()

    def _measure_with_events(self, point: SweepPoint) -> RunResult:
        """The measurements side by side while the timeline applies the point's events; then
        the lab is put back as it was, and the run gets the derived metrics (outage,
        reconvergence, throughput before/during/after) under the name `events`."""
        assert self.lab is not None
        try:
            self.lab.wait_converged("before the events")
        except LabError as exc:
            self._down()  # the next run gets a new lab
            return RunResult("failed", {}, {}, f"lab not ready for the events: {exc}")
        steps = point.steps
        done: dict[str, StepOutcome] = {}
        paths = {"before the events": _paths(self.lab, steps, STEADY_TIMEOUT)}
        # a lab whose routing netrig does not watch (a containerlab file's own FRR, static
        # routes): what its measured traffic reaches now, to be reached again afterwards
        reached = set() if self.lab.plan.routing_daemons else _reached(self.lab, _pairs(steps))
        with faults.during(self.lab, point.events) as timeline:
            threads = [
                threading.Thread(
                    target=lambda step=step: done.__setitem__(
                        step.name,
                        run_step(self.lab, step, own_ledger=True),  # type: ignore[arg-type]
                    ),
                    name=f"netrig-{step.name}",
                    daemon=True,
                )
                for step in steps
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():  # short joins: a signal is handled at once
                    thread.join(0.2)
            measured_for = time.monotonic() - timeline.started_at
            timeline.cancel()
            paths["when the measurements ended"] = _paths(self.lab, steps)
        result = RunResult("ok", {}, {})
        for step in steps:
            outcome = done[step.name]
            shift = outcome.started - timeline.started_at
            outcome.samples = [
                s if s.t is None else replace(s, t=s.t + shift) for s in outcome.samples
            ]
            result.add(step, outcome, several=True)
        applied = [
            disruption.Applied(str(event), actual, event.kind)
            for _, actual, event, error in timeline.log
            if not error
        ]
        failed = [f"event {event} failed: {error}" for _, _, event, error in timeline.log if error]
        flat = [(name, s) for name, items in result.samples.items() for s in items]
        result.samples[DERIVED_NAME] = disruption.derive(applied, flat)
        result.outputs[DERIVED_NAME] = {
            "timeline": _timeline_text(timeline),
            "paths": "".join(
                f"{when}:\n" + "".join(f"  {line}\n" for line in lines)
                for when, lines in paths.items()
            ),
        }
        result.reasons += failed
        result.whole_run_failed = bool(failed)
        missed = sorted(e.at for e in timeline.events)[len(timeline.log) :]
        if missed and not self.unreached_said:  # stored with the run; said here once
            self.unreached_said = True
            self.say.note(
                f"[yellow]{len(missed)} event(s) not reached: the measurements ended after "
                f"{measured_for:.1f} s, the first missed event is at {missed[0]:g} s; make the "
                "measurements longer or the events earlier[/]"
            )
        self._check_restored(reached)
        return result.finish()

    def _check_restored(self, reached: set[tuple[str, str]]) -> None:
        """After the timeline is undone, the routing must heal for the next run to start as
        this one did; if it does not (batmand, for one, never reinstalls a route the kernel
        dropped with a link unless it changes its mind), the lab is built anew. Routing
        netrig does not watch (a containerlab lab's own FRR, whose restarted ospfd needs
        seconds to re-form its adjacencies) heals when the measured traffic that arrived
        before the events (`reached`) arrives again."""
        assert self.lab is not None
        try:
            self.lab.wait_converged("after the events were undone")
            _wait_reached(self.lab, reached, HEAL_TIMEOUT)
        except LabError as exc:
            self.say.note(
                escape(f"lab {self.lab.name} did not heal after the events ({exc}); rebuilding it")
            )
            self._down()

    def _record(
        self, run: PlannedRun, point: SweepPoint, result: RunResult, started: datetime
    ) -> None:
        self.say.run_ended(self.exp, run, result.status, result.reason)
        if run.warmup:
            return
        run_id = self.store.record_run(
            self.outcome.experiment_id,
            point.values,
            run.repetition,
            result.status,
            result.samples,
            result.reason,
            result.stderr,
            started=started,
            ended=datetime.now(UTC),
            outputs=result.outputs,
            failed_measurements=result.failed_measurements,
        )
        self.outcome.run_ids.append(run_id)
        setattr(self.outcome, result.status, getattr(self.outcome, result.status) + 1)

    def _down(self) -> None:
        if self.lab is not None:
            t0 = time.perf_counter()
            self.lab.down()
            self.outcome.lab_seconds += time.perf_counter() - t0
        self.lab, self.network = None, None

    def close(self) -> None:
        self._down()
