"""Shortest-path routes for every host, aggregated into as few prefixes as is exact.

The graph has a vertex per host and per network (a link or a switched segment); a host
reaches a network at half its cost, so host→net→host costs the link's cost. Distances come
from scipy's C Dijkstra, next hops from one vectorised comparison per neighbour:
gateway v is a next hop from s to t when cost(s→v) + D[v, t] == D[s, t].

Aggregation is exact: destinations with the same next hops merge into one range when they
are adjacent, or separated only by the node's own addresses and connected subnets (those
win by longest-prefix match anyway). Unused address space is never routed.
"""

from __future__ import annotations

import socket
from collections import defaultdict

import numpy as np

from netrig.plan.model import LabPlan, NetworkPlan, RoutePlan
from netrig.plan.prefixes import destination_prefixes, dijkstra, port_address, range_to_cidrs


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
    rows_of = _distance_rows(n_h, n_v, rows, cols, weights)
    spans = _Spans(destination_prefixes(plan, hosts, nets))
    host_plans = plan.hosts()
    routes: dict[str, list[RoutePlan]] = {}
    for chunk in range(0, n_h, DIST_CHUNK):
        sources = list(range(chunk, min(chunk + DIST_CHUNK, n_h)))
        gateways_of: dict[int, list[tuple[int, NetworkPlan, str, int]]] = {}
        for s in sources:
            name = hosts[s]
            gateways: list[tuple[int, NetworkPlan, str, int]] = []  # (v, net, port, cost)
            for k, cost in adjacency[s]:
                net = nets[k]
                port = next(p for n, p in net.members if n == name)
                for member, _ in net.members:
                    if member != name:
                        gateways.append((h_index[member], net, port, 2 * cost))
            gateways_of[s] = gateways
        needed = sorted({*sources, *(v for g in gateways_of.values() for v, _, _, _ in g)})
        dist = rows_of(needed)
        row = {v: i for i, v in enumerate(needed)}
        for s in sources:
            name, gateways = hosts[s], gateways_of[s]
            if not gateways:
                routes[name] = []
                continue
            cand = np.stack([dist[row[v]] + c for v, _, _, c in gateways])
            best = dist[row[s]]
            hit = np.isclose(cand, best) & np.isfinite(best)
            connected = [n_h + k for k, _ in adjacency[s]]
            key = _destination_keys(hit, s, connected, multipath, spans.order)
            node = plan.nodes[name]
            routes[name] = []
            for version, lo, hi, choice in spans.runs(key):
                routes[name] += _run_routes(
                    version, lo, hi, choice, multipath, gateways, node, host_plans
                )
    return routes


DIST_CHUNK = 512  # sources whose distance rows are held at once (a 10^4-node lab: ~0.1 GB)
WILD, NONE = -1, -2  # destination keys: covered by the node itself / not routed


def _distance_rows(  # type: ignore[no-untyped-def]
    n_h: int, n_v: int, rows: list[int], cols: list[int], weights: list[int]
):
    """A function: host indexes → their distance rows to every vertex. Small labs compute
    every row at once; large ones only the rows asked for (scipy's C Dijkstra)."""
    if n_v < SCIPY_FROM_VERTICES:
        full = distances(n_h, n_v, rows, cols, weights)
        return lambda which: full[which]
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import shortest_path

    graph = coo_matrix((weights, (rows, cols)), shape=(n_v, n_v)).tocsr()
    return lambda which: shortest_path(graph, method="D", directed=False, indices=which)


