"""Shortest-path routes of small labs in pure Python, equal to netrig.plan.routes' own.

netrig.plan.routes finds next hops with numpy (and scipy for large labs), whose import alone
costs more than planning a 100-node lab: `netrig validate` of a small lab spent most of its
time importing. Below PYTHON_BELOW vertices (hosts and networks) this module computes the
same routes without numpy: Dijkstra's distances (breadth first when every link costs the
same), numpy.isclose's own next-hop test, and the same smallest tables
(netrig.plan.prefixes.smallest_table) over the destinations sorted once per lab. Larger labs
go to netrig.plan.routes. tests/plan/test_routes_py.py checks that both give the same routes
on every topology kind.

    routes = compute_routes(plan, multipath=False)   # what static and ecmp install
"""

from __future__ import annotations

import math
import os
from ipaddress import ip_address

from netrig.plan.model import LabPlan, NodePlan, RoutePlan
from netrig.plan.prefixes import (
    ANY,
    EXACT_BELOW,
    Gateway,
    choice_values,
    destination_prefixes,
    dijkstra,
    gateway_hops,
    gateways_of,
    in_processes,
    pool_ranges,
    smallest_table,
)

PYTHON_BELOW = 400  # vertices; netrig.plan.routes' SCIPY_FROM_VERTICES
RTOL, ATOL = 1e-05, 1e-08  # numpy.isclose's defaults: next hops are picked by its very test


def compute_routes(plan: LabPlan, multipath: bool) -> dict[str, list[RoutePlan]]:
    """Routes per host: in Python below PYTHON_BELOW vertices, by netrig.plan.routes above."""
    n_v = sum(1 for n in plan.nodes.values() if n.kind == "host")
    n_v += sum(1 for n in plan.networks if n.members)
    if n_v < PYTHON_BELOW:
        return python_routes(plan, multipath)
    from netrig.plan import routes  # numpy and scipy

    return routes.compute_routes(plan, multipath)


def python_routes(plan: LabPlan, multipath: bool) -> dict[str, list[RoutePlan]]:
    hosts = [n.name for n in plan.hosts()]
    nets = [n for n in plan.networks if len(n.members) >= 1]
    if not hosts:
        return {}
    h_index = {name: i for i, name in enumerate(hosts)}
    n_h, n_v = len(hosts), len(hosts) + len(nets)
    spans = _sorted_spans(destination_prefixes(plan, hosts, nets))
    pools = {version: pool_ranges(plan, version) for version in spans}
    adjacency: dict[int, list[tuple[int, int]]] = {}  # host → [(net k, cost)]
    for k, net in enumerate(nets):
        for node, _port in net.members:
            adjacency.setdefault(h_index[node], []).append((k, net.cost))
    hitsets_of = _python_hitsets(n_h, n_v, nets, h_index)
    host_plans = plan.hosts()
    cidrs: dict[tuple[int, int, int], str] = {}  # (version, start, size log) → "a/len"

    def plan_sources(sources: list[int]) -> dict[str, list[RoutePlan]]:
        routes: dict[str, list[RoutePlan]] = {}
        for s in sources:
            name = hosts[s]
            gateways = gateways_of(name, adjacency.get(s, []), nets, h_index)
            if not gateways:
                routes[name] = []
                continue
            allowed, values = choice_values(hitsets_of(s, gateways), multipath)
            allowed[s] = ANY  # itself and its connected subnets: the kernel's own routes win
            for k, _ in adjacency[s]:
                allowed[n_h + k] = ANY
            routes[name] = _tables(
                plan.nodes[name], allowed, values, spans, pools, gateways, host_plans, cidrs
            )
        return routes

    cpus = os.cpu_count() or 1
    if n_h < FORK_FROM_HOSTS or cpus < 2:
        return plan_sources(list(range(n_h)))
    routes = in_processes(plan_sources, [list(range(i, n_h, cpus)) for i in range(cpus)])
    return {name: routes[name] for name in hosts}  # in the hosts' order, as one process gives


FORK_FROM_HOSTS = 64  # hosts: from here a forked child per core plans a share of the sources


