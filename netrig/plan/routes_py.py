"""Shortest-path routes, the same as netrig.plan.routes gives, computed faster.

netrig.plan.routes finds next hops with numpy (and scipy from SCIPY_FROM_VERTICES vertices
up), whose import alone costs more than planning a 100-node lab, and aggregates them in a
loop that parses a gateway address for every route it writes: `netrig validate` of a small
lab spent most of its time importing, and of a 1000-node ring most of it aggregating.

Here, below SCIPY_FROM_VERTICES, distances and next hops are computed in Python: Dijkstra on
integer weights and numpy.isclose's own test (so the results are equal, not just
equivalent); from there on with netrig.plan.routes' numpy and scipy. Either way the
aggregation is netrig.plan.routes' own algorithm, with each gateway's address and interface
looked up once per node and each prefix written once per lab.
tests/plan/test_routes_py.py checks that the routes equal netrig.plan.routes' on every
topology kind.

    routes = compute_routes(plan, multipath=False)   # what static and ecmp install
"""

from __future__ import annotations

import heapq
import math
from ipaddress import ip_address

from netrig.plan import routes as vectorised
from netrig.plan.model import LabPlan, NetworkPlan, NodePlan, RoutePlan

RTOL, ATOL = 1e-05, 1e-08  # numpy.isclose's defaults: next hops are picked by its very test
EXACT_BELOW = 10**5  # integer distances below this: isclose(a, b) is a == b

Gateway = tuple[int, NetworkPlan, str, int]  # (host vertex, network, own port, cost)
Key = int | tuple[int, ...]  # a gateway, or the set of them (ECMP)


def compute_routes(plan: LabPlan, multipath: bool) -> dict[str, list[RoutePlan]]:
    """Routes per host: next hops in Python below SCIPY_FROM_VERTICES vertices (hosts and
    networks), with numpy and scipy above."""
    hosts = [n.name for n in plan.hosts()]
    nets = [n for n in plan.networks if len(n.members) >= 1]
    if not hosts:
        return {}
    h_index = {name: i for i, name in enumerate(hosts)}
    n_h, n_v = len(hosts), len(hosts) + len(nets)
    adjacency: dict[int, list[tuple[int, int]]] = {}  # host → [(net k, cost)]
    for k, net in enumerate(nets):
        for node, _port in net.members:
            adjacency.setdefault(h_index[node], []).append((k, net.cost))
    if n_v >= vectorised.SCIPY_FROM_VERTICES:
        groups_of = _numpy_groups(n_h, n_v, nets, h_index, multipath)
    else:
        groups_of = _python_groups(n_h, n_v, nets, h_index, multipath)

    dest_prefixes = vectorised._destination_prefixes(plan, hosts, nets)
    host_plans = plan.hosts()
    cidrs: dict[tuple[int, int, int], str] = {}  # (version, start, size log) → "a/len"
    routes: dict[str, list[RoutePlan]] = {}
    for s, name in enumerate(hosts):
        gateways: list[Gateway] = []
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
        groups = groups_of(s, gateways, connected)
        node = plan.nodes[name]
        routes[name] = _aggregate(
            node, groups, gateways, dest_prefixes, connected, s, host_plans, cidrs
        )
    return routes


# ------------------------------------------------------------------ next hops


def _python_groups(n_h, n_v, nets, h_index, multipath):  # type: ignore[no-untyped-def]
    """Per source: destination vertices per next-hop choice, from Dijkstra in Python."""
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n_v)]
    for k, net in enumerate(nets):
        for node, _port in net.members:
            h = h_index[node]
            adj[h].append((n_h + k, net.cost))  # doubled half-cost: weights stay integers
            adj[n_h + k].append((h, net.cost))
    dist = [_dijkstra(adj, s, n_v) for s in range(n_h)]
    exact = max((d for row in dist for d in row if d != math.inf), default=0) < EXACT_BELOW

    def groups(s: int, gateways: list[Gateway], connected: set[int]) -> dict[Key, list[int]]:
        best = dist[s]
        skip = connected | {s}
        hit = [
            _hits(dist[v], c, best, exact) for v, _, _, c in gateways
        ]  # per gateway: a next hop to t?
        out: dict[Key, list[int]] = {}
        for t in range(n_v):
            if t in skip or best[t] == math.inf:
                continue
            if multipath:
                key: Key = tuple(j for j, row in enumerate(hit) if row[t])
                if not key:
                    continue
            else:
                for j, row in enumerate(hit):
                    if row[t]:
                        key = j
                        break
                else:
                    continue
            out.setdefault(key, []).append(t)
        return out

    return groups


