"""Prove reachability from the kernels' own tables, with few packets.

Pinging every pair of a 100-node lab is 19,800 echoes; this proves the same with ~600:

1. every namespace's links, addresses, routes and forwarding switches are read over
   netlink (worker threads, one socket per namespace, opened inside it);
2. for every pair the routing promises to connect (planned hop count below the default
   TTL, as `check.check_pairs` promises), the path is walked in-process through the
   kernels' FIBs: longest-prefix match at each node, the gateway must be an address of the
   interface at the other end of the route's link, both ends up and running, every transit
   node forwarding, no loop, no more hops than the TTL lets a reply travel; every branch of
   a multipath route is walked (a flow may hash onto any of them);
3. every link is pinged across (one echo per family: the link carries traffic both ways,
   neighbour entries and all), and a sample of pairs is pinged end to end.

A pair passes when its FIB path is complete both ways (request and reply are both pairs),
so a check that passes means every promised pair can talk. The walk covers what forwards a
packet in a netrig static/ECMP lab; labs where something else decides (bridges, Open vSwitch,
firewalls, routing daemons with their own tables and rules) are pinged pair by pair instead
(`eligible`).

Small labs (fewer than SMALL_VERTICES hosts and networks) are walked in pure Python, one
destination at a time, every branch of every path (importing numpy would cost more than the
whole walk). Larger ones are vectorised: per family and per chunk of destinations, an array
holds each node's next node, and pointer doubling finds where 2^k hops lead and how many hops
it took (log2(TTL) array steps instead of a walk per pair); destinations reached over a
multipath route are walked exactly, branch by branch, as in a small lab.
"""

from __future__ import annotations

import random
import struct
import sys
import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address
from typing import TYPE_CHECKING, Any

from netrig.lab import netns, nlwire
from netrig.lab.settle import getlink, running_of
from netrig.plan import csgraph
from netrig.plan.model import LabPlan, NodePlan
from netrig.plan.prefixes import hop_counts, network_edges

if TYPE_CHECKING:
    import numpy as np

RTN_UNICAST = 1
RTA_MULTIPATH = 9
IFA_ADDRESS, IFA_LOCAL = 1, 2
AF = {2: 4, 10: 6}
CHUNK_CELLS = 4_000_000  # nodes × destinations per array step (~16 MB per int32 array)
SAMPLE_PAIRS = 256  # per family, pinged end to end
READ_THREADS = 1  # reading is mostly Python (parsing): a second thread only contends
BAD, LOCAL = 0, 1  # hop ids: no way on / delivered here
SMALL_VERTICES = 400  # hosts + networks below which the walk runs in pure Python
# host indexes → their planned hops to every host (rows: lists, or a numpy array)
PromiseFn = Callable[[Sequence[int]], Any]


def is_small(plan: LabPlan) -> bool:
    """Whether the check of this lab runs in pure Python (see SMALL_VERTICES)."""
    return len(plan.nodes) + len(plan.networks) < SMALL_VERTICES


@dataclass
class Kernel:
    """One namespace as its kernel sees it."""

    running: set[int] = field(default_factory=set)  # ifindexes up and running
    addrs: dict[int, list[tuple[int, int]]] = field(default_factory=lambda: {4: [], 6: []})
    # family → (dst, prefix length, route type, [(gateway or None, oif)])
    routes: dict[int, list[tuple[int, int, int, list[tuple[int | None, int]]]]] = field(
        default_factory=lambda: {4: [], 6: []}
    )
    forwarding: dict[int, bool] = field(default_factory=dict)


@dataclass
class Proof:
    """What the FIB walk found."""

    pairs: int  # promised (source, destination address) pairs walked
    failed: list[tuple[str, str, str]]
    reasons: dict[tuple[str, str, str], str]
    seconds: float
    read_seconds: float


def eligible(plan: LabPlan) -> bool:
    """Whether the FIB decides alone where a packet goes (netrig's own routes, hosts only,
    no strict reverse-path filter: it drops what arrives on an unexpected interface)."""
    if plan.protocol not in ("static", "ecmp"):
        return False
    if any("rp_filter" in key and str(value) == "1" for key, value in plan.sysctls.items()):
        return False
    return all(
        n.kind == "host" and not n.bridge and not n.ovs and not n.firewall and not n.shares
        for n in plan.nodes.values()
    )


