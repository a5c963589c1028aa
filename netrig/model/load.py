"""Load a lab file: YAML with positions → typed models → one graph of nodes and links.

Every problem becomes a `SpecError` whose lines read `file:line:col: message`, found
before anything is created. The expanded `LabGraph` has generated and explicit parts merged.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from netrig.model import foreign, yamlmarks
from netrig.model.catalog import Catalog, RoutingTraits
from netrig.model.filekind import EXPERIMENT_KEYS
from netrig.model.models import MAX_LINKS, MAX_NODES, LabSpec, Link, LinkAttrs, Node
from netrig.model.problems import Problem, SpecError
from netrig.model.topology import generate


@dataclass
class GraphLink:
    a: str
    b: str
    attrs: LinkAttrs
    a_ifname: str | None = None
    b_ifname: str | None = None
    a_addr: list[Any] | None = None
    b_addr: list[Any] | None = None
    path: tuple[str | int, ...] = ()  # where it was written, for later errors


@dataclass
class LabGraph:
    """The lab as plain nodes and links, generated and explicit parts merged."""

    spec: LabSpec
    nodes: dict[str, Node]
    links: list[GraphLink]
    protocol: RoutingTraits
    catalog: Catalog
    doc: yamlmarks.MarkedDoc | None = None
    node_paths: dict[str, tuple[str | int, ...]] = field(default_factory=dict)

    def where(self, path: tuple[str | int, ...]) -> str:
        return self.doc.where(path) if self.doc else "<spec>"


def load_file(
    path: str, catalog: Catalog, name: str | None = None, topo: str | None = None
) -> LabGraph:
    """A lab file of netrig's, containerlab's (*.clab.yml) or Mininet's (*.py, `topo` picks
    one of its `topos`), under another lab name if `name` is given."""
    return load_doc(foreign.with_name(foreign.lab_doc(path, topo=topo), name), catalog)


def load_text(text: str, file: str, catalog: Catalog) -> LabGraph:
    return load_doc(yamlmarks.load(text, file), catalog)


def load_doc(doc: yamlmarks.MarkedDoc, catalog: Catalog) -> LabGraph:
    if not isinstance(doc.data, dict):
        raise SpecError([Problem(doc.where(()), "a lab file is a mapping (name:, topology:, …)")])
    for what, limit in (("nodes", MAX_NODES), ("links", MAX_LINKS)):
        listed = doc.data.get(what)  # counted before each is validated (33,000: 14 s, 450 MB)
        if isinstance(listed, list) and len(listed) > limit:
            raise SpecError([Problem(doc.where((what,)), _too_large(what, len(listed), limit))])
    try:
        spec = LabSpec.model_validate(doc.data)
    except ValidationError as exc:
        raise SpecError(_problems(exc, doc, LabSpec)) from None
    _check_firewall_engines(spec, doc, catalog)
    protocol = _make_protocol(spec, doc, catalog)
    return merge_graph(spec, protocol, doc, catalog)


def from_spec(spec: LabSpec, catalog: Catalog) -> LabGraph:
    """For labs built in code (Python API) rather than from a file."""
    _check_firewall_engines(spec, None, catalog)
    return merge_graph(spec, _make_protocol(spec, None, catalog), None, catalog)


def _check_firewall_engines(
    spec: LabSpec, doc: yamlmarks.MarkedDoc | None, catalog: Catalog
) -> None:
    problems = []
    for i, node in enumerate(spec.nodes):
        if node.firewall is not None and catalog.firewall.get(node.firewall.engine) is None:
            engine = node.firewall.engine
            known = catalog.firewall.load()
            where = doc.where(("nodes", i, "firewall", "engine")) if doc else "<spec>"
            hint = _did_you_mean(engine, known)
            problems.append(
                Problem(
                    where,
                    f"unknown firewall engine {engine!r}{hint}; known: {', '.join(sorted(known))}",
                )
            )
    if problems:
        raise SpecError(problems)


def _make_protocol(
    spec: LabSpec, doc: yamlmarks.MarkedDoc | None, catalog: Catalog
) -> RoutingTraits:
    where = doc.where if doc else (lambda path, key=False: "<spec>")
    name = spec.routing.protocol
    cls = catalog.routing.get(name)  # imports that protocol's module only
    if cls is None:
        protocols = catalog.routing.load()
        hint = _did_you_mean(name, protocols)
        raise SpecError(
            [
                Problem(
                    where(("routing", "protocol")),
                    f"unknown routing protocol {name!r}{hint}; "
                    f"known: {', '.join(sorted(protocols))}",
                )
            ]
        )
    try:
        proto: RoutingTraits = cls(cls.Options.model_validate(spec.routing.options()))
    except ValidationError as exc:
        if doc is None:
            raise SpecError([Problem("<spec>", str(exc))]) from None
        problems = _problems(exc, doc, cls.Options, prefix=("routing",), also_known=("protocol",))
        raise SpecError(problems) from None
    if (
        cls.addressing
        and "mode" in spec.addressing.model_fields_set
        and spec.addressing.mode != cls.addressing
    ):
        raise SpecError(
            [
                Problem(
                    where(("addressing", "mode")),
                    f"routing {name!r} needs addressing mode {cls.addressing!r} "
                    f"(got {spec.addressing.mode!r}); leave `mode` out or set it so",
                )
            ]
        )
    if spec.addressing.mode in cls.refuses_addressing:
        raise SpecError(
            [
                Problem(
                    where(("addressing", "mode")),
                    f"routing {name!r} cannot use addressing mode {spec.addressing.mode!r}",
                )
            ]
        )
    return proto


def _too_large(what: str, count: int, limit: int) -> str:
    return f"{count:,} {what}: a lab has at most {limit:,}"


def merge_graph(
    spec: LabSpec, protocol: RoutingTraits, doc: yamlmarks.MarkedDoc | None, catalog: Catalog
) -> LabGraph:
    """Merge the generated topology with explicit nodes and links; check references."""
    graph = LabGraph(spec, {}, [], protocol, catalog, doc)
    problems: list[Problem] = []
    index_of: dict[frozenset[str], int] = {}
    if spec.topology:
        names, edges = generate(spec.topology)
        for name in names:
            graph.nodes[name] = Node(name=name)
            graph.node_paths[name] = ("topology",)
        for a, b in edges:
            index_of[frozenset((a, b))] = len(graph.links)
            graph.links.append(GraphLink(a, b, spec.link_defaults, path=("topology",)))
    explicit: set[str] = set()
    for i, node in enumerate(spec.nodes):
        if node.name in explicit:
            problems.append(
                Problem(graph.where(("nodes", i, "name")), f"duplicate node {node.name!r}")
            )
            continue
        explicit.add(node.name)
        graph.nodes[node.name] = node  # overrides a generated node of that name
        graph.node_paths[node.name] = ("nodes", i)
    seen_explicit: dict[frozenset[str], int] = {}  # the pair → its first link's index
    for i, link in enumerate(spec.links):
        for end in ("a", "b"):
            name = getattr(link, end)
            if name not in graph.nodes:
                hint = _did_you_mean(name, graph.nodes)
                problems.append(
                    Problem(graph.where(("links", i, end)), f"link to unknown node {name!r}{hint}")
                )
        key = frozenset((link.a, link.b))
        if key in seen_explicit:  # parallel links: the plan has one link per pair of nodes
            at = graph.where(("links", seen_explicit[key]))
            parts = at.rsplit(":", 2)
            first = f"on line {parts[1]}" if len(parts) == 3 and parts[1].isdigit() else at
            problems.append(Problem(graph.where(("links", i)), (
                f"a second link {link.a}–{link.b} (the first is {first}): netrig builds "
                f"one link between two nodes; put a switch node ({_switch_words(graph)}) on "
                "the second, or leave it out")))  # fmt: skip
            continue
        seen_explicit[key] = i
        merged = _merge_attrs(spec.link_defaults, link)
        glink = GraphLink(
            link.a,
            link.b,
            merged,
            link.a_ifname,
            link.b_ifname,
            link.a_addr,
            link.b_addr,
            ("links", i),
        )
        if key in index_of:  # the topology already has this link: set its attributes
            old = graph.links[index_of[key]]
            if (old.a, old.b) != (link.a, link.b):  # keep the generated orientation
                glink = GraphLink(
                    old.a,
                    old.b,
                    merged,
                    link.b_ifname,
                    link.a_ifname,
                    link.b_addr,
                    link.a_addr,
                    ("links", i),
                )
            graph.links[index_of[key]] = glink
        else:
            index_of[key] = len(graph.links)
            graph.links.append(glink)
    _check_shared_netns(graph, problems)
    for what, count, limit in (("nodes", len(graph.nodes), MAX_NODES),
                               ("links", len(graph.links), MAX_LINKS)):  # fmt: skip
        if count > limit:  # a topology and explicit parts together
            problems.append(Problem(graph.where(()), _too_large(what, count, limit)))
    if not problems:  # the protocol's options against nodes and links that all exist
        problems += [Problem(graph.where(path), msg) for path, msg in protocol.check(graph)]
    if problems:
        raise SpecError(problems)
    return graph


def _check_shared_netns(graph: LabGraph, problems: list[Problem]) -> None:
    """`netns: X` names a node with its own namespace, and the sharing node has no links."""
    linked = {end for link in graph.links for end in (link.a, link.b)}
    for name, node in graph.nodes.items():
        if node.netns is None:
            continue
        where = graph.where((*graph.node_paths[name], "netns"))
        other = graph.nodes.get(node.netns)
        if node.netns == name:
            problems.append(Problem(where, f"netns: {name!r} is this node itself; name the "
                                           "node whose namespace it shares"))  # fmt: skip
        elif other is None:
            hint = _did_you_mean(node.netns, graph.nodes)
            problems.append(Problem(where, f"netns: no other node {node.netns!r}{hint}"))
        elif other.netns is not None or other.kind != "host":
            problems.append(
                Problem(where, f"netns: {node.netns!r} must be a host with its own namespace")
            )
        elif name in linked:
            problems.append(
                Problem(where, f"{name} shares {node.netns}'s namespace, so it has no links")
            )


def _switch_words(graph: LabGraph) -> str:
    """How the file's own language says "a switch node"."""
    file = graph.doc.file if graph.doc is not None else ""
    if file.endswith(".py"):
        return "Mininet: addSwitch"
    if file.endswith((".clab.yml", ".clab.yaml")):
        return "containerlab: kind bridge"
    return "kind: switch"


