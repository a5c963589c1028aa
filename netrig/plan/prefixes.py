"""What both route planners (netrig.plan.routes with numpy, netrig.plan.routes_py in pure
Python) share: each destination's address span, a gateway's address on a network, the
fewest aligned prefixes that cover a range, and Dijkstra's distances in Python."""

from __future__ import annotations

import heapq
import math
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
