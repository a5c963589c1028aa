"""Shortest-path routes for every host, in as few prefixes as longest-prefix match allows.

The graph has a vertex per host and per network (a link or a switched segment); a host
reaches a network at half its cost, so host→net→host costs the link's cost. Distances come
from scipy's C Dijkstra, next hops from one vectorised comparison per neighbour:
gateway v is a next hop from s to t when cost(s→v) + D[v, t] == D[s, t].

Tables overlap: per source and family, netrig.plan.prefixes.smallest_table (ORTC) finds the
fewest prefixes whose longest match gives every destination one of its equal-cost gateways
(static) or exactly its set of them (ECMP), e.g. a covering prefix one way and the few
more-specific exceptions. The node's own addresses and connected subnets, and unused space
inside the lab's address pools, may fall under any prefix (the local and connected routes
win, or nothing is there); unreachable destinations and space outside the pools are never
routed.
"""

from __future__ import annotations

import os
import socket
from collections import defaultdict

import numpy as np

from netrig.plan import csgraph
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
    merge_runs,
    pool_ranges,
    smallest_table,
)


def compute_routes(plan: LabPlan, multipath: bool) -> dict[str, list[RoutePlan]]:
    hosts = [n.name for n in plan.hosts()]
    nets = [n for n in plan.networks if len(n.members) >= 1]
    if not hosts:
        return {}
    h_index = {name: i for i, name in enumerate(hosts)}
    n_h, n_v = len(hosts), len(hosts) + len(nets)
    rows, cols, weights = [], [], []
    adjacency: dict[int, list[tuple[int, int]]] = defaultdict(list)  # host → [(net k, cost)]
    for k, net in enumerate(nets):
        for node, _port in net.members:
            rows.append(h_index[node])
            cols.append(n_h + k)
            weights.append(net.cost)  # doubled half-cost: all weights stay integers
            adjacency[h_index[node]].append((k, net.cost))
    rows_of = _distance_rows(n_h, n_v, rows, cols, weights, nets)
    # every distance is a sum of integer weights: below EXACT_BELOW numpy.isclose (the next-hop
    # test, as netrig.plan.routes_py has it) is plain equality, ~10x cheaper
    exact = sum(weights) < EXACT_BELOW
    spans = _Spans(plan, destination_prefixes(plan, hosts, nets))
    host_plans = plan.hosts()

    def hits(cand: np.ndarray, best: np.ndarray) -> np.ndarray:
        return (cand == best if exact else np.isclose(cand, best)) & np.isfinite(best)

    def table(s: int, allowed: np.ndarray, values: list[int], gateways) -> list[RoutePlan]:
        allowed[s] = ANY
        allowed[[n_h + k for k, _ in adjacency[s]]] = ANY
        return spans.routes(allowed, values, gateways, plan.nodes[hosts[s]], host_plans)

    def hub_table(s: int, gateways) -> list[RoutePlan]:
        """A source with more gateways than DIST_CHUNK (a star's hub): their distance rows
        a block at a time, so memory stays that of a chunk (10,000 at once: ~5 GB)."""
        best = rows_of([s])[0].copy()  # the next call reuses the rows' array
        sets = [0] * n_v
        for first in range(0, len(gateways), DIST_CHUNK):
            block = gateways[first : first + DIST_CHUNK]
            costs = np.array([c for _, _, _, c in block], float)[:, None]
            _add_hits(sets, hits(rows_of([v for v, _, _, _ in block]) + costs, best), first)
        allowed, values = choice_values(sets, multipath)
        return table(s, np.array(allowed, dtype=object), values, gateways)

    def plan_chunks(chunks: list[int]) -> dict[str, list[RoutePlan]]:
        routes: dict[str, list[RoutePlan]] = {}
        for chunk in chunks:
            sources = list(range(chunk, min(chunk + size, n_h)))
            neighbours = {s: gateways_of(hosts[s], adjacency[s], nets, h_index) for s in sources}
            hubs = {s for s in sources if len(neighbours[s]) > DIST_CHUNK}
            for group, needed in _row_groups(sources, hubs, neighbours):
                dist = rows_of(needed)
                row = {v: i for i, v in enumerate(needed)}
                for s in group:
                    gateways = neighbours[s]
                    if not gateways:
                        routes[hosts[s]] = []
                        continue
                    at = [row[v] for v, _, _, _ in gateways]
                    cand = dist[at] + np.array([c for _, _, _, c in gateways], float)[:, None]
                    allowed, values = _allowed(hits(cand, dist[row[s]]), multipath)
                    routes[hosts[s]] = table(s, allowed, values, gateways)
            for s in sorted(hubs):  # last: they reuse the rows' array
                routes[hosts[s]] = hub_table(s, neighbours[s])
        return routes

    # in_processes plans every share here where forking is not safe (other threads run)
    cpus = os.cpu_count() or 1
    parallel = n_h >= PARALLEL_FROM_HOSTS and cpus > 1
    size = min(DIST_CHUNK, -(-n_h // cpus)) if parallel else DIST_CHUNK  # a chunk per core
    chunks = list(range(0, n_h, size))
    workers = min(len(chunks), cpus) if parallel else 1
    if workers < 2:
        return plan_chunks(chunks)
    return in_processes(plan_chunks, [chunks[i::workers] for i in range(workers)])


PARALLEL_FROM_HOSTS = 200  # hosts: from here forked children plan shares of the sources
# (medians on two cores: a 300-node ring 180 -> 157 ms, 1000 nodes 463 -> 370 ms)


DIST_CHUNK = 512  # sources whose distance rows are held at once (a 10^4-node lab: ~0.1 GB)


def _row_groups(
    sources: list[int], hubs: set[int], neighbours: dict[int, list[Gateway]]
) -> list[tuple[list[int], list[int]]]:
    """The sources but hubs in groups whose distance rows (theirs and their gateways')
    are at most 2 x DIST_CHUNK: a chunk of a Clos fabric's leaves had needed every host's
    row at once (9,000 x 18,500 distances: 1.3 GB). (group, its rows' vertices sorted)."""
    groups: list[tuple[list[int], list[int]]] = []
    group: list[int] = []
    needed: set[int] = set()
    for s in sources:
        if s in hubs:
            continue
        rows = {s, *(v for v, *_ in neighbours[s])}
        if group and len(needed) + len(rows - needed) > 2 * DIST_CHUNK:
            groups.append((group, sorted(needed)))
            group, needed = [], set()
        group.append(s)
        needed |= rows
    if group:
        groups.append((group, sorted(needed)))
    return groups


def _allowed(hit: np.ndarray, multipath: bool) -> tuple[np.ndarray, list[int]]:
    """netrig.plan.prefixes.choice_values of the gateways that are a next hop to each
    destination vertex, as an array (numpy while the bit sets fit in 62 bits)."""
    if hit.shape[0] <= 62:
        bits = np.left_shift(1, np.arange(hit.shape[0], dtype=np.int64))[:, None]
        hitsets = (hit.astype(np.int64) * bits).sum(axis=0)
        if not multipath:
            return hitsets, [1 << j for j in range(hit.shape[0])]
        distinct = np.unique(hitsets[hitsets != 0])
        if len(distinct) <= 62:
            index = np.searchsorted(distinct, hitsets)
            allowed = np.where(hitsets != 0, np.left_shift(1, np.minimum(index, 62)), 0)
            return allowed.astype(np.int64), distinct.tolist()
        sets = hitsets.tolist()
    else:
        sets = [0] * hit.shape[1]
        _add_hits(sets, hit, 0)
    allowed_list, values = choice_values(sets, multipath)
    return np.array(allowed_list, dtype=object), values


def _add_hits(sets: list[int], hit: np.ndarray, first: int) -> None:
    """Into each destination's bit set of gateways: bit first + g where row g of hit is
    true (gateways first, first + 1, … of a source)."""
    for g in range(hit.shape[0]):
        bit = 1 << (first + g)
        for t in np.flatnonzero(hit[g]).tolist():
            sets[t] |= bit


def _distance_rows(n_h: int, n_v: int, rows: list[int], cols: list[int], weights: list[int], nets):
    """A function: host indexes → their distance rows to every vertex (until its next
    call, which may reuse the array). Small labs compute
    every row at once; large ones only the rows asked for (scipy's C Dijkstra), on the
    graph of hosts alone when no network is large (a 100x100 grid: 10^4 vertices instead
    of 3x10^4); a network's distance is then its nearest member's plus half its cost."""
    if n_v < SCIPY_FROM_VERTICES:
        full = distances(n_h, n_v, rows, cols, weights)
        return lambda which: full[which]
    shortest_path, coo_matrix = csgraph.load()

    if any(len(net.members) > HOST_GRAPH_MEMBERS for net in nets):
        graph = coo_matrix((weights, (rows, cols)), shape=(n_v, n_v)).tocsr()
        return lambda which: shortest_path(graph, method="D", directed=False, indices=which)
    members: list[list[int]] = [[] for _ in nets]
    for r, c in zip(rows, cols, strict=True):
        members[c - n_h].append(r)
    # one edge per pair of hosts, its cheapest network's: coo_matrix adds up duplicates
    # (two hosts on a link and on a switch as well were 12 apart where 2 is right)
    step_of: dict[tuple[int, int], int] = {}
    for k, hosts in enumerate(members):
        for i, a in enumerate(hosts):
            for b in hosts[i + 1 :]:
                if a != b:
                    pair, w = ((a, b) if a < b else (b, a)), 2 * nets[k].cost
                    step_of[pair] = min(w, step_of.get(pair, w))
    h_rows, h_cols = [a for a, _ in step_of], [b for _, b in step_of]
    h_weights = list(step_of.values())
    host_graph = coo_matrix((h_weights, (h_rows, h_cols)), shape=(n_h, n_h)).tocsr()
    via, step = _stubs(n_h, h_rows, h_cols, h_weights)
    cost = np.array([net.cost for net in nets], float)
    by_size: dict[int, list[int]] = defaultdict(list)
    for k, hosts in enumerate(members):
        by_size[len(hosts)].append(k)

    # per size of network: its members (networks, size), its columns, its cost
    groups = [
        (np.array([members[k] for k in ks]), n_h + np.array(ks), cost[ks])
        for ks in by_size.values()
    ]
    # one array for the rows, reused by every call (valid until the next one: the caller
    # is done with a chunk's rows before it asks for the next): a new 0.1 GB array per
    # chunk cost about as much in page faults as Dijkstra itself
    held: list[np.ndarray] = []

    def some(which: list[int]) -> np.ndarray:
        if not held or held[0].shape[0] < len(which):
            held[:] = [np.empty((len(which), n_v))]
        out = held[0][: len(which)]
        # a stub's row is its one neighbour's plus the step there: Dijkstra runs from the
        # others only (a star's 10^4 leaves: 1 source instead of 10^4)
        asked = np.asarray(which, dtype=np.int64)
        if (via[asked] < 0).all():  # no stub asked for (a grid): no copy of the rows
            out[:, :n_h] = shortest_path(host_graph, method="D", directed=False, indices=asked)
        else:
            base = np.where(via[asked] >= 0, via[asked], asked)
            sources, at = np.unique(base, return_inverse=True)
            found = shortest_path(host_graph, method="D", directed=False, indices=sources)
            np.add(found[at], step[asked][:, None], out=out[:, :n_h])
            out[np.arange(len(asked)), asked] = 0.0
        for idx, columns, extra in groups:
            near = out[:, idx[:, 0]]
            for j in range(1, idx.shape[1]):
                np.minimum(near, out[:, idx[:, j]], out=near)
            out[:, columns] = near + extra
        return out

    return some


def _stubs(
    n_h: int, rows: list[int], cols: list[int], weights: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Per host of the host graph (one edge per pair): its one neighbour if it has
    exactly one (a stub: a star's leaf, a fabric's host) whose own neighbours are more,
    else -1; and the step there (0 for the others). Every path from a stub leaves through
    that neighbour, so its distances are the neighbour's plus the step (to itself: 0)."""
    degree = np.bincount(np.asarray(rows + cols, dtype=np.int64), minlength=n_h)
    via = np.full(n_h, -1, dtype=np.int64)
    step = np.zeros(n_h)
    for a, b, w in zip(rows, cols, weights, strict=True):
        for v, u in ((a, b), (b, a)):
            if degree[v] == 1 and degree[u] > 1:  # not a pair's two ends, each the other's
                via[v], step[v] = u, w
    return via, step


HOST_GRAPH_MEMBERS = 16  # a network with more members: the full graph (its clique is big)


class _Spans:
    """Every destination's address spans per family, in address order (the same for every
    source); `routes` gives one source's table from its allowed sets."""

    def __init__(self, plan: LabPlan, dest_prefixes: list[list[tuple[int, int, int]]]) -> None:
        self.families = []
        for version in (4, 6):
            items = sorted(
                (lo, hi, vertex)
                for vertex, spans in enumerate(dest_prefixes)
                for v, lo, hi in spans
                if v == version
            )
            if not items:
                continue
            lo = [x[0] for x in items]
            hi = [x[1] for x in items]
            vertex = np.array([x[2] for x in items], np.int64)
            apart = np.array([True] + [lo[i] != hi[i - 1] + 1 for i in range(1, len(lo))])
            self.families.append((version, lo, hi, vertex, apart, pool_ranges(plan, version)))
        self.merge = len(dest_prefixes) >= MERGE_FROM_VERTICES

    def routes(
        self, allowed: np.ndarray, values: list[int], gateways, node: NodePlan, hosts
    ) -> list[RoutePlan]:
        out: list[RoutePlan] = []
        for version, lo, hi, vertex, apart, pools in self.families:
            bits = 32 if version == 4 else 128
            # neighbours that smallest_table would merge, merged here at numpy's speed
            a = allowed[vertex]
            start = apart.copy()
            start[1:] |= a[1:] != a[:-1]
            firsts = np.flatnonzero(start)
            lasts = np.append(firsts[1:] - 1, len(a) - 1)
            values_at = a[firsts]
            if self.merge and values_at.dtype != object and len(values) <= 62:
                firsts, lasts, values_at = _merged_runs(firsts, lasts, values_at, apart[firsts])
            spans = [
                (lo[f], hi[e], x)
                for f, e, x in zip(firsts.tolist(), lasts.tolist(), values_at.tolist(), strict=True)
            ]
            if self.merge:
                spans = merge_runs(spans)  # what numpy merged stays as it is
            table = smallest_table(spans, pools, bits)
            hops: dict[int, list[tuple[str, int]] | None] = {}
            for first, size_log, value in table:
                if value not in hops:
                    hops[value] = gateway_hops(node, values[value], version, gateways, hosts)
                nexthops = hops[value]
                if nexthops is not None:
                    out.append(
                        RoutePlan(f"{_text(first, version)}/{bits - size_log}", list(nexthops))
                    )
        return out


MERGE_FROM_VERTICES = 5000  # merge_runs before smallest_table: a 100x100 grid's planning


def _merged_runs(
    firsts: np.ndarray, lasts: np.ndarray, a: np.ndarray, apart: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """netrig.plan.prefixes.merge_runs in numpy (a, the allowed sets, fit in int64): a run
    from i goes on up to the first span that is apart, ANY where the run is not (or the
    other way round), or allows none of the values every span so far allowed."""
    n = len(a)
    positions = np.arange(n)
    any_ = a == ANY
    brk = apart.copy()
    brk[1:] |= any_[1:] != any_[:-1]

    def next_stop(stop: np.ndarray) -> np.ndarray:
        """Per i: the first k > i where stop[k] (n: none)."""
        at = np.where(stop, positions, n)
        return np.append(np.minimum.accumulate(at[::-1])[::-1][1:], n)

    end = np.where(any_, next_stop(brk), positions + 1)
    keyed = a[~any_]
    for g in range(int(np.bitwise_or.reduce(keyed)).bit_length() if len(keyed) else 0):
        has = (a >> g & 1).astype(bool) & ~any_
        if has.any():
            end = np.where(has, np.maximum(end, next_stop(brk | ~has)), end)
    starts = []
    ends = end.tolist()
    i = 0
    while i < n:
        starts.append(i)
        i = ends[i]
    begin = np.array(starts)
    stop = np.append(begin[1:], n)
    merged = np.bitwise_and.reduceat(a, begin)
    return firsts[begin], lasts[stop - 1], merged


SCIPY_FROM_VERTICES = 400


def distances(
    n_h: int, n_v: int, rows: list[int], cols: list[int], weights: list[int]
) -> np.ndarray:
    """Distances from every host to every vertex. Small labs: Dijkstra in Python (importing
    scipy costs more than it saves); large ones: scipy's C implementation."""
    if n_v >= SCIPY_FROM_VERTICES:
        shortest_path, coo_matrix = csgraph.load()

        graph = coo_matrix((weights, (rows, cols)), shape=(n_v, n_v)).tocsr()
        return shortest_path(graph, method="D", directed=False, indices=np.arange(n_h))
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n_v)]
    for r, c, w in zip(rows, cols, weights, strict=True):
        adj[r].append((c, w))
        adj[c].append((r, w))
    return np.array([dijkstra(adj, s, n_v) for s in range(n_h)], dtype=float).reshape(n_h, n_v)


def _text(addr: int, version: int) -> str:
    """An address as ipaddress writes it (inet_ntop is the same for these, and faster)."""
    if version == 4:
        return socket.inet_ntop(socket.AF_INET, addr.to_bytes(4, "big"))
    return socket.inet_ntop(socket.AF_INET6, addr.to_bytes(16, "big"))