# ------------------------------------------------------------------ reading the kernels


def read_kernels(
    plan: LabPlan, threads: int = READ_THREADS, only: list[str] | None = None
) -> dict[str, Kernel]:
    """Every node's kernel state (or only these nodes'), read over netlink from a few
    worker threads."""
    nodes = list(plan.nodes.values()) if only is None else [plan.nodes[n] for n in only]
    out: dict[str, Kernel] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(share: list[NodePlan]) -> None:
        try:
            for node in share:
                with netns.entered(node.ns):
                    kernel = _read_here([i.index for i in node.ifaces])
                with lock:
                    out[node.name] = kernel
        except BaseException as exc:  # re-raised in the caller
            errors.append(exc)

    count = max(1, min(threads, len(nodes)))
    workers = [
        threading.Thread(target=work, args=(nodes[i::count],), name="netrig-fibread")
        for i in range(count)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return out


def _read_here(indexes: list[int]) -> Kernel:
    """The calling thread's namespace: links, addresses, main-table routes, forwarding."""
    k = Kernel()
    with nlwire.RtnlSocket() as sock:
        # the gets in one round trip: each interface (asked by index: see settle.running_ports), then
        # forwarding: IPv4 by the switch of the interface a packet came in on, IPv6 by `all`
        gets = [getlink(i) for i in indexes] + [(RTM_GETNETCONF, _netconf(2, i)) for i in indexes]
        gets.append((RTM_GETNETCONF, _netconf(10, NETCONFA_IFINDEX_ALL)))
        answers = sock.request_each(gets)
        links, v4 = answers[: len(indexes)], answers[len(indexes) : 2 * len(indexes)]
        k.running = running_of(indexes, links)
        k.forwarding[4] = all(_forwards(a) for a in v4)
        k.forwarding[6] = _forwards(answers[-1])
        body = struct.pack("=BBBBi", 0, 0, 0, 0, 0)
        for _t, payload in sock.request(nlwire.RTM_GETADDR, nlwire.NLM_F_DUMP, body):
            family, _plen, _flags, _scope, index = struct.unpack_from("=BBBBi", payload)
            if family not in AF:
                continue
            attrs = nlwire.parse_attrs(payload, 8)
            raw = attrs.get(IFA_LOCAL) or attrs.get(IFA_ADDRESS)
            if raw:
                k.addrs[AF[family]].append((index, int.from_bytes(raw, "big")))
        _routes(nlwire.dump_routes(sock, nlwire.RT_TABLE_MAIN), k)
    return k


def _netconf(af: int, index: int) -> bytes:
    return struct.pack("=Bxxx", af) + nlwire.attr(NETCONFA_IFINDEX, _I32.pack(index))


def _forwards(answer: tuple[int, bytes] | None) -> bool:
    """A netconf reply's forwarding switch (False without one, e.g. IPv6 disabled)."""
    if answer is None:
        return False
    value = nlwire.parse_attrs(answer[1], 4).get(NETCONFA_FORWARDING)
    return value is not None and _I32.unpack(value)[0] == 1


RTM_GETNETCONF = 82
NETCONFA_IFINDEX, NETCONFA_FORWARDING = 1, 2
NETCONFA_IFINDEX_ALL = -1
_ATTR = struct.Struct("=HH")
_I32 = struct.Struct("=i")


def _routes(payloads: list[bytes], k: Kernel) -> None:
    """Main-table routes of a dump into k.routes (a tight loop: ~10^5 routes per 1000 nodes)."""
    unpack_attr = _ATTR.unpack_from
    unpack_i32 = _I32.unpack_from
    from_bytes = int.from_bytes
    for payload in payloads:
        family = AF.get(payload[0])
        if family is None:
            continue
        table, rtype = payload[4], payload[7]
        dst, gw, oif, multipath = 0, None, None, None
        off, end = 12, len(payload)
        while off + 4 <= end:
            length, kind = unpack_attr(payload, off)
            if length < 4:
                break
            kind &= 0x3FFF
            if kind == 1:  # RTA_DST
                dst = from_bytes(payload[off + 4 : off + length], "big")
            elif kind == 4:  # RTA_OIF
                oif = unpack_i32(payload, off + 4)[0]
            elif kind == 5:  # RTA_GATEWAY
                gw = from_bytes(payload[off + 4 : off + length], "big")
            elif kind == RTA_MULTIPATH:
                multipath = payload[off + 4 : off + length]
            elif kind == 15:  # RTA_TABLE
                table = unpack_i32(payload, off + 4)[0]
            off += (length + 3) & ~3
        if table != nlwire.RT_TABLE_MAIN:
            continue
        if multipath is not None:
            hops = _multipath(multipath)
        elif oif is not None:
            hops = [(gw, oif)]
        else:
            hops = []
        k.routes[family].append((dst, payload[1], rtype, hops))


def _multipath(data: bytes) -> list[tuple[int | None, int]]:
    hops: list[tuple[int | None, int]] = []
    off = 0
    while off + 8 <= len(data):
        length, _flags, _hops, oif = struct.unpack_from("=HBBi", data, off)
        if length < 8:
            break
        gw = nlwire.parse_attrs(data[off + 8 : off + length]).get(nlwire.RTA_GATEWAY)
        hops.append((int.from_bytes(gw, "big") if gw else None, oif))
        off += (length + 3) & ~3
    return hops


# ------------------------------------------------------------------ the walk


@dataclass
class _Family:
    """One address family's destinations and every node's forwarding decision for them.

    A small lab keeps each node's hop id per destination (`rows`, lists); a large one only
    the change points along the destination axis (`starts`, `values`, numpy arrays)."""

    family: int
    limit: int  # most hops a packet of this family may take (the default TTL)
    addrs: list[int]  # sorted destination addresses
    owner: Any  # host index of each destination (list, or numpy array in a large lab)
    text: list[str]  # each destination as text
    rows: list[list[int]] | None  # small: per node, the hop id of every destination
    starts: list[np.ndarray] | None  # large: per node, change points over the destinations
    values: list[np.ndarray] | None  # … and the hop id from each change point on
    # hop id → (first node, direct, every node of a multipath hop)
    hop_first: Any
    hop_direct: Any
    hop_multi: list[tuple[int, ...] | None]
    forwarding: Any  # per node
    hop_targets: list[tuple[int, ...]] | None = None  # made by _exact

    def hop_at(self, node: int, t: int) -> int:
        """The hop id of node `node` for destination `t`."""
        if self.rows is not None:
            return self.rows[node][t]
        import numpy as np

        assert self.starts is not None and self.values is not None
        return int(self.values[node][np.searchsorted(self.starts[node], t, side="right") - 1])


class _Failures:
    """Failed pairs and (a few) reasons; a pair's reply fails with it."""

    def __init__(self, plan: LabPlan, hosts: list[str]) -> None:
        self.plan, self.hosts = plan, hosts
        self.failed: list[tuple[str, str, str]] = []
        self.reasons: dict[tuple[str, str, str], str] = {}
        self.seen: set[tuple[str, str, str]] = set()

    def add(self, fam: _Family, s: int, t: int) -> None:
        hosts = self.hosts
        src, dst = hosts[s], hosts[int(fam.owner[t])]
        # an echo needs the way back too: the reverse pair fails with this one
        for a, b, why in ((src, dst, ""), (dst, src, "the reply: ")):
            pair = (a, b, self.plan.addr(b, fam.family))
            if pair not in self.seen:
                self.seen.add(pair)
                self.failed.append(pair)
            if pair not in self.reasons and len(self.reasons) < 20:
                self.reasons[pair] = why + explain(fam, s, t, hosts)


def prove(
    plan: LabPlan,
    kernels: dict[str, Kernel],
    promised: PromiseFn | None = None,
    destinations: int | None = None,
) -> Proof:
    """Walk every promised pair through the kernels' FIBs; list the pairs that fail.
    With `destinations`, only pairs toward that many destinations per family (a fixed
    random choice among them), from every node: `check: sample`."""
    start = time.perf_counter()
    hosts = [n.name for n in plan.nodes.values()]
    index = {name: i for i, name in enumerate(hosts)}
    small = is_small(plan)
    promised = promised or planned_hops(plan, hosts)
    failures = _Failures(plan, hosts)
    total = 0
    for family in (4, 6):
        fam = _tables(plan, kernels, hosts, index, family, small)
        if fam is None:
            continue
        has = _has_family(plan, hosts, family)
        cols = list(range(len(fam.addrs)))
        if destinations is not None and destinations < len(cols):
            cols = sorted(random.Random(len(cols)).sample(cols, destinations))
        if small:
            total += _prove_small(fam, promised, has, failures, cols)
        else:
            total += _prove_large(fam, promised, has, failures, cols)
    return Proof(total, sorted(failures.failed), failures.reasons, time.perf_counter() - start, 0.0)


def _prove_small(
    fam: _Family, promised: PromiseFn, has: list[bool], failures: _Failures, cols: list[int]
) -> int:
    """Each destination (of cols) walked branch by branch from every node, in Python."""
    assert fam.rows is not None
    rows = fam.rows
    n = len(rows)
    hops = promised([fam.owner[t] for t in cols])  # planned hop counts per owner
    total = 0
    for i, t in enumerate(cols):
        owner = fam.owner[t]
        need = [s for s, h in enumerate(hops[i]) if 0 < h < fam.limit and has[s]]
        if not need:
            continue
        total += len(need)
        ok = _exact(fam, [row[t] for row in rows], owner, n)
        for s in need:
            if not ok[s]:
                failures.add(fam, s, t)
    return total


def _prove_large(
    fam: _Family, promised: PromiseFn, has: list[bool], failures: _Failures, chosen: list[int]
) -> int:
    """Chunks of destinations (of chosen) walked at once with numpy (see _walk)."""
    import numpy as np

    n = len(fam.forwarding)
    has_row = np.array(has)
    step = max(1, CHUNK_CELLS // (n + 1))
    total = 0
    for c0 in range(0, len(chosen), step):
        cols = np.array(chosen[c0 : c0 + step])
        owners = fam.owner[cols]
        hops = promised(owners)  # planned hop counts, one row per destination's owner
        need = (hops < fam.limit) & (hops > 0)  # (destinations × sources)
        need &= has_row[None, :]
        if not need.any():
            continue
        ok = _walk(fam, cols, n)  # (sources × destinations)
        bad = need & ~ok.T
        total += int(need.sum())
        for d, s in zip(*np.nonzero(bad), strict=True):
            failures.add(fam, int(s), int(cols[d]))
    return total


def _has_family(plan: LabPlan, hosts: list[str], family: int) -> list[bool]:
    return [bool(plan.nodes[h].addresses(family)) for h in hosts]


def planned_hops(plan: LabPlan, hosts: list[str]) -> PromiseFn:
    """A function: host indexes → their planned hop counts to every host (rows), from the
    plan's graph (a network counts as one hop). Small labs compute all rows at once, in
    Python; large ones the rows asked for, with scipy."""
    if is_small(plan):
        full = hop_counts(plan, hosts)
        return lambda which: [full[i] for i in which]
    import numpy as np

    shortest_path, coo_matrix = csgraph.load()

    rows, cols = network_edges(plan, hosts)
    if any(len(net.members) > HOST_GRAPH_MEMBERS for net in plan.networks):
        n_v = len(hosts) + len(plan.networks)
        graph = coo_matrix(([1] * len(rows), (rows, cols)), shape=(n_v, n_v)).tocsr()
        halve = True
    else:  # hosts alone, a network's members one hop apart: a 100x100 grid 10^4 vertices, not 3x10^4
        members: list[list[int]] = [[] for _ in plan.networks]
        for r, c in zip(rows, cols, strict=True):
            members[c - len(hosts)].append(r)
        pairs = [(a, b) for m in members for i, a in enumerate(m) for b in m[i + 1 :]]
        graph = coo_matrix(
            ([1] * len(pairs), ([a for a, _ in pairs], [b for _, b in pairs])),
            shape=(len(hosts), len(hosts)),
        ).tocsr()
        halve = False

    def some(which: Sequence[int]) -> np.ndarray:
        uniq, inverse = np.unique(np.asarray(which), return_inverse=True)
        dist = shortest_path(graph, directed=False, unweighted=True, indices=uniq)
        dist = dist[:, : len(hosts)] / 2 if halve else dist
        return dist[inverse]

    return some


HOST_GRAPH_MEMBERS = 16  # a network with more: hop counts on the host–network graph


def _tables(
    plan: LabPlan,
    kernels: dict[str, Kernel],
    hosts: list[str],
    index: dict[str, int],
    family: int,
    small: bool,
) -> _Family | None:
    dests = []
    for i, name in enumerate(hosts):
        node_addrs = plan.nodes[name].addresses(family)
        if node_addrs:
            dests.append((int(ip_address(node_addrs[0])), i, node_addrs[0]))
    if not dests:
        return None
    dests.sort()
    addrs = [d[0] for d in dests]
    bits = 32 if family == 4 else 128
    n = len(hosts)
    # where each node's links lead: (node, ifindex) → (peer node, peer ifindex)
    far: dict[tuple[int, int], tuple[int, int]] = {}
    for name in hosts:
        node = plan.nodes[name]
        for iface in node.ifaces:
            peer = plan.nodes[iface.peer]
            far[(index[name], iface.index)] = (
                index[iface.peer],
                peer.iface(iface.peer_iface).index,
            )
    # each node's addresses per interface, as its kernel has them
    on_iface: list[dict[int, set[int]]] = []
    for name in hosts:
        per: dict[int, set[int]] = {}
        for ifindex, addr in kernels[name].addrs[family]:
            per.setdefault(ifindex, set()).add(addr)
        on_iface.append(per)
    hop_ids: dict[tuple[int, bool, tuple[int, ...] | None], int] = {}
    hop_first, hop_direct = [n, n], [False, False]  # BAD, LOCAL
    hop_multi: list[tuple[int, ...] | None] = [None, None]

    def hop_id(first: int, direct: bool, multi: tuple[int, ...] | None) -> int:
        key = (first, direct, multi)
        if key not in hop_ids:
            hop_ids[key] = len(hop_first)
            hop_first.append(first)
            hop_direct.append(direct)
            hop_multi.append(multi)
        return hop_ids[key]

    if not small:
        import numpy as np
    rows: list[list[int]] = []
    starts: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for i, name in enumerate(hosts):
        kernel = kernels[name]
        row: Any = [BAD] * len(addrs) if small else np.zeros(len(addrs), np.int32)
        for dst, plen, rtype, nexthops in sorted(kernel.routes[family], key=lambda r: r[1]):
            lo = bisect_left(addrs, dst)
            hi = bisect_right(addrs, dst + (1 << (bits - plen)) - 1)
            if lo == hi:
                continue
            hop = _resolve(i, rtype, nexthops, kernel, far, on_iface, kernels, hosts,
                           family, hop_id)  # fmt: skip
            row[lo:hi] = [hop] * (hi - lo) if small else hop
        for _ifindex, addr in kernel.addrs[family]:
            pos = bisect_left(addrs, addr)
            if pos < len(addrs) and addrs[pos] == addr:
                row[pos] = LOCAL
        if small:
            rows.append(row)
        else:
            change = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1])))
            starts.append(change)
            values.append(row[change])
    key = "net.ipv4.ip_default_ttl" if family == 4 else "net.ipv6.conf.all.hop_limit"
    forwarding = [kernels[h].forwarding.get(family, False) for h in hosts]
    owner = [d[1] for d in dests]
    return _Family(
        family=family,
        limit=int(plan.sysctls.get(key, 64)),
        addrs=addrs,
        owner=owner if small else np.array(owner, np.int64),
        text=[d[2] for d in dests],
        rows=rows if small else None,
        starts=None if small else starts,
        values=None if small else values,
        hop_first=hop_first if small else np.array(hop_first, np.int64),
        hop_direct=hop_direct if small else np.array(hop_direct, bool),
        hop_multi=hop_multi,
        forwarding=forwarding if small else np.array(forwarding),
    )


