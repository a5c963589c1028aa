"""Run an experiment: build labs, run the planned runs, store each run in one transaction.

    exp = load_experiment("ring.yaml")
    with ResultStore("netrig.db") as store:
        outcome = run_experiment(exp, store)

A lab is built for the first run and kept while the next run's network is the same (the
sweep point changes only measurement options); it is rebuilt when the network part changes.
The lab is named after the experiment, so experiments of different names run side by side.

A failing measurement makes a failed run (with the reason and the tool's stderr); a lab that
cannot be built fails the runs of its sweep point. Ctrl-C or SIGTERM stops the current run,
stores it as `interrupted`, tears the lab down and keeps every finished run; `resume=True`
continues the newest unfinished experiment of the same file (same hash) where it stopped.
"""

from __future__ import annotations

import hashlib
import os
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from netrig import measure
from netrig.experiment.interrupt import StopSignal
from netrig.lab.build import BadInput, LabError, preflight
from netrig.lab.lab import Lab
from netrig.lab.ledger import Ledger
from netrig.plan.runs import PlannedRun, plan_runs, remaining
from netrig.results.hostfacts import collect_host_facts
from netrig.results.sample import MeasurementFailed, Sample
from netrig.results.store import ResultStore, point_key
from netrig.spec.experiment import Experiment, SweepPoint


class Reporter(Protocol):
    """What the runner tells its user interface (the CLI's progress bar, or nothing)."""

    def begin(self, exp: Experiment, runs: list[PlannedRun], stored: int) -> None: ...
    def run_started(self, exp: Experiment, run: PlannedRun) -> None: ...
    def run_ended(
        self, exp: Experiment, run: PlannedRun, status: str, reason: str | None
    ) -> None: ...
    def note(self, message: str) -> None: ...
    def end(self) -> None: ...


class Silent:
    """A reporter that says nothing (the Python API's default)."""

    def begin(self, exp: Experiment, runs: list[PlannedRun], stored: int) -> None:
        pass

    def run_started(self, exp: Experiment, run: PlannedRun) -> None:
        pass

    def run_ended(self, exp: Experiment, run: PlannedRun, status: str, reason: str | None) -> None:
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
    run_ids: list[int] = field(default_factory=list)


@dataclass
class RunResult:
    status: str
    samples: dict[str, list[Sample]]
    outputs: dict[str, dict[str, str]]
    reason: str | None = None
    stderr: str | None = None


def check_tools(exp: Experiment) -> None:
    """Refuse before anything is built if a measurement's program is missing."""
    missing = measure.missing_tools(exp.tools())
    if missing:
        lines = [
            f"{cmd} is not installed; install it with: apt-get install {pkg}"
            if pkg
            else f"{cmd}: command not found on PATH"
            for cmd, pkg in missing.items()
        ]
        raise LabError("; ".join(lines))


def file_hash(exp: Experiment) -> str:
    return hashlib.sha256(exp.text.encode()).hexdigest()


def find_resumable(store: ResultStore, exp: Experiment) -> int:
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
    exp: Experiment,
    store: ResultStore,
    *,
    resume: bool = False,
    reporter: Reporter | None = None,
    ledger: Ledger | None = None,
) -> Outcome:
    """Run every planned run not stored yet; see the module docstring."""
    say = reporter or Silent()
    check_tools(exp)
    own_ledger = ledger is None
    ledger = ledger or _ledger()
    for plan in {p.plan.name: p.plan for p in exp.points}.values():
        preflight(plan, ledger)  # root, and lab names free: refuse before anything is stored
    runs = plan_runs(len(exp.points), exp.repeat, exp.order, exp.warmup)  # type: ignore[arg-type]
    index = {point_key(p.values): i for i, p in enumerate(exp.points)}
    with StopSignal() as stop:  # from here on a signal is a clean stop
        if resume:
            eid = find_resumable(store, exp)
            done = {(index[k], rep) for k, rep in store.completed_points(eid) if k in index}
            todo = remaining(runs, done)
        else:
            eid = store.begin_experiment(exp.name, exp.text, collect_host_facts(exp.tools()))
            done, todo = set(), runs
        outcome = Outcome(eid, "ok", skipped=len(done))
        say.begin(exp, todo, len(done))
        session = _Session(exp, store, say, outcome, ledger)
        try:
            session.run_all(todo, stop)
        finally:
            session.close()
            if stop.requested:
                outcome.signal = stop.name
            outcome.status = _final_status(store, eid, outcome)
            store.finish_experiment(eid, outcome.status)  # type: ignore[arg-type]
            say.end()
            if own_ledger:
                ledger.close()
    return outcome


def _final_status(store: ResultStore, eid: int, outcome: Outcome) -> str:
    if outcome.signal:
        return "interrupted"
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
        exp: Experiment,
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

    def run_all(self, todo: list[PlannedRun], stop: StopSignal) -> None:
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
        self.say.note(f"[dim]building lab {lab.name} ({len(point.plan.nodes)} nodes){where}[/]")
        try:
            lab.up(check_reachability=True)
        except LabError as exc:
            reason = f"lab {lab.name} could not be built: {exc}"
            self.broken[point.network] = reason
            self.say.note(reason)
            return reason
        finally:
            self.outcome.lab_seconds += time.perf_counter() - t0
        self.lab, self.network = lab, point.network
        self.outcome.labs_built += 1
        return None

    def _measure(self, point: SweepPoint) -> RunResult:
        assert self.lab is not None
        result = RunResult("ok", {}, {})
        reasons, errors = [], []
        for step in point.steps:
            try:
                items = step.plugin.run(self.lab, step.options, step.timeout)
            except MeasurementFailed as exc:
                result.samples[step.name] = list(exc.samples)
                reasons.append(f"{step.name}: {exc.reason}" if len(point.steps) > 1 else exc.reason)
                if exc.stderr:
                    errors.append(exc.stderr.strip())
                continue
            except Exception as exc:  # a bug or an OS error: a failed run, not a lost experiment
                reasons.append(f"{step.name}: internal error: {type(exc).__name__}: {exc}")
                errors.append(traceback.format_exc())
                continue
            result.samples[step.name] = [s for s in items if isinstance(s, Sample)]
            texts = {t.name: t.text for t in items if isinstance(t, measure.Text)}
            if texts:
                result.outputs[step.name] = texts
        if reasons:
            result.status, result.reason = "failed", "; ".join(reasons)
            result.stderr = "\n".join(e for e in errors if e) or None
        return result

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
            result.status,  # type: ignore[arg-type]
            result.samples,
            result.reason,
            result.stderr,
            started=started,
            ended=datetime.now(UTC),
            outputs=result.outputs,
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
