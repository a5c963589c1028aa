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

import heapq
from collections import defaultdict
from ipaddress import ip_address, ip_network

import numpy as np

from netrig.plan.model import LabPlan, NetworkPlan, RoutePlan


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
    dist = distances(n_h, n_v, rows, cols, weights)

    dest_prefixes = _destination_prefixes(plan, hosts, nets)
    routes: dict[str, list[RoutePlan]] = {}
    for s, name in enumerate(hosts):
        node = plan.nodes[name]
        gateways: list[tuple[int, NetworkPlan, str, int]] = []  # (v, net, port, cost)
        for k, cost in adjacency[s]:
            net = nets[k]
            port = next(p for n, p in net.members if n == name)
            for member, _ in net.members:
                if member != name:
                    gateways.append((h_index[member], net, port, 2 * cost))
        if not gateways:
            routes[name] = []
            continue
        cand = np.stack([dist[v] + c for v, _, _, c in gateways])
        best = dist[s]
        hit = np.isclose(cand, best) & np.isfinite(best)
        connected = {n_h + k for k, _ in adjacency[s]}
        groups = _group_destinations(hit, n_v, s, connected, multipath)
        routes[name] = _aggregate(plan, node.name, groups, gateways, dest_prefixes, connected, s)
    return routes


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
    dist = np.full((n_h, n_v), np.inf)
    for s in range(n_h):
        row = dist[s]
        best = {s: 0}
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
        for v, d in best.items():
            row[v] = d
    return dist


def _group_destinations(
    hit: np.ndarray, n_v: int, s: int, connected: set[int], multipath: bool
) -> dict[int | tuple[int, ...], list[int]]:
    """Destination vertices per next-hop choice (first gateway, or the set for ECMP)."""
    reachable = hit.any(axis=0)
    groups: dict[int | tuple[int, ...], list[int]] = defaultdict(list)
    if multipath:
        for t in np.nonzero(reachable)[0]:
            t = int(t)
            if t == s or t in connected:
                continue
            groups[tuple(int(j) for j in np.nonzero(hit[:, t])[0])].append(t)
    else:
        first = hit.argmax(axis=0)
        for t in np.nonzero(reachable)[0]:
            t = int(t)
            if t == s or t in connected:
                continue
            groups[int(first[t])].append(t)
    return groups


def _destination_prefixes(
    plan: LabPlan, hosts: list[str], nets: list[NetworkPlan]
) -> list[list[tuple[int, int, int]]]:
    """Per vertex: (version, first address, last address) of what it stands for."""
    out: list[list[tuple[int, int, int]]] = []
    for name in hosts:
        out.append([_span(cidr) for cidr in plan.nodes[name].loopbacks])
    for net in nets:
        out.append([_span(cidr) for cidr in net.prefixes])
    return out


def _span(cidr: str) -> tuple[int, int, int]:
    net = ip_network(cidr, strict=False)
    return net.version, int(net.network_address), int(net.broadcast_address)


def _aggregate(
    plan: LabPlan,
    name: str,
    groups: dict[int | tuple[int, ...], list[int]],
    gateways: list[tuple[int, NetworkPlan, str, int]],
    dest_prefixes: list[list[tuple[int, int, int]]],
    connected: set[int],
    s: int,
) -> list[RoutePlan]:
    node = plan.nodes[name]
    hosts = plan.hosts()
    # spans the node covers itself: its loopbacks and connected subnets (key None = wildcard)
    spans: dict[int, list[tuple[int, int, object]]] = {4: [], 6: []}
    for vertex in (s, *connected):
        for version, lo, hi in dest_prefixes[vertex]:
            spans[version].append((lo, hi, None))
    for key, dests in groups.items():
        for t in dests:
            for version, lo, hi in dest_prefixes[t]:
                spans[version].append((lo, hi, key))
    routes: list[RoutePlan] = []
    for version, items in spans.items():
        items.sort(key=lambda x: (x[0], x[1]))
        run: list[tuple[int, int, object]] = []
        run_key: object = None
        for lo, hi, key in items:
            if run and lo == run[-1][1] + 1 and (key is None or run_key is None or key == run_key):
                run.append((lo, hi, key))
                run_key = run_key if key is None else key
                continue
            if run:
                routes += _run_routes(run, version, gateways, node, hosts)
            run, run_key = [(lo, hi, key)], key
        if run:
            routes += _run_routes(run, version, gateways, node, hosts)
    return routes


def _run_routes(run, version, gateways, node, hosts) -> list[RoutePlan]:  # type: ignore[no-untyped-def]
    while run and run[0][2] is None:
        run = run[1:]
    while run and run[-1][2] is None:
        run = run[:-1]
    if not run:
        return []
    key = next(k for _, _, k in run if k is not None)
    idx = key if isinstance(key, tuple) else (key,)
    nexthops = []
    for j in idx:
        v, net, port, _ = gateways[j]
        gw_node = hosts[v]
        gw = _port_address(gw_node, net, version)
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
        RoutePlan(f"{ip_address(start)}/{bits - size_log}", nexthops)
        for start, size_log in _range_to_cidrs(run[0][0], run[-1][1])
    ]


def _port_address(gw_node, net: NetworkPlan, version: int) -> str | None:  # type: ignore[no-untyped-def]
    port = next(p for n, p in net.members if n == gw_node.name)
    cidrs = (
        gw_node.bridge.addrs
        if gw_node.bridge and port == gw_node.bridge.name
        else gw_node.iface(port).addrs
    )
    for cidr in cidrs:
        addr = cidr.split("/")[0]
        if ip_address(addr).version == version:
            return addr
    return None


def _range_to_cidrs(start: int, end: int) -> list[tuple[int, int]]:
    """The fewest aligned blocks covering [start, end] exactly: (start, log2 size) each."""
    out = []
    while start <= end:
        size_log = (start & -start).bit_length() - 1 if start else 128
        while size_log and start + (1 << size_log) - 1 > end:
            size_log -= 1
        out.append((start, size_log))
        start += 1 << size_log
    return out