def _resolve(i, rtype, nexthops, kernel, far, on_iface, kernels, hosts, family, hop_id) -> int:
    """A route's hop id: the node each next hop leads to, or BAD."""
    if rtype != RTN_UNICAST or not nexthops:
        return BAD
    nodes = []
    direct = False
    for gw, oif in nexthops:
        if oif not in kernel.running or (i, oif) not in far:
            return BAD
        peer, peer_if = far[(i, oif)]
        if peer_if not in kernels[hosts[peer]].running:
            return BAD
        if gw is None:
            direct = True  # on-link: only the peer's own addresses answer
        elif gw not in on_iface[peer].get(peer_if, ()):
            return BAD
        nodes.append(peer)
    multi = tuple(nodes) if len(set(nodes)) > 1 or (direct and len(nodes) > 1) else None
    return hop_id(nodes[0], direct, multi)


def _hop_matrix(fam: _Family, cols: np.ndarray, n: int) -> np.ndarray:
    """Hop ids (nodes × destinations in cols) from each node's change points."""
    import numpy as np

    assert fam.starts is not None and fam.values is not None
    out = np.empty((n, len(cols)), np.int32)
    for i in range(n):
        pos = np.searchsorted(fam.starts[i], cols, side="right") - 1
        out[i] = fam.values[i][pos]
    return out


