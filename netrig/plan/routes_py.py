"""Shortest-path routes of small labs in pure Python, equal to netrig.plan.routes' own.

netrig.plan.routes finds next hops with numpy (and scipy for large labs), whose import alone
costs more than planning a 100-node lab: `netrig validate` of a small lab spent most of its
time importing. Below PYTHON_BELOW vertices (hosts and networks) this module computes the
same routes without numpy: Dijkstra's distances (breadth first when every link costs the
same), numpy.isclose's own next-hop test, and netrig.plan.routes' exact aggregation over
the destinations sorted once per lab. Larger labs go to netrig.plan.routes.
tests/plan/test_routes_py.py checks that both give the same routes on every topology kind.

    routes = compute_routes(plan, multipath=False)   # what static and ecmp install
"""

from __future__ import annotations

import math
from ipaddress import ip_address
from itertools import compress, pairwise

from netrig.plan.model import LabPlan, NetworkPlan, NodePlan, RoutePlan
from netrig.plan.prefixes import destination_prefixes, dijkstra, port_address, range_to_cidrs

PYTHON_BELOW = 400  # vertices; netrig.plan.routes' SCIPY_FROM_VERTICES
RTOL, ATOL = 1e-05, 1e-08  # numpy.isclose's defaults: next hops are picked by its very test
EXACT_BELOW = 10**5  # integer distances below this: isclose(a, b) is a == b

Gateway = tuple[int, NetworkPlan, str, int]  # (host vertex, network, own port, cost)
Key = int | tuple[int, ...]  # a gateway, or the set of them (ECMP)


def compute_routes(plan: LabPlan, multipath: bool) -> dict[str, list[RoutePlan]]:
    """Routes per host: in Python below PYTHON_BELOW vertices, by netrig.plan.routes above."""
    n_v = sum(1 for n in plan.nodes.values() if n.kind == "host")
    n_v += sum(1 for n in plan.networks if n.members)
    if n_v < PYTHON_BELOW:
        found = python_routes(plan, multipath)
        if found is not None:
            return found
    from netrig.plan import routes  # numpy and scipy

    return routes.compute_routes(plan, multipath)


def python_routes(plan: LabPlan, multipath: bool) -> dict[str, list[RoutePlan]] | None:
    """None when two destinations share one span (netrig.plan.routes' order decides then)."""
    hosts = [n.name for n in plan.hosts()]
    nets = [n for n in plan.networks if len(n.members) >= 1]
    if not hosts:
        return {}
    h_index = {name: i for i, name in enumerate(hosts)}
    n_h, n_v = len(hosts), len(hosts) + len(nets)
    spans = _sorted_spans(destination_prefixes(plan, hosts, nets))
    if spans is None:
        return None
    adjacency: dict[int, list[tuple[int, int]]] = {}  # host → [(net k, cost)]
    for k, net in enumerate(nets):
        for node, _port in net.members:
            adjacency.setdefault(h_index[node], []).append((k, net.cost))
    keys_of = _python_keys(n_h, n_v, nets, h_index, multipath)
    first_family = spans[4] or spans[6]
    order = [vertex for _lo, _hi, vertex in first_family]  # netrig.plan.routes' spans.order
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
        own = {s, *(n_h + k for k, _ in adjacency[s])}  # itself and its connected subnets
        keys = keys_of(s, gateways, order, own)
        for vertex in own:
            keys[vertex] = OWN
        routes[name] = _aggregate(plan.nodes[name], keys, spans, gateways, host_plans, cidrs)
    return routes


OWN = -1  # the key of what a node covers itself: its loopbacks and connected subnets


def _sorted_spans(
    dest_prefixes: list[list[tuple[int, int, int]]],
) -> dict[int, list[tuple[int, int, int]]] | None:
    """Per family: (first, last address, vertex) of every destination, in address order;
    None if two destinations have the very same span."""
    spans: dict[int, list[tuple[int, int, int]]] = {4: [], 6: []}
    for vertex, prefixes in enumerate(dest_prefixes):
        for version, lo, hi in prefixes:
            spans[version].append((lo, hi, vertex))
    for items in spans.values():
        items.sort()
        if any(a[:2] == b[:2] for a, b in pairwise(items)):
            return None
    return spans


# ------------------------------------------------------------------ next hops


def _python_keys(n_h, n_v, nets, h_index, multipath):  # type: ignore[no-untyped-def]
    """Per source: the next-hop choice of every destination vertex (None: no route), from
    Dijkstra in Python."""
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

    def keys(s: int, gateways: list[Gateway], order: list[int], own: set[int]) -> list[Key | None]:
        best = dist[s]
        hit = [_hits(dist[v], c, best, exact) for v, _, _, c in gateways]
        out: list[Key | None] = [None] * n_v
        if multipath:
            gates = range(len(hit))
            for t, column in enumerate(zip(*hit, strict=True)):
                if any(column):
                    out[t] = tuple(compress(gates, column))
        else:
            for j in reversed(range(len(hit))):  # the first gateway that is a next hop wins
                for t in compress(range(n_v), hit[j]):
                    out[t] = j
            if len(hit) > 1 and order:
                _fewest_runs(hit, out, order, own)
        return out

    return keys


def _fewest_runs(hit: list[list[bool]], out: list[Key | None], order: list[int], own: set[int]
                 ) -> None:  # fmt: skip
    """netrig.plan.routes._fewest_runs: among equal-cost gateways, from each destination in
    address order the one that stays a next hop furthest ahead (fewest routes)."""
    length = len(order)
    reach = []  # reach[g][i]: the first position from i on where gateway g is no next hop
    for row in hit:
        stops = [0] * length
        following = length
        for i in range(length - 1, -1, -1):
            vertex = order[i]
            if row[vertex] or vertex in own:
                stops[i] = following
            else:
                stops[i] = following = i
        reach.append(stops)
    i = 0
    while i < length:
        g = max(range(len(reach)), key=lambda j: (reach[j][i], -j))  # numpy's argmax: first
        end = reach[g][i]
        if end == i:  # no gateway reaches it: unreachable
            i += 1
            continue
        for position in range(i, end):
            out[order[position]] = g
        i = end


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


# ------------------------------------------------------------------ aggregation


def _aggregate(
    node: NodePlan,
    keys: list[Key | None],
    spans: dict[int, list[tuple[int, int, int]]],
    gateways: list[Gateway],
    hosts: list[NodePlan],
    cidrs: dict[tuple[int, int, int], str],
) -> list[RoutePlan]:
    """netrig.plan.routes._aggregate: adjacent destinations with the same next hops merge
    into one run (the node's own spans, key OWN, join any run), and each run's part from its
    first to its last routed destination is written as aligned blocks."""
    nexthops: dict[tuple[Key, int], list[tuple[str, int]] | None] = {}
    routes: list[RoutePlan] = []
    for version, items in spans.items():
        runs: list[tuple[int, int, Key]] = []  # (first, last, key) of each run's keyed part
        first = last = end = -1  # keyed part of the run so far; the end of the whole run
        run_key: Key | None = None
        in_run = False
        for lo, hi, vertex in items:
            key = keys[vertex]
            if key is None:  # no route: as if not there
                continue
            if in_run and lo == end + 1 and (run_key is None or key in (OWN, run_key)):
                end = hi
            else:
                if run_key is not None:
                    runs.append((first, last, run_key))
                in_run, run_key, end = True, None, hi
            if key != OWN:
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
            for block in range_to_cidrs(lo, hi):
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
        gw = port_address(hosts[v], net, version)
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