def _sorted_spans(
    dest_prefixes: list[list[tuple[int, int, int]]],
) -> dict[int, list[tuple[int, int, int]]]:
    """Per family present: (first, last address, vertex) of every destination, in order."""
    spans: dict[int, list[tuple[int, int, int]]] = {4: [], 6: []}
    for vertex, prefixes in enumerate(dest_prefixes):
        for version, lo, hi in prefixes:
            spans[version].append((lo, hi, vertex))
    for items in spans.values():
        items.sort()
    return {version: items for version, items in spans.items() if items}


# ------------------------------------------------------------------ next hops


def _python_hitsets(n_h, n_v, nets, h_index):
    """A function: source, its gateways → per destination vertex the bit set of gateways
    that are a next hop to it (0: unreachable), from Dijkstra in Python."""
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n_v)]
    for k, net in enumerate(nets):
        for node, _port in net.members:
            h = h_index[node]
            adj[h].append((n_h + k, net.cost))  # doubled half-cost: weights stay integers
            adj[n_h + k].append((h, net.cost))
    if len({net.cost for net in nets}) == 1:
        dist = [_bfs(adj, s, n_v, nets[0].cost) for s in range(n_h)]
    else:
        dist = [dijkstra(adj, s, n_v) for s in range(n_h)]
    exact = max((d for row in dist for d in row if d != math.inf), default=0) < EXACT_BELOW

    def hitsets(s: int, gateways: list[Gateway]) -> list[int]:
        best = dist[s]
        out = [0] * n_v
        for j, (v, _, _, cost) in enumerate(gateways):
            bit = 1 << j
            for t, hit in enumerate(_hits(dist[v], cost, best, exact)):
                if hit:
                    out[t] |= bit
        return out

    return hitsets


def _hits(row: list[float], cost: int, best: list[float], exact: bool) -> list[bool]:
    """cost + row[t] is numpy.isclose to a finite best[t], for every t."""
    if exact:  # inf - x and inf - inf are never an integer cost
        return [b - a == cost for a, b in zip(row, best, strict=True)]
    return [abs(a + cost - b) <= ATOL + RTOL * abs(b) for a, b in zip(row, best, strict=True)]


def _bfs(adj: list[list[tuple[int, int]]], s: int, n_v: int, weight: int) -> list[float]:
    """Dijkstra's distances when every edge weighs the same."""
    row: list[float] = [math.inf] * n_v
    row[s] = 0
    frontier = [s]
    d = 0
    while frontier:
        d += weight
        following = []
        for u in frontier:
            for v, _ in adj[u]:
                if row[v] == math.inf:
                    row[v] = d
                    following.append(v)
        frontier = following
    return row


# ------------------------------------------------------------------ tables


def _tables(
    node: NodePlan,
    allowed: list[int],
    values: list[int],
    spans: dict[int, list[tuple[int, int, int]]],
    pools: dict[int, list[tuple[int, int]]],
    gateways: list[Gateway],
    hosts: list[NodePlan],
    cidrs: dict[tuple[int, int, int], str],
) -> list[RoutePlan]:
    """netrig.plan.routes' _Spans.routes: per family the smallest table of the allowed
    sets, each value's gateways as next hops."""
    routes: list[RoutePlan] = []
    for version, items in spans.items():
        bits = 32 if version == 4 else 128
        table = smallest_table(
            [(lo, hi, allowed[vertex]) for lo, hi, vertex in items], pools[version], bits
        )
        nexthops: dict[int, list[tuple[str, int]] | None] = {}
        for start, size_log, value in table:
            if value not in nexthops:
                nexthops[value] = gateway_hops(node, values[value], version, gateways, hosts)
            hops = nexthops[value]
            if hops is None:
                continue
            cidr = cidrs.get((version, start, size_log))
            if cidr is None:
                cidr = cidrs[version, start, size_log] = _cidr(version, bits, start, size_log)
            routes.append(RoutePlan(cidr, list(hops)))
    return routes


def _cidr(version: int, bits: int, start: int, size_log: int) -> str:
    """As netrig.plan.routes writes it: ip_address(start), whatever the family."""
    if version == 4:
        return (
            f"{start >> 24}.{start >> 16 & 255}.{start >> 8 & 255}.{start & 255}/{bits - size_log}"
        )
    return f"{ip_address(start)}/{bits - size_log}"