def _walk(fam: _Family, cols: np.ndarray, n: int) -> np.ndarray:
    """(sources × destinations): the FIB path from each node reaches the destination's
    owner, every branch of it, within the hop limit."""
    import numpy as np

    ids = _hop_matrix(fam, cols, n)
    owner = fam.owner[cols]
    width = len(cols)
    span = np.arange(width)
    first = fam.hop_first[ids]  # the next node; n = nowhere
    direct = fam.hop_direct[ids]
    first = np.where(direct & (first != owner[None, :]), n, first)
    local = ids == LOCAL
    rows = np.arange(n)[:, None]
    first = np.where(local, np.where(rows == owner[None, :], rows, n), first)
    # transit: a node that does not forward drops what is not its own
    transit = np.where(fam.forwarding[:, None] | local, first, n)
    jump = np.vstack([transit, np.full((1, width), n)]).astype(np.int32)
    steps = (jump != np.arange(n + 1)[:, None]).astype(np.int32)
    for _ in range(max(1, int(fam.limit).bit_length())):
        steps = steps + steps[jump, span]
        jump = jump[jump, span]
    src_first = np.where(local, n, first)  # a node's own address: not a pair
    end = jump[src_first, span]
    hops = steps[src_first, span] + 1
    ok = (end == owner[None, :]) & (hops <= fam.limit)
    multi_ids = [h for h, m in enumerate(fam.hop_multi) if m]
    if multi_ids:
        touched = np.isin(ids, multi_ids).any(axis=0)
        for d in np.flatnonzero(touched):
            ok[:, d] = _exact(fam, ids[:, d].tolist(), int(owner[d]), n)
    return ok