def _merge_attrs(defaults: LinkAttrs, link: Link) -> LinkAttrs:
    values = defaults.model_dump(exclude_unset=True)
    values.update(link.attrs())
    return LinkAttrs.model_validate(values)


# ----------------------------------------------------------------- error messages


def _experiment_hint(key: str) -> str:
    """A lab file's unknown top key that reads like an experiment's (`measurements:`): a
    file is an experiment by its keys, so this one was read as a lab, whose keys were listed."""
    import difflib  # for wrong files only

    if key in EXPERIMENT_KEYS:  # an experiment file where a lab file goes (`lab: exp.yaml`)
        return (
            f": {key!r} is a key of experiment files, and this file is read as a lab file "
            "here (`lab:` names a lab file: move the lab part into a file of its own)"
        )
    close = difflib.get_close_matches(key, EXPERIMENT_KEYS, n=1, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {close[0]!r}, a key of experiment files?)"


def _did_you_mean(word: int | str, choices: Any) -> str:
    import difflib  # for wrong files only

    names = [str(c) for c in choices]
    # another protocol's name of the same timer (babel's hello_interval is IS-IS's hello)
    same = [n for n in names if _bare(n) == _bare(str(word))]
    close = same or difflib.get_close_matches(str(word), names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _bare(key: str) -> str:
    """A timer's name without its unit or kind: hello_interval, hello_time → hello."""
    for suffix in ("_interval", "_time", "_timer"):
        key = key.removesuffix(suffix)
    return key


def _problems(
    exc: ValidationError,
    doc: yamlmarks.MarkedDoc,
    model: type[BaseModel],
    prefix: tuple[str | int, ...] = (),
    also_known: tuple[str, ...] = (),
) -> list[Problem]:
    """Pydantic's errors as file:line problems. `also_known`: keys valid beside the model's
    own at its top (a routing block's `protocol` beside the protocol's options)."""
    problems = []
    for err in exc.errors():
        kind = err["type"]
        # an unknown key is the user's own word (even "a[b]" or "int"), never a pydantic tag
        raw, last = (
            (err["loc"][:-1], err["loc"][-1:]) if kind == "extra_forbidden" else (err["loc"], ())
        )
        loc = (*(p for p in raw if isinstance(p, int) or not _is_tag(p)), *last)
        path = (*prefix, *loc)
        if kind == "extra_forbidden":
            fields = [*_fields_at(model, loc[:-1]), *(also_known if len(loc) == 1 else ())]
            hint = _did_you_mean(loc[-1], fields) if fields else ""
            if not hint and len(loc) == 1 and model is LabSpec:
                hint = _experiment_hint(str(loc[-1]))
            known = f"; known keys: {', '.join(fields)}" if fields and not hint else ""
            problems.append(
                Problem(doc.where(path, key=True), f"unknown key {loc[-1]!r}{hint}{known}")
            )
            continue
        if kind == "missing":
            problems.append(Problem(doc.where(path[:-1]), f"missing key {path[-1]!r}"))
            continue
        msg = err["msg"].removeprefix("Value error, ")
        if kind not in ("value_error", "assertion_error") and "input" in err:
            got = err["input"]
            if not isinstance(got, dict | list):
                msg += f" (got {got!r})"
        name = ".".join(str(p) for p in path)
        label = f"{name}: " if name and kind != "value_error" else ""
        problems.append(Problem(doc.where(path), f"{label}{msg}"))
    # one message per place: pydantic reports each arm of a union separately
    unique: dict[str, Problem] = {}
    for p in problems:
        unique.setdefault(p.where, p)
    return list(unique.values())


def _is_tag(part: str) -> bool:
    """pydantic adds union-arm and validator tags to locations; they are not YAML keys."""
    return "[" in part or part in (
        "function-after",
        "function-before",
        "IPv4Interface",
        "IPv6Interface",
        "int",
        "str",
    )


def _fields_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            args = typing.get_args(current)
            current = args[0] if args else None
        elif isinstance(current, type) and issubclass(current, BaseModel):
            fld = current.model_fields.get(part)
            current = fld.annotation if fld else None
        else:
            return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _unwrap(tp: Any) -> Any:
    """Optional[X] → X (the model arm of a union)."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        for arg in typing.get_args(tp):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return tp
