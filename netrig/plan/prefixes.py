"""What both route planners (netrig.plan.routes with numpy, netrig.plan.routes_py in pure
Python) share: each destination's address span, a gateway's address on a network, the
fewest aligned prefixes that cover a range, and Dijkstra's distances in Python."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
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


# ------------------------------------------------------------------ overlapping prefixes

ANY = -1  # an allowed set: any next hop, or none (the node's own and connected addresses,
#           unused space inside the lab's pools): every bit set
UNROUTED = 0  # an allowed set: no route may cover it (unreachable, or outside the pools)


def smallest_table(
    spans: list[tuple[int, int, int]], pools: list[tuple[int, int]], bits: int
) -> list[tuple[int, int, int]]:
    """The fewest prefixes, overlapping, that give every address an allowed next hop by
    longest-prefix match: ORTC (Draves, King, Venkatachary, Zill 1999) with a set of
    allowed values per address instead of one, which its dynamic programme takes as is
    (each subtree's cost is still its minimum for the values in its set and one more for
    any other), so the choice among equal-cost next hops is optimal too.

    spans: (first, last address, allowed) in address order, allowed a bit set of values
    (bit j: value j), ANY or UNROUTED; space between spans is ANY inside a pool (first,
    last) and UNROUTED outside. An UNROUTED address is never covered: every prefix holding
    one gets no route, and what it holds is routed below it. Returns (start, log2 size,
    value) per prefix, a covering prefix before the ones inside it."""
    segs = _segments(spans, pools, bits)
    if not segs:
        return []
    starts = [s[0] for s in segs]
    keyed = [i for i, s in enumerate(segs) if s[2] != UNROUTED]
    if not keyed:
        return []
    lo, hi = segs[keyed[0]][0], segs[keyed[-1]][1]
    size_log = (lo ^ hi).bit_length()
    root = _subtree(segs, starts, lo >> size_log << size_log, size_log)
    out: list[tuple[int, int, int]] = []
    _walk(root, None, lo >> size_log << size_log, size_log, out)
    return out


def _segments(
    spans: list[tuple[int, int, int]], pools: list[tuple[int, int]], bits: int
) -> list[tuple[int, int, int]]:
    """The whole address space as (first, last, allowed) pieces, equal neighbours merged;
    a span overlapping an earlier one keeps only its part after it."""
    segs: list[tuple[int, int, int]] = []

    def add(lo: int, hi: int, allowed: int) -> None:
        if segs and segs[-1][2] == allowed:
            segs[-1] = (segs[-1][0], hi, allowed)
        else:
            segs.append((lo, hi, allowed))

    def gap(lo: int, hi: int) -> None:
        for p_lo, p_hi in pools:
            if p_hi < lo or p_lo > hi:
                continue
            if p_lo > lo:
                add(lo, p_lo - 1, UNROUTED)
            add(max(lo, p_lo), min(hi, p_hi), ANY)
            lo = min(hi, p_hi) + 1
            if lo > hi:
                return
        add(lo, hi, UNROUTED)

    cursor = 0
    for lo, hi, allowed in spans:
        if hi < cursor:
            continue
        if lo > cursor:
            gap(cursor, lo - 1)
        add(max(lo, cursor), hi, allowed)
        cursor = hi + 1
    top = (1 << bits) - 1
    if cursor <= top:
        gap(cursor, top)
    return segs


# a subtree: (allowed set, unrouted allowed, holds an UNROUTED address, children or None)
_Node = tuple[int, bool, bool, "tuple[_Node, _Node] | None"]


def _subtree(segs: list[tuple[int, int, int]], starts: list[int], base: int, size_log: int
             ) -> _Node:  # fmt: skip
    """ORTC's passes 1 and 2 on the block [base, base + 2**size_log): leaves are blocks
    inside one segment; a node's set is its children's intersection, else their union."""
    i = bisect_right(starts, base) - 1
    last = base + (1 << size_log) - 1
    if segs[i][1] >= last:  # one segment holds the block: a leaf
        allowed = segs[i][2]
        if allowed == UNROUTED:
            return (0, True, True, None)
        return (allowed, allowed == ANY, False, None)
    half = size_log - 1
    left = _subtree(segs, starts, base, half)
    right = _subtree(segs, starts, base + (1 << half), half)
    if left[2] or right[2]:
        return (0, True, True, (left, right))
    both, none_ok = left[0] & right[0], left[1] and right[1]
    if both or none_ok:
        return (both, none_ok, False, (left, right))
    return (left[0] | right[0], left[1] or right[1], False, (left, right))


def _walk(node: _Node, inherited: int | None, base: int, size_log: int,
          out: list[tuple[int, int, int]]) -> None:  # fmt: skip
    """ORTC's pass 3: a prefix where the value inherited from the covering one is not
    allowed (the lowest allowed value then), none elsewhere."""
    allowed, none_ok, unrouted, children = node
    value = inherited
    if unrouted:
        value = None
    elif inherited is None:
        if not none_ok:
            value = (allowed & -allowed).bit_length() - 1
            out.append((base, size_log, value))
    elif not allowed >> inherited & 1:
        value = (allowed & -allowed).bit_length() - 1
        out.append((base, size_log, value))
    if children is not None:
        half = size_log - 1
        _walk(children[0], value, base, half, out)
        _walk(children[1], value, base + (1 << half), half, out)


def pool_ranges(plan: LabPlan, version: int) -> list[tuple[int, int]]:
    """(first, last address) of the plan's pools of this family, in address order."""
    out = []
    for cidr in plan.pools:
        net = ip_network(cidr)
        if net.version == version:
            out.append((int(net.network_address), int(net.broadcast_address)))
    return sorted(out)


def choice_values(hitsets: list[int], multipath: bool) -> tuple[list[int], list[int]]:
    """Per destination, the allowed set smallest_table takes, from the bit set of its
    equal-cost gateways (0: unreachable); and what each value stands for (a bit set of
    gateways). Single path: value j is gateway j, any of the equal-cost ones will do.
    Multipath: one value per distinct set of gateways (in numeric order), the set itself."""
    if not multipath:
        top = max(hitsets, default=0).bit_length()
        return hitsets, [1 << j for j in range(top)]
    distinct = sorted(set(hitsets) - {0})
    index = {key: j for j, key in enumerate(distinct)}
    return [1 << index[h] if h else 0 for h in hitsets], distinct
