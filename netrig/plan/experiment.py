"""An experiment planned: each sweep point's lab plan, its measurements with validated options,
its events checked against that plan, and the list of runs.

Every sweep point is substituted (netrig.model.experiment) and planned up front, each
measurement checked by its plugin against that point's plan, so a typo or a server that does
not exist is reported as `file:line:col` before anything is created. The measurement plugins
come from the catalog the rig hands down: the plan imports none.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from netrig.base.disjoint import DisjointSets
from netrig.base.values import render
from netrig.model import yamlmarks
from netrig.model.catalog import Catalog, MeasurementTraits
from netrig.model.experiment import ExperimentModel, ExperimentSettings, substitute_point
from netrig.model.load import Problem, SpecError, _problems, load_doc
from netrig.model.yamlmarks import KeyPath
from netrig.plan.events import Event, check_events, parse_event
from netrig.plan.lab import build_plan
from netrig.plan.model import LabPlan, UnknownName
from netrig.plan.runs import PlannedRun, plan_runs


@dataclass(frozen=True)
class MeasureStep:
    """One measurement of a run: its unique name, its plugin and validated options."""

    name: str
    kind: str
    plugin: MeasurementTraits  # a netrig.measure plugin (from the catalog: the plan imports none)
    options: BaseModel  # its validated Options model (the plugin's own Options type)
    timeout: float


@dataclass
class SweepPoint:
    """One combination of the `vary:` values, with the lab and measurements it stands for."""

    values: dict[str, Any]
    plan: LabPlan
    steps: list[MeasureStep]
    network: str  # the plan as JSON: equal between two points → one lab serves both
    events: list[Event] = field(default_factory=list)

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={render(v)}" for k, v in self.values.items()) or "-"


@dataclass(kw_only=True)
class ExperimentPlan(ExperimentSettings):
    """An experiment file planned: every sweep point's lab, measurements and events."""

    name: str = ""
    points: list[SweepPoint] = field(default_factory=list)

    def tools(self) -> dict[str, str]:
        """Every program the measurements need → its Debian package."""
        out: dict[str, str] = {}
        for point in self.points:
            for step in point.steps:
                out.update(step.plugin.tools(step.options))
        return out

    def runs(self) -> list[PlannedRun]:
        """Every run, warm-ups included, in the order they will run."""
        return plan_runs(len(self.points), self.repeat, self.order, self.warmup)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """What `netrig plan --json` prints: every point's lab plan, measurements, events, and
        the runs in order (lossless for the lab plans: LabPlan.from_dict reads them back)."""
        return {
            "name": self.name,
            "file": self.file,
            "repeat": self.repeat,
            "order": self.order,
            "warmup": self.warmup,
            "cooldown": self.cooldown,
            "stop_on_failure": self.stop_on_failure,
            "points": [
                {
                    "values": p.values,
                    "lab": json.loads(p.network),
                    "measure": [
                        {
                            "name": s.name,
                            "kind": s.kind,
                            "options": s.options.model_dump(mode="json"),
                            "timeout": s.timeout,
                        }
                        for s in p.steps
                    ],
                    "events": [str(e) for e in p.events],
                }
                for p in self.points
            ],
            "runs": [
                {"point": r.point, "repetition": r.repetition, "warmup": r.warmup}
                for r in self.runs()
            ],
        }


def plan_experiment(model: ExperimentModel, catalog: Catalog) -> ExperimentPlan:
    """Every sweep point substituted, its lab planned and its measurements and events checked
    against that plan; SpecError with every problem (and the points it occurs at)."""
    settings = {f.name: getattr(model, f.name) for f in dataclasses.fields(ExperimentSettings)}
    exp = ExperimentPlan(**settings)
    _build_points(exp, model, catalog)
    exp.name = exp.points[0].plan.name
    return exp


