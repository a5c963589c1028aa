"""What both route planners (netrig.plan.routes with numpy, netrig.plan.routes_py in pure
Python) share: each destination's address span, a gateway's address on a network,
Dijkstra's distances in Python, the graph hop counts are taken on, and the smallest
overlapping prefix table for a node (ORTC)."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections import deque
from collections.abc import Callable
from functools import partial
from ipaddress import ip_network

from netrig.base import forked
from netrig.plan.model import LabPlan, NetworkPlan, NodePlan, RoutePlan


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


Gateway = tuple[int, NetworkPlan, str, int]  # (host vertex, network, own port, cost)


def gateway_hops(
    node: NodePlan, gateway_set: int, version: int, gateways: list[Gateway],
    hosts: list[NodePlan],
) -> list[tuple[str, int]] | None:  # fmt: skip
    """(gateway address, own ifindex) of each gateway in the bit set (bit j: gateways[j],
    hosts indexed by vertex); None if one has no address of this family (no route then).
    Both planners' (netrig.plan.routes and routes_py)."""
    out = []
    rest = gateway_set
    while rest:  # the set bits, lowest first (not every bit: a hub's sets are 10^4 bits)
        low = rest & -rest
        rest ^= low
        v, net, port, _ = gateways[low.bit_length() - 1]
        gw = port_address(hosts[v], net, version)
        if gw is None:
            return None
        bridge = node.bridge
        out.append((gw, bridge.index if bridge and port == bridge.name else node.iface(port).index))
    return out


def gateways_of(
    name: str, links: list[tuple[int, int]], nets: list[NetworkPlan], h_index: dict[str, int]
) -> list[Gateway]:
    """Host NAME's neighbours as next hops: every other member of each network it is on
    (links: its (network k, cost) pairs), with its own port there and twice the cost."""
    out: list[Gateway] = []
    for k, cost in links:
        net = nets[k]
        port = next(p for n, p in net.members if n == name)
        for member, _ in net.members:
            if member != name:
                out.append((h_index[member], net, port, 2 * cost))
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

EXACT_BELOW = 10**5  # integer distances below this: numpy.isclose(a, b) is a == b

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
    keyed = [seg for seg in segs if seg[2] not in (ANY, UNROUTED)]
    if not keyed:
        return []
    # outside the smallest block holding every keyed segment nothing needs a route
    lo, hi = keyed[0][0], keyed[-1][1]
    size_log = (lo ^ hi).bit_length()
    out: list[tuple[int, int, int]] = []
    _walk(_Tree(segs).subtree(lo >> size_log << size_log, size_log), None, out)
    return out