def _exact(fam: _Family, ids: Sequence[int], owner: int, n: int) -> list[bool]:
    """One destination walked branch by branch: ok per source (every branch of every
    multipath route on the way reaches the owner within the hop limit). A node's depth is
    the longest way on from it as a transit node; single next hops are followed in a loop,
    multipath branches recursively."""
    if fam.hop_targets is None:  # hop id → the nodes it leads to
        fam.hop_targets = [
            multi if multi else (int(first),)
            for first, multi in zip(fam.hop_first, fam.hop_multi, strict=True)
        ]
        fam.hop_targets[BAD] = fam.hop_targets[LOCAL] = ()
    targets, hop_direct, forwarding = fam.hop_targets, fam.hop_direct, fam.forwarding
    inf = float("inf")
    depth: list[float | None] = [None] * n
    depth[owner] = 0

    def nexts(node: int) -> tuple[int, ...]:
        hid = int(ids[node])
        found = targets[hid]
        if hop_direct[hid] and any(t != owner for t in found):
            return ()  # on-link: only the peer's own addresses answer
        return found

    def transit(node: int) -> float:
        path = []
        while True:
            known = depth[node]
            if known is not None:
                break
            found = nexts(node) if forwarding[node] else ()
            depth[node] = inf  # on the way: a loop reads as unreachable
            if len(found) == 1:
                path.append(node)
                node = found[0]
                continue
            known = 1 + max(map(transit, found)) if found else inf
            depth[node] = known
            break
        for step in reversed(path):
            known += 1
            depth[step] = known
        return known

    ok = [False] * n
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 100))
    try:
        for s in range(n):
            if s == owner:
                continue
            found = nexts(s)
            longest = 1 + max(map(transit, found)) if found else inf
            ok[s] = longest <= fam.limit
    finally:
        sys.setrecursionlimit(limit)
    return ok


