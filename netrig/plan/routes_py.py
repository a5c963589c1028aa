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
from itertools import compress, pairwise
from typing import Any

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
    dest_prefixes = vectorised._destination_prefixes(plan, hosts, nets)
    spans = _sorted_spans(dest_prefixes)
    if spans is None:  # two destinations with one span: their order is netrig.plan.routes'
        return vectorised.compute_routes(plan, multipath)
    adjacency: dict[int, list[tuple[int, int]]] = {}  # host → [(net k, cost)]
    for k, net in enumerate(nets):
        for node, _port in net.members:
            adjacency.setdefault(h_index[node], []).append((k, net.cost))
    host_plans = plan.hosts()
    cidrs: dict[tuple[int, int, int], str] = {}  # (version, start, size log) → "a/len"
    if n_v >= vectorised.SCIPY_FROM_VERTICES:
        keys_of = _numpy_keys(n_h, n_v, nets, h_index, multipath)
        by_numpy = _NumpyAggregate(spans, host_plans, cidrs)
    else:
        keys_of = _python_keys(n_h, n_v, nets, h_index, multipath)
        by_numpy = None
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
        keys = keys_of(s, gateways)
        keys[s] = OWN
        for k, _ in adjacency[s]:
            keys[n_h + k] = OWN  # connected subnets
        if by_numpy is not None and (not multipath or len(gateways) <= MAX_MASK_GATEWAYS):
            routes[name] = by_numpy(plan.nodes[name], keys, gateways, multipath)
        else:
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
        dist = [_dijkstra(adj, s, n_v) for s in range(n_h)]
    exact = max((d for row in dist for d in row if d != math.inf), default=0) < EXACT_BELOW

    def keys(s: int, gateways: list[Gateway]) -> list[Key | None]:
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
        return out

    return keys


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
    row: list[float] = [math.inf] * n_v
    for v, d in best.items():
        row[v] = d
    return row


def _numpy_keys(n_h, n_v, nets, h_index, multipath):  # type: ignore[no-untyped-def]
    """Per source: the next-hop choice of every destination vertex, with numpy and scipy
    (as netrig.plan.routes.compute_routes finds them)."""
    import numpy as np

    rows, cols, weights = [], [], []
    for k, net in enumerate(nets):
        for node, _port in net.members:
            rows.append(h_index[node])
            cols.append(n_h + k)
            weights.append(net.cost)
    dist = vectorised.distances(n_h, n_v, rows, cols, weights)

    def keys(s: int, gateways: list[Gateway]) -> Any:
        """An array: the first gateway, or the bit mask of all (ECMP), NONE for no route."""
        cand = np.stack([dist[v] + c for v, _, _, c in gateways])
        best = dist[s]
        hit = np.isclose(cand, best) & np.isfinite(best)
        reachable = hit.any(axis=0)
        if multipath and len(gateways) <= MAX_MASK_GATEWAYS:
            bits = np.left_shift(1, np.arange(len(gateways), dtype=np.int64))
            return np.where(reachable, bits @ hit, NONE)
        if not multipath:
            return np.where(reachable, hit.argmax(axis=0), NONE)
        out: list[Key | None] = [None] * n_v
        for t in np.nonzero(reachable)[0].tolist():
            out[t] = tuple(np.nonzero(hit[:, t])[0].tolist())
        return out

    return keys


NONE = -2  # the key of a destination without a route, in the arrays of the numpy way
MAX_MASK_GATEWAYS = 62  # ECMP next-hop sets as bits of an int64


class _NumpyAggregate:
    """_aggregate with numpy, for large labs: the same runs, found with array operations on
    the destinations in address order (computed once per lab) instead of a loop per node."""

    def __init__(
        self,
        spans: dict[int, list[tuple[int, int, int]]],
        hosts: list[NodePlan],
        cidrs: dict[tuple[int, int, int], str],
    ) -> None:
        import numpy as np

        self.np = np
        self.hosts, self.cidrs = hosts, cidrs
        self.families = []
        for version, items in spans.items():
            vertex = np.array([v for _, _, v in items], dtype=np.int64)
            # span i starts right after span i-1 ends
            after = np.array([False] + [b[0] == a[1] + 1 for a, b in pairwise(items)])
            self.families.append((version, items, vertex, after))

    def __call__(
        self, node: NodePlan, keys: Any, gateways: list[Gateway], multipath: bool
    ) -> list[RoutePlan]:
        np = self.np
        nexthops: dict[tuple[Key, int], list[tuple[str, int]] | None] = {}
        routes: list[RoutePlan] = []
        for version, items, vertex, after in self.families:
            k = keys[vertex]
            present = np.flatnonzero(k != NONE)  # spans in address order that are routed
            if not len(present):
                continue
            kp = k[present]
            # a contiguous stretch breaks where a span is missing or not adjacent
            new_stretch = np.ones(len(present), dtype=bool)
            new_stretch[1:] = (np.diff(present) != 1) | ~after[present[1:]]
            stretch = np.cumsum(new_stretch)
            keyed = np.flatnonzero(kp != OWN)
            if not len(keyed):
                continue
            kk, ks = kp[keyed], stretch[keyed]
            # a run: consecutive routed spans of one stretch with one key (own ones between)
            starts = np.flatnonzero(np.r_[True, (ks[1:] != ks[:-1]) | (kk[1:] != kk[:-1])])
            ends = np.r_[starts[1:] - 1, len(keyed) - 1]
            firsts = present[keyed[starts]].tolist()
            lasts = present[keyed[ends]].tolist()
            run_keys = kk[starts].tolist()
            bits = 32 if version == 4 else 128
            for i, j, code in zip(firsts, lasts, run_keys, strict=True):
                key: Key = (
                    tuple(g for g in range(len(gateways)) if code >> g & 1) if multipath else code
                )
                if (key, version) not in nexthops:
                    nexthops[key, version] = _nexthops(node, key, version, gateways, self.hosts)
                hops = nexthops[key, version]
                if hops is None:
                    continue
                for block in vectorised._range_to_cidrs(items[i][0], items[j][1]):
                    cidr = self.cidrs.get((version, *block))
                    if cidr is None:
                        cidr = self.cidrs[version, *block] = _cidr(version, bits, *block)
                    routes.append(RoutePlan(cidr, list(hops)))
        return routes


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