def _hits(row: list[float], cost: int, best: list[float], exact: bool) -> list[bool]:
    """cost + row[t] is numpy.isclose to best[t], for every t."""
    if exact:
        return [a + cost == b for a, b in zip(row, best, strict=True)]
    return [abs(a + cost - b) <= ATOL + RTOL * abs(b) for a, b in zip(row, best, strict=True)]


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


def _numpy_groups(n_h, n_v, nets, h_index, multipath):  # type: ignore[no-untyped-def]
    """Per source: destination vertices per next-hop choice, with numpy and scipy (as
    netrig.plan.routes.compute_routes finds them)."""
    import numpy as np

    rows, cols, weights = [], [], []
    for k, net in enumerate(nets):
        for node, _port in net.members:
            rows.append(h_index[node])
            cols.append(n_h + k)
            weights.append(net.cost)
    dist = vectorised.distances(n_h, n_v, rows, cols, weights)

    def groups(s: int, gateways: list[Gateway], connected: set[int]) -> dict[Key, list[int]]:
        cand = np.stack([dist[v] + c for v, _, _, c in gateways])
        best = dist[s]
        hit = np.isclose(cand, best) & np.isfinite(best)
        return vectorised._group_destinations(hit, n_v, s, connected, multipath)

    return groups


# ------------------------------------------------------------------ aggregation


def _aggregate(
    node: NodePlan,
    groups: dict[Key, list[int]],
    gateways: list[Gateway],
    dest_prefixes: list[list[tuple[int, int, int]]],
    connected: set[int],
    s: int,
    hosts: list[NodePlan],
    cidrs: dict[tuple[int, int, int], str],
) -> list[RoutePlan]:
    """netrig.plan.routes._aggregate: merge adjacent destinations with the same next hops
    (the node's own spans, key None, join any run), then write each run as aligned blocks."""
    spans: dict[int, list[tuple[int, int, Key | None]]] = {4: [], 6: []}
    for vertex in (s, *connected):
        for version, lo, hi in dest_prefixes[vertex]:
            spans[version].append((lo, hi, None))
    for key, dests in groups.items():
        for t in dests:
            for version, lo, hi in dest_prefixes[t]:
                spans[version].append((lo, hi, key))
    nexthops: dict[tuple[Key, int], list[tuple[str, int]] | None] = {}
    routes: list[RoutePlan] = []
    for version, items in spans.items():
        items.sort(key=lambda x: (x[0], x[1]))
        runs: list[tuple[int, int, Key]] = []  # (first, last, key) of each run's keyed part
        first = last = end = -1  # keyed part of the run so far; the end of the whole run
        run_key: Key | None = None
        in_run = False
        for lo, hi, key in items:
            if in_run and lo == end + 1 and (key is None or run_key is None or key == run_key):
                end = hi
            else:
                if run_key is not None:
                    runs.append((first, last, run_key))
                in_run, run_key, end = True, None, hi
            if key is not None:
                if run_key is None:
                    first, run_key = lo, key
                last = hi
        if run_key is not None:
            runs.append((first, last, run_key))
        bits = 32 if version == 4 else 128
        for lo, hi, key in runs:
            if (key, version) not in nexthops:
                nexthops[key, version] = _nexthops(node, key, version, gateways, hosts)
            hops = nexthops[key, version]
            if hops is None:
                continue
            for block in vectorised._range_to_cidrs(lo, hi):
                cidr = cidrs.get((version, *block))
                if cidr is None:
                    cidr = cidrs[version, *block] = _cidr(version, bits, *block)
                routes.append(RoutePlan(cidr, list(hops)))
    return routes


def _nexthops(
    node: NodePlan, key: Key, version: int, gateways: list[Gateway], hosts: list[NodePlan]
) -> list[tuple[str, int]] | None:
    """(gateway address, own ifindex) of each gateway of `key`; None if one has no address
    of this family (no route then, as in netrig.plan.routes)."""
    out = []
    for j in key if isinstance(key, tuple) else (key,):
        v, net, port, _ = gateways[j]
        gw = vectorised._port_address(hosts[v], net, version)
        if gw is None:
            return None
        bridge = node.bridge
        out.append((gw, bridge.index if bridge and port == bridge.name else node.iface(port).index))
    return out


def _cidr(version: int, bits: int, start: int, size_log: int) -> str:
    """As netrig.plan.routes writes it: ip_address(start), whatever the family."""
    if version == 4:
        return (
            f"{start >> 24}.{start >> 16 & 255}.{start >> 8 & 255}.{start & 255}/{bits - size_log}"
        )
    return f"{ip_address(start)}/{bits - size_log}"
