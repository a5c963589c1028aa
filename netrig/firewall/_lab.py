"""Where firewalls meet the rest of netrig: resolve them into the plan, check the host, apply.

resolve(graph, nodes, problems)  # plan time: tools present? node names → addresses
apply_all(lab, say)              # after the build: every node's firewall, in its netns
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import asdict
from ipaddress import ip_interface, ip_network
from typing import TYPE_CHECKING

from netrig.firewall import FirewallError, FirewallPlan, get

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.model.load import LabGraph, Problem
    from netrig.plan.model import LabPlan, NodePlan


def resolve(graph: LabGraph, nodes: dict[str, NodePlan], problems: list[Problem]) -> None:
    """Put each node's firewall into its NodePlan, rule sources as host prefixes."""
    from netrig.model.load import Problem

    for name, spec_node in graph.nodes.items():
        fw = spec_node.firewall
        if fw is None:
            continue
        path = (*graph.node_paths[name], "firewall")
        if nodes[name].kind != "host":
            problems.append(Problem(graph.where(path), "a firewall applies to host nodes"))
            continue
        lacking = get(fw.engine).missing()
        if lacking:  # like netem: refused before anything is created, at the line that asks
            problems.append(Problem(graph.where((*path, "engine")), lacking))
            continue
        rules: list[tuple[str, str]] = []
        for j, rule in enumerate(fw.rules):
            where = graph.where((*path, "rules", j, "src"))
            if rule.src in nodes:
                rules += [(rule.action, c) for c in _host_prefixes(nodes[rule.src])]
                continue
            try:
                net = ip_network(rule.src, strict=False)
            except ValueError:
                close = difflib.get_close_matches(rule.src, list(nodes), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(
                    Problem(where, f"src {rule.src!r} is neither a node{hint} nor a CIDR")
                )
                continue
            rules.append((rule.action, str(net)))
        plan = FirewallPlan(fw.engine, fw.filler_rules, rules, fw.xdp_mode)
        nodes[name].firewall = asdict(plan)


def _host_prefixes(node: NodePlan) -> list[str]:
    cidrs = [*node.loopbacks, *(node.bridge.addrs if node.bridge else [])]
    for iface in node.ifaces:
        cidrs += iface.addrs
    out = []
    for cidr in cidrs:
        iface = ip_interface(cidr)
        out.append(f"{iface.ip}/{iface.max_prefixlen}")
    return out


def firewalls(plan: LabPlan) -> dict[str, FirewallPlan]:
    return {
        name: FirewallPlan.from_dict(n.firewall)
        for name, n in plan.nodes.items()
        if getattr(n, "firewall", None)
    }


def apply_all(lab: Lab, say: Callable[[str], None]) -> None:
    for node, fw in firewalls(lab.plan).items():
        say(f"firewall {fw.engine} in {node}: {fw.total()} rules")
        try:
            get(fw.engine).apply(lab, node, fw)
        except FirewallError as exc:
            from netrig.lab.build import LabError

            raise LabError(str(exc)) from None