def explain(fam: _Family, s: int, t: int, hosts: list[str]) -> str:
    """Why the FIB path from host s towards destination t fails, hop by hop (first branch)."""
    owner = int(fam.owner[t])
    node, seen = s, [s]
    n = len(hosts)
    for _ in range(fam.limit + 1):
        hid = fam.hop_at(node, t)
        if hid == LOCAL:
            return "delivered" if node == owner else f"{hosts[node]} has the address itself"
        if hid == BAD:
            return f"{hosts[node]} has no usable route (missing, unreachable, or a link down)"
        nxt = int(fam.hop_first[hid])
        if fam.hop_direct[hid] and nxt != owner:
            return f"{hosts[node]} sends it on-link to {hosts[nxt]}, which does not own it"
        if nxt != owner and not fam.forwarding[nxt]:
            return f"{hosts[nxt]} does not forward IPv{fam.family}"
        if nxt == owner:
            if len(seen) > fam.limit:
                return f"{len(seen)} hops, more than the TTL ({fam.limit})"
            return "a branch of a multipath route on the way fails"
        if nxt in seen:
            return "routing loop: " + " → ".join(hosts[x] for x in [*seen, nxt][-6:])
        seen.append(nxt)
        node = nxt
        if nxt >= n:
            break
    return (
        f"longer than the TTL ({fam.limit} hops): " + " → ".join(hosts[x] for x in seen[:4]) + " …"
    )


