"""Shortest-path routes of small labs in pure Python, the same as netrig.plan.routes gives.

netrig.plan.routes finds next hops with numpy (and scipy from SCIPY_FROM_VERTICES up), whose
import alone costs more than planning a 100-node lab: `netrig validate` of a small lab would
spend most of its time importing. Below that size this module computes the same distances
(Dijkstra on integer weights), the same next-hop test (numpy.isclose's, so the results are
equal, not just equivalent) and hands them to the same exact aggregation.

    routes = compute_routes(plan, multipath=False)   # what static and ecmp install
"""

from __future__ import annotations

import heapq
import math

from netrig.plan import routes as vectorised
from netrig.plan.model import LabPlan, NetworkPlan, RoutePlan

# numpy.isclose's default tolerances: next hops are picked with the very same test
RTOL, ATOL = 1e-05, 1e-08


def compute_routes(plan: LabPlan, multipath: bool) -> dict[str, list[RoutePlan]]:
    """Routes per host: in Python for a lab below SCIPY_FROM_VERTICES vertices (hosts and
    networks), with numpy and scipy above."""
    hosts = sum(1 for n in plan.nodes.values() if n.kind == "host")
    nets = sum(1 for n in plan.networks if n.members)
    if hosts + nets >= vectorised.SCIPY_FROM_VERTICES:
        return vectorised.compute_routes(plan, multipath)
    return python_routes(plan, multipath)


def python_routes(plan: LabPlan, multipath: bool) -> dict[str, list[RoutePlan]]:
    hosts = [n.name for n in plan.hosts()]
    nets = [n for n in plan.networks if len(n.members) >= 1]
    if not hosts:
        return {}
    h_index = {name: i for i, name in enumerate(hosts)}
    n_h, n_v = len(hosts), len(hosts) + len(nets)
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n_v)]
    adjacency: dict[int, list[tuple[int, int]]] = {}  # host → [(net k, cost)]
    for k, net in enumerate(nets):
        for node, _port in net.members:
            h = h_index[node]
            adj[h].append((n_h + k, net.cost))  # doubled half-cost: weights stay integers
            adj[n_h + k].append((h, net.cost))
            adjacency.setdefault(h, []).append((k, net.cost))
    dist = [_dijkstra(adj, s, n_v) for s in range(n_h)]

    dest_prefixes = vectorised._destination_prefixes(plan, hosts, nets)
    routes: dict[str, list[RoutePlan]] = {}
    for s, name in enumerate(hosts):
        gateways: list[tuple[int, NetworkPlan, str, int]] = []  # (v, net, port, cost)
        for k, cost in adjacency.get(s, []):
            net = nets[k]
            port = next(p for n, p in net.members if n == name)
            for member, _ in net.members:
                if member != name:
                    gateways.append((h_index[member], net, port, 2 * cost))
        if not gateways:
            routes[name] = []
            continue
        connected = {n_h + k for k, _ in adjacency.get(s, [])}
        groups = _group_destinations(dist, gateways, s, n_v, connected, multipath)
        routes[name] = vectorised._aggregate(
            plan, name, groups, gateways, dest_prefixes, connected, s
        )
    return routes


def _dijkstra(adj: list[list[tuple[int, int]]], s: int, n_v: int) -> list[float]:
    best: dict[int, int] = {s: 0}
    heap = [(0, s)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > best[u]:
            continue
        for v, w in adj[u]:
            nd = d + w
            if nd < best.get(v, nd + 1):
                best[v] = nd
                heapq.heappush(heap, (nd, v))
    row = [math.inf] * n_v
    for v, d in best.items():
        row[v] = d
    return row


def _group_destinations(
    dist: list[list[float]],
    gateways: list[tuple[int, NetworkPlan, str, int]],
    s: int,
    n_v: int,
    connected: set[int],
    multipath: bool,
) -> dict[int | tuple[int, ...], list[int]]:
    """Destination vertices per next-hop choice (first gateway, or the set for ECMP):
    gateway j is a next hop to t when cost(s→j) + D[j, t] is close to D[s, t]."""
    best = dist[s]
    via = [(dist[v], c) for v, _, _, c in gateways]
    groups: dict[int | tuple[int, ...], list[int]] = {}
    for t in range(n_v):
        b = best[t]
        if t == s or t in connected or b == math.inf:
            continue
        tol = ATOL + RTOL * abs(b)
        hits = [j for j, (row, c) in enumerate(via) if abs(row[t] + c - b) <= tol]
        if not hits:
            continue
        key: int | tuple[int, ...] = tuple(hits) if multipath else hits[0]
        groups.setdefault(key, []).append(t)
    return groups