def _build_points(exp: ExperimentPlan, model: ExperimentModel, catalog: Catalog) -> None:
    combos = model.points()
    found: dict[tuple[str, str], list[str]] = {}
    for values in combos:
        try:
            exp.points.append(_point(model, values, catalog))
        except SpecError as exc:
            label = ", ".join(f"{k}={render(v)}" for k, v in values.items())
            for p in exc.problems:
                found.setdefault((p.where, p.message), []).append(label)
    if found:
        problems = []
        for (where, message), labels in found.items():
            if len(combos) > 1 and len(labels) < len(combos):
                shown = "; ".join(labels[:3]) + (" …" if len(labels) > 3 else "")
                message = f"{message} (at {shown})"
            problems.append(Problem(where, message))
        raise SpecError(problems)


def _point(model: ExperimentModel, values: dict[str, Any], catalog: Catalog) -> SweepPoint:
    """Substitute one sweep point, validate its lab and measurements, plan its lab."""
    point = substitute_point(model, values)
    doc = model.doc
    plan = build_plan(load_doc(point.lab, catalog))
    steps = _steps(doc, point.measure, plan, catalog)
    # a measurement's traffic ends with its length, or its timeout if that comes first
    lengths = [None if (n := s.plugin.length(s.options)) is None else min(n, s.timeout)
               for s in steps]  # fmt: skip
    longest = None if None in lengths or not lengths else max(x for x in lengths if x is not None)
    events = _events(doc, point.events, plan, catalog, longest)
    if events:
        steps = [_during_events(s) for s in steps]
        _refuse_shared_udp_counts(doc, steps)
    return SweepPoint(values, plan, steps, plan.to_json(with_routes=True), events)


def _refuse_shared_udp_counts(doc: yamlmarks.MarkedDoc, steps: list[MeasureStep]) -> None:
    """With events the measurements run together: one that counts all of a node's UDP (pps's
    sink reads the namespace's UDP counters, which cannot tell flows apart) would count
    another's datagrams arriving there too (two pps into one node: rx 15 kpps each, loss
    -50 % and -200 %). Refused at the later of the two (steps are in `measure:` order,
    all of them, or _steps had raised)."""
    problems = []
    for j, later in enumerate(steps):
        for earlier in steps[:j]:
            pair = ((earlier, later), (later, earlier))
            counting = [(c, o) for c, o in pair if _counts_udp_of(c, o)]
            if not counting:
                continue
            counter, other = counting[0]
            node, family = counter.plugin.udp_counted(counter.options)  # type: ignore[misc]
            whose = (
                f"each counts every UDP datagram reaching {node}, so each would count the "
                "other's as its own"
                if len(counting) == 2
                else f"{counter.name} counts every UDP datagram reaching {node}, so it would "
                f"count {other.name}'s as its own"
            )
            problems.append(Problem(
                doc.where(("measure", j)),
                f"{later.name} and {earlier.name} both send UDP to {node} (IPv{family}) and, "
                f"with events:, run at the same time; {whose} (a loss below 0): measure them "
                "in separate files, or into different nodes",
            ))  # fmt: skip
    if problems:
        raise SpecError(problems)


def _counts_udp_of(counter: MeasureStep, other: MeasureStep) -> bool:
    """Does `counter` read whole UDP counters of a node `other` sends UDP to?"""
    counted = counter.plugin.udp_counted(counter.options)
    return counted is not None and counted in other.plugin.udp_arrives(other.options)


def _during_events(step: MeasureStep) -> MeasureStep:
    """A measurement's options and timeout for a run whose events cut and restore paths."""
    options = step.plugin.during_events(step.options)
    return dataclasses.replace(step, options=options, timeout=step.plugin.events_timeout(options))