# ------------------------------------------------------------------ what is pinged


def link_pairs(plan: LabPlan) -> list[tuple[str, str, str]]:
    """One echo per link and family: from one end to the other end's link address."""
    pairs = []
    for link in plan.links:
        peer = plan.nodes[link.b].iface(link.b_iface)
        seen = set()
        for cidr in peer.addrs:
            addr = cidr.split("/")[0]
            fam = 6 if ":" in addr else 4
            if fam not in seen:
                seen.add(fam)
                pairs.append((link.a, link.b, addr))
    return pairs


def sample_pairs(
    plan: LabPlan, count: int = SAMPLE_PAIRS, promised: PromiseFn | None = None
) -> list[tuple[str, str, str]]:
    """Up to `count` promised pairs per family, end to end, the same ones every time."""
    hosts = [n.name for n in plan.nodes.values()]
    if len(hosts) < 2:
        return []
    promised = promised or planned_hops(plan, hosts)
    rng = random.Random(plan.name)
    sources = rng.sample(range(len(hosts)), min(count, len(hosts)))
    rows = promised(sources)
    small = isinstance(rows, list)
    pairs = []
    for family in (4, 6):
        key = "net.ipv4.ip_default_ttl" if family == 4 else "net.ipv6.conf.all.hop_limit"
        limit = int(plan.sysctls.get(key, 64))
        has = _has_family(plan, hosts, family)
        if not small:
            import numpy as np

            has_row = np.array(has)
        for s, row in zip(sources, rows, strict=True):
            if not has[s]:
                continue
            if small:
                ok = [j for j, h in enumerate(row) if 0 < h < limit and has[j]]
            else:
                ok = np.flatnonzero((row > 0) & (row < limit) & has_row).tolist()
            if ok:
                d = hosts[ok[rng.randrange(len(ok))]]
                pairs.append((hosts[s], d, plan.addr(d, family)))
    return pairs
