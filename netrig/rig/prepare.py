"""From a file to a checked plan: read (model), plan (plan), then one preflight against this
host, fed by what each plugin the file names declares it needs.

The model and the plan import no plugin: `catalog()` hands them the plugin registries. The
preflight is the one place that asks the host (kernel features, programs) about a file, so
`netrig validate`, `netrig plan`, `netrig up` and `netrig run` refuse the same things, each
at the file:line that asks for it, before anything is created.

    graph = load_file("examples/ring16.yaml")      # LabGraph (model), plugins resolved
    plan = plan_lab(graph)                          # LabPlan, host checked
    exp = load_experiment("examples/seed000-static.yaml", {"duration": "2"})
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from netrig.model import foreign, yamlmarks
from netrig.model import load as model_load
from netrig.model.filekind import is_experiment
from netrig.model.load import LabGraph, Problem, SpecError
from netrig.plan.lab import build_plan
from netrig.plan.model import LabPlan
from netrig.rig.catalog import catalog
from netrig.rig.hostneeds import Need, lacking, line_feature

if TYPE_CHECKING:
    from netrig.model.experiment import ExperimentModel
    from netrig.model.models import LabSpec
    from netrig.plan.experiment import ExperimentPlan, SweepPoint

# Imported where they are used, not here: a lab file's `netrig validate` needs neither the
# experiment model, the host's kernel features, Open vSwitch nor the plugin packages it
# does not name (tests/test_startup.py checks what it imports).


# ------------------------------------------------------------------ lab files


def load_file(path: str, name: str | None = None, topo: str | None = None) -> LabGraph:
    """A lab file (netrig, containerlab, Mininet: `topo` picks its Topo), as lab NAME."""
    return model_load.load_file(path, catalog(), name, topo)


def load_text(text: str, file: str = "<string>") -> LabGraph:
    return model_load.load_text(text, file, catalog())


def from_spec(spec: LabSpec | dict[str, Any]) -> LabGraph:
    """A lab described in code: a LabSpec or the same dict a YAML file would hold."""
    from netrig.model.models import LabSpec

    if not isinstance(spec, dict | LabSpec):
        raise TypeError(
            f"a lab is described by a dict (as a YAML file holds it) or a LabSpec, not "
            f"{type(spec).__name__}; for a file: Lab.from_file(PATH)"
        )
    if isinstance(spec, dict):
        import yaml

        from netrig.model.yamlmarks import FROM_CODE

        return load_text(yaml.safe_dump(spec), FROM_CODE)
    return model_load.from_spec(spec, catalog())


def plan_lab(graph: LabGraph, defer_routes: bool = False) -> LabPlan:
    """The plan of a lab, its host needs checked (SpecError at file:line otherwise).
    defer_routes: see netrig.plan.lab.build_plan (the caller finishes or cancels them)."""
    return _plan_with_needs(graph, defer_routes)[0]


def _plan_with_needs(graph: LabGraph, defer_routes: bool) -> tuple[LabPlan, list[Need]]:
    """plan_lab, with the needs it checked (what a remembered plan asks for again)."""
    plan = build_plan(graph, defer_routes)
    try:
        needs = host_needs(graph, plan)
        problems = _unmet(needs)
    except BaseException:
        plan.cancel_routes()
        raise
    if problems:
        plan.cancel_routes()
        raise SpecError(problems)
    return plan, [need for need, _where, _message in needs]


def plan_file(
    path: str, name: str | None = None, topo: str | None = None, defer_routes: bool = False
) -> LabPlan:
    return plan_lab(load_file(path, name, topo), defer_routes)


def plan_netrig_bytes(
    path: str, data: bytes, name: str | None = None, defer_routes: bool = False
) -> tuple[LabPlan, list[Need]] | None:
    """A netrig lab file's bytes, read once by a caller that keys them (netrig.rig.plancache),
    planned, with what the plan needs from a host; None when they are not a netrig lab file
    (another tool's, an experiment, not UTF-8: plan_file reads and reports those)."""
    try:  # as open() in text mode reads it (universal newlines)
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        return None
    doc = yamlmarks.load(text, path)
    if foreign.kind_of(path, doc.data) != "netrig" or is_experiment(doc.data):
        return None
    return _plan_with_needs(
        model_load.load_doc(foreign.with_name(doc, name), catalog()), defer_routes
    )


def is_experiment_file(path: str) -> bool:
    """True when the file has `measure:` (or another experiment key); False for a lab file
    (also for one that does not parse: the lab loader then says why)."""
    if path.endswith(".py"):  # a Mininet topology: a lab
        return False
    try:
        return is_experiment(yamlmarks.load_file(path).data)
    except (OSError, SpecError):
        return False


# ------------------------------------------------------------------ experiment files


def load_experiment(
    path: str,
    overrides: Mapping[str, str] | None = None,
    repeat: int | None = None,
    name: str | None = None,
) -> ExperimentPlan:
    """Read, plan and check an experiment file (its lab named `name` if given); SpecError
    (file:line:col) if it is wrong."""
    from netrig.model.experiment import load_experiment_model
    from netrig.plan.experiment import plan_experiment

    deferred: list[Problem] = []
    model = load_experiment_model(path, overrides, repeat, name, deferred)
    return _said_with(deferred, lambda: _checked(plan_experiment(model, catalog()), model))


def first_point(path: str, name: str | None = None) -> SweepPoint:
    """An experiment file's first sweep point, its plan marked as coming from the file:
    the lab `netrig up` (and Lab.from_file) builds of an experiment file."""
    point = load_experiment(path, name=name).points[0]
    point.plan.source_file = os.path.abspath(path)
    return point


def load_experiment_text(
    text: str,
    file: str = "<string>",
    overrides: Mapping[str, str] | None = None,
    repeat: int | None = None,
) -> ExperimentPlan:
    from netrig.model.experiment import load_experiment_model_text
    from netrig.plan.experiment import plan_experiment

    deferred: list[Problem] = []
    model = load_experiment_model_text(text, file, overrides, repeat, deferred=deferred)
    return _said_with(deferred, lambda: _checked(plan_experiment(model, catalog()), model))


def _said_with(deferred: list[Problem], plan: Callable[[], ExperimentPlan]) -> ExperimentPlan:
    """plan(), with the problems of the run settings found before (see
    load_experiment_model_text) said first, beside those planning finds or alone."""
    try:
        planned = plan()
    except SpecError as exc:
        if deferred:
            raise SpecError([*deferred, *exc.problems]) from None
        raise
    if deferred:
        raise SpecError(deferred)
    return planned


def _checked(exp: ExperimentPlan, model: ExperimentModel) -> ExperimentPlan:
    """The preflight of every distinct lab of the sweep and of the measurements' programs."""
    from netrig import measure
    from netrig.model.experiment import substitute_point

    problems: list[Problem] = []
    seen: set[str] = set()
    for point in exp.points:
        if point.network not in seen:
            seen.add(point.network)
            found = host_problems(None, point.plan, exp.file)
            if found:  # said again at their lines: the point's lab read once more
                graph = model_load.load_doc(substitute_point(model, point.values).lab, catalog())
                found = host_problems(graph, point.plan, exp.file)
            problems += found
    for program, package in measure.missing_tools(exp.tools()).items():
        problems.append(
            Problem(
                exp.file,
                f"{program} is not installed; install it with: apt-get install {package}"
                if package
                else f"{program}: command not found on PATH",
            )
        )
    if problems:
        raise SpecError(list({str(p): p for p in problems}.values()))
    return exp


# ------------------------------------------------------------------ the preflight


def host_problems(graph: LabGraph | None, plan: LabPlan, file: str = "<spec>") -> list[Problem]:
    """What this host lacks for the plan: kernel features and programs, each at the place
    of the file that asks for it (the file itself when only the plan is at hand)."""
    return _unmet(host_needs(graph, plan, file))


def _unmet(needs: list[tuple[Need, str, str]]) -> list[Problem]:
    problems = []
    for need, where, message in needs:
        reason = lacking(need)
        if reason is not None:
            problems.append(Problem(where, reason or message))
    return problems


def host_needs(
    graph: LabGraph | None, plan: LabPlan, file: str = "<spec>"
) -> list[tuple[Need, str, str]]:
    """What the plan needs from a host, each with the place of the file that asks for it
    and what to say when the host lacks it (kernel features, programs, bind sources)."""

    def where(path: tuple[str | int, ...], key: bool = False) -> str:
        return graph.where(path) if graph is not None and graph.doc is not None else file

    def node_path(name: str) -> tuple[str | int, ...]:
        return graph.node_paths.get(name, ()) if graph is not None else ()

    needs: list[tuple[Need, str, str]] = []
    for i, link in enumerate(plan.links):
        netem = [k for k in ("delay", "jitter", "loss") if getattr(link, k, None)]
        if netem:
            path = graph.links[i].path if graph is not None else ()
            needs.append(
                (
                    ("feature", "netem"),
                    where(path),
                    f"link {link.a}–{link.b} sets {', '.join(netem)}, which needs the netem "
                    "qdisc; this kernel has no netem (see `netrig doctor`)",
                )
            )
    written = graph.spec.sysctls if graph is not None else plan.sysctls
    for key in written:  # a key this kernel lacks had passed validate, then failed `up`
        needs.append(
            (
                ("sysctl", key),
                where(("sysctls", key)),
                f"sysctl {key}: this kernel has no such key (no /proc/sys/"
                f"{key.replace('.', '/')}; `sysctl -a` lists the keys it has)",
            )
        )
    cls = catalog().routing.lookup(plan.protocol)
    proto = cls(cls.Options.model_validate(plan.routing_options))  # its options pick its programs
    for program, package in proto.programs.items():
        needs.append(
            (
                ("program", program),
                where(("routing", "protocol")),
                f"routing {plan.protocol} runs {program}, which is not installed; "
                f"install it with: apt-get install -y {package}",
            )
        )
    ovs_nodes = [n for n in plan.nodes.values() if n.ovs is not None]
    if ovs_nodes:
        standalone = any(n.ovs and n.ovs.controller == "standalone" for n in ovs_nodes)
        needs.append(
            (("ovs", "standalone" if standalone else ""), where(node_path(ovs_nodes[0].name)), "")
        )
    named: set[str] = set()  # programs of exec lines and cmds, each needed once
    kernel_named: set[str] = set()  # kernel features exec lines need, each once
    for name, node in plan.nodes.items():
        if node.firewall:
            engine = node.firewall["engine"]
            needs.append(
                (("firewall", engine), where((*node_path(name), "firewall", "engine")), "")
            )
        lines: list[tuple[tuple[str | int, ...], list[str], str]] = [
            (("exec", j), argv, "exec line") for j, argv in enumerate(node.exec)
        ]
        lines += [(("cmd",), node.cmd, "cmd")] if node.cmd else []
        for place, argv, what in lines:
            # a bare name is looked up on the host's PATH before the node is entered (one
            # given by path is the node's own business, a bound one included): `up` had
            # said "not found" after validate said ok. Once per program, at its first line:
            # a remembered plan checks its needs at every `up` (an exported ring: 208 ip)
            if argv and "/" not in argv[0] and argv[0] not in named:
                named.add(argv[0])
                needs.append(
                    (
                        ("program", argv[0]),
                        where((*node_path(name), *place)),
                        f"{name}: {what} {shlex.join(argv)}: {argv[0]!r} is not on this "
                        "host's PATH (nodes run the host's programs)",
                    )
                )
        for j, argv in enumerate(node.exec):  # a kernel feature the line plainly needs
            needed = line_feature(argv)
            if needed is not None and needed[0] not in kernel_named:
                kernel_named.add(needed[0])
                needs.append(
                    (
                        ("feature", needed[0]),
                        where((*node_path(name), "exec", j)),
                        f"{name}: exec line {shlex.join(argv)} needs {needed[1]}; this "
                        f"kernel has no {needed[0]} (see `netrig doctor`)",
                    )
                )
        for j, (source, inside, _ro) in enumerate(node.binds):
            needs.append(
                (
                    ("path", source),
                    where((*node_path(name), "binds", j)),
                    f"{name}: bind {source} → {inside}: {source} does not exist on this host",
                )
            )
        for j, svc in enumerate(node.services):
            plugin = catalog().services.lookup(svc.kind)()
            options = plugin.Options.model_validate(svc.options)
            for program, package in plugin.tools(options).items():
                needs.append(
                    (
                        ("program", program),
                        where((*node_path(name), "services", j)),
                        f"service {svc.kind} needs {program}, which is not installed; "
                        f"install it with: apt-get install -y {package}",
                    )
                )
    return needs


def routing_programs(plan: LabPlan) -> dict[str, str]:
    """The routing protocol's programs (its options pick them: ospf's bird or FRR's) → their
    Debian packages."""
    cls = catalog().routing.lookup(plan.protocol)
    return dict(cls(cls.Options.model_validate(plan.routing_options)).programs)


def lab_programs(plan: LabPlan) -> dict[str, str]:
    """The programs the lab itself runs → their Debian packages: its routing daemons, its
    firewall engines' tools, its services' servers (the measurements' are exp.tools())."""
    out = routing_programs(plan)
    for node in plan.nodes.values():
        if node.firewall:
            from netrig import firewall

            out.update(firewall.registry.lookup(node.firewall["engine"]).programs)
        for svc in node.services:
            plugin = catalog().services.lookup(svc.kind)()
            out.update(plugin.tools(plugin.Options.model_validate(svc.options)))
    return out


def experiment_programs(exp: ExperimentPlan) -> dict[str, str]:
    """Every program an experiment runs → its package: its measurements' and those of the
    labs of its sweep points (what `run --dry-run` lists, and whose versions a run records:
    seed 002's results had kept clang's version, not iptables' or nft's)."""
    out = dict(exp.tools())
    for plan in {point.network: point.plan for point in exp.points}.values():
        out.update(lab_programs(plan))
    return out