def _events(
    doc: yamlmarks.MarkedDoc,
    texts: list[Any],
    plan: LabPlan,
    catalog: Catalog,
    longest: float | None = None,
) -> list[Event]:
    """Each event read and checked against the point's lab: the link or node must exist,
    stopping a node needs a daemon to stop (a routing daemon, or the node's services or
    `cmd:`, which `netrig node LAB N stop|start` stops and starts too), and it must come
    before the longest measurement ends (`longest` s, when every measurement's length is
    known)."""
    problems, events = [], []
    has_daemons = catalog.routing.lookup(plan.protocol).runs_daemons()
    for i, text in enumerate(texts):
        where = doc.where(("events", i))
        try:
            (event,) = check_events(plan, [parse_event(str(text))])
        except (ValueError, UnknownName) as exc:
            problems.append(Problem(where, f"event: {exc}"))
            continue
        node = plan.node(event.target[0]) if event.kind.startswith("node") else None
        if node is not None and not (has_daemons or node.services or node.cmd):
            problems.append(
                Problem(
                    where,
                    f"event {text!r}: protocol {plan.protocol} runs no daemon to stop or start, "
                    f"and node {node.name} has no services and no cmd: (use a protocol that "
                    "does: batman, babel, ospf, bgp or isis; a node with services; or a link "
                    "event)",
                )
            )
            continue
        if longest is not None and event.at >= longest:  # validated ok, then never applied
            problems.append(
                Problem(
                    where,
                    f"event {text!r} comes after every measurement has ended (the longest "
                    f"runs {longest:g} s): it would never happen; make it earlier or the "
                    "measurements longer",
                )
            )
            continue
        events.append(event)
    if problems:
        raise SpecError(problems)
    return sorted(events, key=lambda e: e.at)


DERIVED_NAME = "events"  # what a run with events stores its derived metrics as


def _islands(plan: LabPlan) -> Callable[[str], str]:
    """The node's connected part of the lab (its links, and the node whose namespace it
    shares), named by one of its nodes: a ping to a node no link reaches validated ok and
    failed at run time, "Network is unreachable"."""
    shared = {name: node.shares for name, node in plan.nodes.items() if node.shares}
    sets = DisjointSets(plan.nodes, shared)
    for link in plan.links:
        sets.union(link.a, link.b)
    return sets.find


def _steps(
    doc: yamlmarks.MarkedDoc, items: list[Any], plan: LabPlan, catalog: Catalog
) -> list[MeasureStep]:
    problems: list[Problem] = []
    steps: list[MeasureStep] = []
    island = _islands(plan)
    names: set[str] = set()
    for i, item in enumerate(items):
        where = doc.where(("measure", i))
        if not isinstance(item, dict) or len(item) != 1:
            problems.append(
                Problem(
                    where,
                    "a measurement is one `tool: {options}` mapping, "
                    f"e.g. `- iperf3: {{client: n1, server: n2}}`; tools: "
                    f"{', '.join(sorted(catalog.measure.load()))}",
                )
            )
            continue
        ((kind, raw_options),) = item.items()
        try:
            plugin = catalog.measure.lookup(str(kind))()
        except KeyError as exc:
            problems.append(Problem(doc.where(("measure", i, kind), key=True), exc.args[0]))
            continue
        prefix: KeyPath = ("measure", i, kind)
        if raw_options is None:
            raw_options = {}
        if not isinstance(raw_options, dict):
            problems.append(
                Problem(doc.where(prefix), f"{kind}: options are a mapping {{key: value}}")
            )
            continue
        try:
            options = plugin.Options.model_validate(raw_options)
        except ValidationError as exc:
            problems += _problems(exc, doc, plugin.Options, prefix=prefix)
            continue
        for path, message in plugin.check(options, plan):
            problems.append(Problem(doc.where((*prefix, *path)), f"{kind}: {message}"))
        for a, b in plugin.endpoints(options):
            if a in plan.nodes and b in plan.nodes and island(a) != island(b):
                problems.append(Problem(doc.where(prefix), f"{kind}: no link path joins {a} "
                                        f"and {b}: no traffic can pass between them"))  # fmt: skip
        name = options.name or plugin.name
        if name == DERIVED_NAME:
            problems.append(
                Problem(
                    doc.where((*prefix, "name")),
                    f"measurement name {name!r} is netrig's own: a run with events stores its "
                    "derived metrics (outage, reconvergence, …) under it; choose another",
                )
            )
            continue
        if name in names:
            if options.name:
                problems.append(
                    Problem(
                        doc.where((*prefix, "name")), f"measurement name {name!r} is used twice"
                    )
                )
                continue
            name = next(f"{name}-{n}" for n in itertools.count(2) if f"{name}-{n}" not in names)
        names.add(name)
        steps.append(MeasureStep(name, plugin.name, plugin, options, plugin.timeout(options)))
    if problems:
        raise SpecError(problems)
    return steps
