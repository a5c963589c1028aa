"""The `services:` of each node, checked against the plan and carried into it.

Each entry is `kind: {options}` (or a bare `kind`) naming a plugin of netrig.services. The
plugin's options are validated and its references (backends) checked against the planned
nodes and addresses before anything is created: a problem is a `file:line:col` message
(exit 2), like any other mistake in the file. (Its programs are the preflight's question.)

Two services of one node on one port are refused: the second could not bind it, and `up`
failed after building the lab ("Address already in use"). A balancer's backend on which
no service of the file listens on the backend port is only noted: the node may serve it
with its own `cmd:`/`exec:` (or a server started by hand), which netrig cannot see; if
not, the requests sent there fail, and the run says so.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError

from netrig.model.load import LabGraph, Problem, SpecError, _problems
from netrig.model.problems import note
from netrig.model.yamlmarks import KeyPath
from netrig.plan.model import LabPlan, ServicePlan


def plan_services(graph: LabGraph, plan: LabPlan) -> None:
    """Fill `plan.nodes[*].services`; SpecError with every problem found."""
    if not any(node.services for node in graph.nodes.values()):
        return
    registry = graph.catalog.services.load()  # plugins are imported only by files that use them
    problems: list[Problem] = []

    def where(path: KeyPath, key: bool = False) -> str:
        return graph.doc.where(path, key=key) if graph.doc else "<spec>"

    balancers: list[tuple[str, str, KeyPath, int, list[str]]] = []  # node, kind, where…
    for name, node in graph.nodes.items():
        base = (*graph.node_paths[name], "services")
        seen: set[str] = set()
        ports: dict[int, str] = {}  # port → the service of this node that listens there
        for j, item in enumerate(node.services):
            parsed = _entry(item)
            if parsed is None:
                problems.append(
                    Problem(
                        where((*base, j)),
                        "a service is one `kind: {options}` mapping, e.g. "
                        f"`{{nginx: {{files: {{1k: 1024}}}}}}`; kinds: {', '.join(sorted(registry))}",
                    )
                )
                continue
            kind, raw = parsed
            path: KeyPath = (*base, j) if isinstance(item, str) else (*base, j, kind)
            if kind not in registry:
                close = difflib.get_close_matches(kind, list(registry), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(
                    Problem(
                        where(path, key=not isinstance(item, str)),
                        f"unknown service {kind!r}{hint}; known: {', '.join(sorted(registry))}",
                    )
                )
                continue
            if kind in seen:
                problems.append(Problem(where(path), f"node {name} runs {kind} twice"))
                continue
            seen.add(kind)
            plugin = registry[kind]()
            if not isinstance(raw, dict):
                problems.append(
                    Problem(where(path), f"{kind}: options are a mapping {{key: value}}")
                )
                continue
            try:
                options = plugin.Options.model_validate(raw)
            except ValidationError as exc:
                if graph.doc is None:
                    problems.append(Problem("<spec>", f"{name}: {kind}: {exc}"))
                else:
                    problems += _problems(exc, graph.doc, plugin.Options, prefix=path)
                continue
            found = plugin.check(options, plan, name)
            for sub, message in found:
                problems.append(Problem(where((*path, *sub)), f"{kind}: {message}"))
            if found:
                continue
            try:
                address = plugin.address(options, plan, name, graph.spec.addressing.ipv4)
            except ValueError as exc:
                problems.append(Problem(where(path), f"{kind}: {exc}"))
                continue
            if address is None:  # a VIP (pen's DSR) is not bound on the node's addresses
                other = ports.setdefault(options.port, kind)
                if other != kind:
                    at = (*path, "port") if "port" in raw else path
                    problems.append(
                        Problem(
                            where(at),
                            f"{kind}: port {options.port} is also {other}'s on node {name}; "
                            "one of them could not listen there: set another `port:` on one",
                        )
                    )
                    continue
            backend_port = plugin.backend_port(options)
            if backend_port is not None:
                backends = [str(b) for b in raw.get("backends", [])]
                balancers.append((name, kind, path, backend_port, backends))
            plan.nodes[name].services.append(
                ServicePlan(kind, options.model_dump(mode="json"), options.port, address)
            )
    if problems:
        raise SpecError(problems)
    for _name, kind, path, port, backends in balancers:
        for i, backend in enumerate(backends):
            served = {s.port for s in plan.nodes[backend].services if s.address is None}
            own = graph.nodes[backend]
            if port not in served and not (own.cmd or own.exec):
                note(
                    where((*path, "backends", i)),
                    f"{kind}: backend {backend} runs no service on port {port} "
                    "(give it one, e.g. {nginx: {files: {1k: 1024}}}, or a `cmd:`): "
                    "the requests sent there will fail",
                )


def _entry(item: Any) -> tuple[str, Any] | None:
    """(kind, options) of one entry: `nginx`, `{nginx: null}` or `{nginx: {…}}`."""
    if isinstance(item, str):
        return item, {}
    if isinstance(item, dict) and len(item) == 1:
        ((kind, raw),) = item.items()
        return str(kind), {} if raw is None else raw
    return None
