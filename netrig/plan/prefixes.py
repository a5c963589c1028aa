"""What both route planners (netrig.plan.routes with numpy, netrig.plan.routes_py in pure
Python) share: each destination's address span, a gateway's address on a network, the
fewest aligned prefixes that cover a range, Dijkstra's distances in Python, and the graph hop counts are taken on."""

from __future__ import annotations

import heapq
import math
from collections import deque
from ipaddress import ip_network

from netrig.plan.model import LabPlan, NetworkPlan, NodePlan


def destination_prefixes(
    plan: LabPlan, hosts: list[str], nets: list[NetworkPlan]
) -> list[list[tuple[int, int, int]]]:
    """Per vertex: (version, first address, last address) of what it stands for."""
    out: list[list[tuple[int, int, int]]] = []
    for name in hosts:
        out.append([span(cidr) for cidr in plan.nodes[name].loopbacks])
    for net in nets:
        out.append([span(cidr) for cidr in net.prefixes])
    return out


def span(cidr: str) -> tuple[int, int, int]:
    net = ip_network(cidr, strict=False)
    return net.version, int(net.network_address), int(net.broadcast_address)


def port_address(gw_node: NodePlan, net: NetworkPlan, version: int) -> str | None:
    port = next(p for n, p in net.members if n == gw_node.name)
    cidrs = (
        gw_node.bridge.addrs
        if gw_node.bridge and port == gw_node.bridge.name
        else gw_node.iface(port).addrs
    )
    for cidr in cidrs:
        addr = cidr.split("/")[0]
        if (":" in addr) == (version == 6):
            return addr
    return None


def range_to_cidrs(start: int, end: int) -> list[tuple[int, int]]:
    """The fewest aligned blocks covering [start, end] exactly: (start, log2 size) each."""
    out = []
    while start <= end:
        size_log = (start & -start).bit_length() - 1 if start else 128
        while size_log and start + (1 << size_log) - 1 > end:
            size_log -= 1
        out.append((start, size_log))
        start += 1 << size_log
    return out


def dijkstra(adj: list[list[tuple[int, int]]], s: int, n_v: int) -> list[float]:
    """Distances from s to every vertex (math.inf: unreachable) on integer weights."""
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


def network_edges(plan: LabPlan, hosts: list[str]) -> tuple[list[int], list[int]]:
    """The graph hop counts are taken on: vertex i < len(hosts) is hosts[i], vertex
    len(hosts) + k is plan.networks[k] (a link or a switched segment: one hop, two edges);
    one (row, col) per member of each network."""
    index = {name: i for i, name in enumerate(hosts)}
    rows, cols = [], []
    for k, net in enumerate(plan.networks):
        for node, _port in net.members:
            rows.append(index[node])
            cols.append(len(hosts) + k)
    return rows, cols


def hop_counts(plan: LabPlan, hosts: list[str]) -> list[list[float]]:
    """Router hops between every two hosts (a network counts as one hop; math.inf: none),
    breadth-first in Python: for small labs, where importing numpy costs more."""
    rows, cols = network_edges(plan, hosts)
    n_v = len(hosts) + len(plan.networks)
    adj: list[list[int]] = [[] for _ in range(n_v)]
    for r, c in zip(rows, cols, strict=True):
        adj[r].append(c)
        adj[c].append(r)
    out = []
    for s in range(len(hosts)):
        seen = [-1] * n_v
        seen[s] = 0
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for v in adj[u]:
                if seen[v] < 0:
                    seen[v] = seen[u] + 1
                    queue.append(v)
        out.append([d / 2 if d >= 0 else math.inf for d in seen[: len(hosts)]])
    return out