def _destination_keys(
    hit: np.ndarray,
    s: int,
    connected: list[int],
    multipath: bool,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Per destination vertex: the next-hop choice (a gateway's position, or for ECMP the
    bit set of them), WILD for the node's own and connected vertices, NONE if unreachable."""
    reachable = hit.any(axis=0)
    if multipath:
        bits = (1 << np.arange(hit.shape[0], dtype=np.int64))[:, None]
        key = (hit.astype(np.int64) * bits).sum(axis=0)
    else:
        key = hit.argmax(axis=0).astype(np.int64)
        if order is not None and hit.shape[0] > 1:
            _fewest_runs(hit, key, order, s, connected)
    key = np.where(reachable, key, NONE)
    key[s] = WILD
    key[connected] = WILD
    return key


def _fewest_runs(
    hit: np.ndarray, key: np.ndarray, order: np.ndarray, s: int, connected: list[int]
) -> None:
    """Choose among equal-cost gateways so that destinations in address order change
    gateway as seldom as possible (fewest routes after aggregation): from each point, the
    gateway that stays a shortest way furthest ahead (greedy, which is optimal for this).
    On a 100x100 grid the first gateway in link order splits every row of destinations;
    this sends whole rows one way."""
    allowed = hit[:, order]
    own = np.zeros(hit.shape[1], bool)
    own[s] = True
    own[connected] = True
    allowed |= own[order][None, :]
    length = allowed.shape[1]
    positions = np.arange(length)
    reach = np.empty(allowed.shape, dtype=np.int64)
    for g in range(allowed.shape[0]):
        stop = np.where(allowed[g], length, positions)
        reach[g] = np.minimum.accumulate(stop[::-1])[::-1]
    best = reach.argmax(axis=0)
    i = 0
    while i < length:
        g = int(best[i])
        end = int(reach[g, i])
        if end == i:  # nothing reaches it: unreachable
            i += 1
            continue
        key[order[i:end]] = g
        i = end


class _Spans:
    """Every destination's address spans per family, in address order (the same for every
    source); `runs` merges them for one source's next-hop choices, exactly: adjacent spans
    with the same choice, bridged by spans the node covers itself (WILD), never across
    unused or unrouted address space."""

    def __init__(self, dest_prefixes: list[list[tuple[int, int, int]]]) -> None:
        self.families = []
        self.order: np.ndarray | None = None  # destination vertices in the first family's order
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
            adjacent = np.array([False] + [lo[i] == hi[i - 1] + 1 for i in range(1, len(lo))])
            self.families.append((version, lo, hi, vertex, adjacent))
            if self.order is None:
                self.order = vertex

    def runs(self, key: np.ndarray) -> list[tuple[int, int, int, int]]:
        """(version, first address, last address, choice) of each route-to-be."""
        out = []
        for version, lo, hi, vertex, adjacent in self.families:
            k = key[vertex]
            idx = np.flatnonzero(k != NONE)
            if not len(idx):
                continue
            kk = k[idx]
            pos = np.arange(len(idx))
            seg_start = np.ones(len(idx), bool)
            seg_start[1:] = ~adjacent[idx[1:]] | (idx[1:] != idx[:-1] + 1)
            # the choice in force at each span: the last non-WILD one since its segment began
            marker = np.where((kk != WILD) | seg_start, pos, 0)
            last = np.maximum.accumulate(marker)
            held = kk[last]
            start = seg_start.copy()
            start[1:] |= (kk[1:] != WILD) & (held[:-1] != WILD) & (held[:-1] != kk[1:])
            run = np.cumsum(start) - 1
            keyed = np.flatnonzero(kk != WILD)
            if not len(keyed):
                continue
            run_of = run[keyed]
            firsts = np.flatnonzero(np.r_[True, run_of[1:] != run_of[:-1]])
            lasts = np.r_[firsts[1:] - 1, len(keyed) - 1]
            for first, final in zip(firsts.tolist(), lasts.tolist(), strict=True):
                a, b = int(idx[keyed[first]]), int(idx[keyed[final]])
                out.append((version, lo[a], hi[b], int(kk[keyed[first]])))
        return out


SCIPY_FROM_VERTICES = 400


def distances(
    n_h: int, n_v: int, rows: list[int], cols: list[int], weights: list[int]
) -> np.ndarray:
    """Distances from every host to every vertex. Small labs: Dijkstra in Python (importing
    scipy costs more than it saves); large ones: scipy's C implementation."""
    if n_v >= SCIPY_FROM_VERTICES:
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import shortest_path

        graph = coo_matrix((weights, (rows, cols)), shape=(n_v, n_v)).tocsr()
        return shortest_path(graph, method="D", directed=False, indices=np.arange(n_h))
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n_v)]
    for r, c, w in zip(rows, cols, weights, strict=True):
        adj[r].append((c, w))
        adj[c].append((r, w))
    return np.array([dijkstra(adj, s, n_v) for s in range(n_h)], dtype=float).reshape(n_h, n_v)


def _run_routes(  # type: ignore[no-untyped-def]
    version: int, lo: int, hi: int, choice: int, multipath: bool, gateways, node, hosts
) -> list[RoutePlan]:
    """The fewest prefixes covering [lo, hi], via the chosen gateway (its position, or for
    ECMP the bit set of positions)."""
    idx = [j for j in range(len(gateways)) if choice >> j & 1] if multipath else [choice]
    nexthops = []
    for j in idx:
        v, net, port, _ = gateways[j]
        gw = port_address(hosts[v], net, version)
        if gw is None:
            return []
        ifindex = (
            node.bridge.index
            if node.bridge and port == node.bridge.name
            else node.iface(port).index
        )
        nexthops.append((gw, ifindex))
    bits = 32 if version == 4 else 128
    return [
        RoutePlan(f"{_text(start, version)}/{bits - size_log}", nexthops)
        for start, size_log in range_to_cidrs(lo, hi)
    ]


def _text(addr: int, version: int) -> str:
    """An address as ipaddress writes it (inet_ntop is the same for these, and faster)."""
    if version == 4:
        return socket.inet_ntop(socket.AF_INET, addr.to_bytes(4, "big"))
    return socket.inet_ntop(socket.AF_INET6, addr.to_bytes(16, "big"))