def merge_runs(spans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Neighbouring spans (contiguous, neither or both ANY) merged while what they all
    allow is not empty, the run allowing that: the fewest such runs (greedy is optimal for
    this), so smallest_table has few segments to take (a 100x100 grid's node: tens instead
    of ~1,000). The choice is made before ORTC, so its table can be a few percent larger
    than on the spans themselves: netrig.plan.routes does this for large labs only."""
    out: list[tuple[int, int, int]] = []
    for lo, hi, allowed in spans:
        if out:
            p_lo, p_hi, p_allowed = out[-1]
            both = p_allowed & allowed
            if both and lo == p_hi + 1 and (allowed == ANY) == (p_allowed == ANY):
                out[-1] = (p_lo, hi, both)
                continue
        out.append((lo, hi, allowed))
    return out


def _segments(
    spans: list[tuple[int, int, int]], pools: list[tuple[int, int]], bits: int
) -> list[tuple[int, int, int]]:
    """The whole address space as (first, last, allowed) pieces, equal neighbours merged;
    a span overlapping an earlier one keeps only its part after it."""
    segs: list[tuple[int, int, int]] = []
    cur_lo, cur_hi, cur = 0, -1, None  # the piece being extended

    # (first, last, allowed); the caller appends its span, whose allowed is None at the end
    def gap(lo: int, hi: int) -> list[tuple[int, int, int | None]]:
        out: list[tuple[int, int, int | None]] = []
        for p_lo, p_hi in pools:
            if p_hi < lo or p_lo > hi:
                continue
            if p_lo > lo:
                out.append((lo, p_lo - 1, UNROUTED))
            out.append((max(lo, p_lo), min(hi, p_hi), ANY))
            lo = min(hi, p_hi) + 1
            if lo > hi:
                return out
        out.append((lo, hi, UNROUTED))
        return out

    for lo, hi, allowed in [*spans, (1 << bits, 1 << bits, None)]:
        if hi <= cur_hi:
            continue
        pieces = gap(cur_hi + 1, lo - 1) if lo > cur_hi + 1 else []
        pieces.append((max(lo, cur_hi + 1), hi, allowed))
        for p_lo, p_hi, value in pieces:
            if value == cur:
                cur_hi = p_hi
            else:
                if cur is not None:
                    segs.append((cur_lo, cur_hi, cur))
                cur_lo, cur_hi, cur = p_lo, p_hi, value
    return segs


# a subtree: (allowed set, unrouted allowed, holds an UNROUTED address, children or None,
# first address, log2 size)
_Node = tuple[int, bool, bool, "tuple[_Node, _Node] | None", int, int]


class _Tree:
    """ORTC's passes 1 and 2 over the segments: leaves are blocks inside one segment; a
    node's set is its children's intersection if not empty, else their union. Two
    shortcuts that change no count: a block whose segments share allowed values is one
    leaf of those (its passes would give that set, and no prefix below one of them), and a block
    whose segments other than ANY all lie in one half is that half's smallest block
    holding them (the rest needs nothing, and a prefix there is as good as one above)."""

    def __init__(self, segs: list[tuple[int, int, int]]) -> None:
        self.segs = segs
        self.starts = [seg[0] for seg in segs]
        n = len(segs)
        # next_keyed[i]: the first segment from i on that is not ANY (n: none)
        # other[i]: for a keyed segment i, the first keyed one after it that differs
        self.next_keyed = [n] * (n + 1)
        self.prev_keyed = [-1] * (n + 1)
        self.other = [n] * (n + 1)
        for i in range(n - 1, -1, -1):
            self.next_keyed[i] = i if segs[i][2] != ANY else self.next_keyed[i + 1]
            following = self.next_keyed[i + 1]
            if segs[i][2] != ANY and following < n:
                same = segs[following][2] == segs[i][2]
                self.other[i] = self.other[following] if same else following
        for i in range(n):
            self.prev_keyed[i] = i if segs[i][2] != ANY else self.prev_keyed[i - 1]
        # common[k][i]: what segments i … i + 2**k - 1 all allow (ANY allows everything)
        self.common = [[seg[2] for seg in segs]]
        width = 1
        while 2 * width <= n:
            row = self.common[-1]
            self.common.append([row[i] & row[i + width] for i in range(n - 2 * width + 1)])
            width *= 2

    def _all_allow(self, i: int, j: int) -> int:
        k = (j - i + 1).bit_length() - 1
        return self.common[k][i] & self.common[k][j - (1 << k) + 1]

    def subtree(self, base: int, size_log: int) -> _Node:
        segs = self.segs
        last = base + (1 << size_log) - 1
        i = bisect_right(self.starts, base) - 1
        j = bisect_right(self.starts, last) - 1
        first = self.next_keyed[i]
        if first > j:  # nothing but ANY
            return (ANY, True, False, None, base, size_log)
        if segs[first][2] == UNROUTED and self.other[first] > j:
            return (0, True, True, None, base, size_log)  # nothing may be routed here
        common = self._all_allow(i, j)
        if common:  # below a prefix of a value all allow, nothing more is needed: a leaf
            return (common, False, False, None, base, size_log)
        lo = max(base, segs[first][0])
        hi = min(last, segs[self.prev_keyed[j]][1])
        span_log = (lo ^ hi).bit_length()
        if span_log < size_log:  # the rest of the block is ANY
            return self.subtree(lo >> span_log << span_log, span_log)
        half = size_log - 1
        left = self.subtree(base, half)
        right = self.subtree(base + (1 << half), half)
        if left[2] or right[2]:
            return (0, True, True, (left, right), base, size_log)
        both, none_ok = left[0] & right[0], left[1] and right[1]
        if both or none_ok:
            return (both, none_ok, False, (left, right), base, size_log)
        return (left[0] | right[0], left[1] or right[1], False, (left, right), base, size_log)


def _walk(node: _Node, inherited: int | None, out: list[tuple[int, int, int]]) -> None:
    """ORTC's pass 3: a prefix where the value inherited from the covering one is not
    allowed (the lowest allowed value then), none elsewhere."""
    allowed, none_ok, unrouted, children, base, size_log = node
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
        _walk(children[0], value, out)
        _walk(children[1], value, out)


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


PlainRoutes = dict[str, list[tuple[str, list[tuple[str, int]]]]]


def plain_routes(routes: dict[str, list[RoutePlan]]) -> PlainRoutes:
    """Routes as plain tuples: what a forked child sends back (pickled faster)."""
    return {name: [(r.dst, r.nexthops) for r in rs] for name, rs in routes.items()}


def route_plans(plain: PlainRoutes) -> dict[str, list[RoutePlan]]:
    """plain_routes read back."""
    return {name: [RoutePlan(dst, hops) for dst, hops in rs] for name, rs in plain.items()}


def in_processes(
    work: Callable[[list[int]], dict[str, list[RoutePlan]]], shares: list[list[int]]
) -> dict[str, list[RoutePlan]]:
    """work(share) for each share of the sources in a forked child (it inherits the graph
    and distances as they are), the last share here; the children's routes come back as plain
    tuples. A child that fails (or could not be forked: other threads run) has its share
    planned here."""

    def plain(share: list[int]) -> PlainRoutes:
        return plain_routes(work(share))

    children: list[tuple[list[int], forked.Pending[PlainRoutes] | None]] = []
    try:
        for share in shares[:-1]:  # each known to the clean-up below as soon as it exists
            children.append((share, forked.start(partial(plain, share))))
        routes = work(shares[-1])
        for share, child in children:
            if child is None:  # other threads run here: no fork, this process plans it
                routes.update(work(share))
                continue
            routes.update(route_plans(child.result_or(partial(plain, share))))
    finally:
        for _share, child in children:
            if child:
                child.cancel()
    return routes
