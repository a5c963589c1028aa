"""Is the lab usable? Bridge ports settled, and real ICMP echoes between nodes.

`verify` is the check `netrig up` runs. In a lab whose FIBs alone decide where packets go
(static or ECMP routing, hosts only) it proves every promised pair from the kernels'
tables and pings every link and a sample of pairs (netrig.lab.fibcheck); elsewhere, or with
`reachability: all`, it pings the pairs themselves.

The echoes are sent in-process from one raw socket per namespace (opened inside it by a
worker thread), all at once, and answered by the kernels of the target nodes; missing
answers are retried, so the first packets that wait for ARP do not count as failures.
"""

from __future__ import annotations

import os
import random
import select
import socket
import struct
import time
from contextlib import suppress
from dataclasses import dataclass, field

from netrig.base import forked
from netrig.base.disjoint import DisjointSets
from netrig.lab import fibcheck, netns
from netrig.plan.model import LabPlan, NodePlan

AUTO_ALL_PAIRS_MAX = 128
SAMPLE_TARGETS = 8
MAX_TTL = 255
WINDOW = 200
NO_REPLY = "no echo reply"  # the reason of a pair whose FIB path is whole but whose echo failed


MAX_SOCKET_SOURCES = 2000  # namespaces pinged from at once (two sockets each)


@dataclass
class CheckResult:
    pairs: int
    failed: list[tuple[str, str, str]]  # (source node, target node, target address)
    seconds: float
    method: str = "ping"  # ping: every pair pinged | fib: proven from the FIBs + echoes
    echoes: int = 0  # echo requests that had to be answered
    reasons: dict[tuple[str, str, str], str] = field(default_factory=dict)
    blocked: int = 0  # promised pairs a planned firewall drops: not expected to answer

    @property
    def ok(self) -> bool:
        return not self.failed

    def describe(self, limit: int = 5) -> str:
        """The first failures, each with why when the FIB walk knows."""
        shown = []
        for pair in self.failed[:limit]:
            src, dst, addr = pair
            why = self.reasons.get(pair)
            shown.append(f"{src}→{dst} ({addr})" + (f": {why}" if why else ""))
        more = len(self.failed) - limit
        return "; ".join(shown) + (f" and {more} more" if more > 0 else "")


@dataclass
class Prepared:
    """What `verify` works out from the plan alone before it sends anything: worked out
    ahead by `prepare` (`netrig up` does it while the kernel makes the veth pairs)."""

    pairs: list[tuple[str, str, str]] | None = None  # pinged one by one, or else:
    promised: fibcheck.PromiseFn | None = None  # proven from the FIBs,
    echoes: list[tuple[str, str, str]] = field(default_factory=list)  # with these pinged
    blocked: int = 0  # pairs left out because a planned firewall drops them


def prepare(plan: LabPlan, mode: str) -> Prepared:
    """`auto` and `sample` prove from the FIBs where they decide alone (see
    fibcheck.eligible): every link and a sample of pairs pinged; else the pairs pinged."""
    if mode in ("auto", "sample") and fibcheck.eligible(plan) and len(plan.nodes) > 1:
        promised, echoes = _proof_inputs(plan)
        return Prepared(promised=promised, echoes=echoes)
    pairs = check_pairs(plan, mode)
    if any(n.firewall for n in plan.nodes.values()):  # never eligible for the FIB proof
        kept = unblocked(plan, pairs)
        return Prepared(pairs=kept, blocked=len(pairs) - len(kept))
    return Prepared(pairs=pairs)


def unblocked(
    plan: LabPlan, pairs: list[tuple[str, str, str]]
) -> list[tuple[str, str, str]]:
    """The pairs whose echo and reply no planned firewall drops.

    The check runs after the firewalls are applied, on the lab as it will be measured, and
    leaves out only what the written rules drop (first match, as every engine applies
    them). Checking before the firewalls instead would prove a network nobody measures: a
    firewall dropping more than its rules say (a wrong CIDR, an engine's mistake) would pass.
    A firewall counts for a pair at either end (the request on the target, the reply on the
    source) or on a least-cost path between them (both, forwarded: link costs, as the
    routing weighs them; any of several equal ones); a request is judged by every address
    the sender might pick as its source, a reply by the address pinged. Each firewall's
    verdict on each lab address is worked out once (a 100-node ring with a firewall on
    every node had spent 56 s here, parsing rules per pair)."""
    from netrig.plan.firewall import FirewallPlan

    addresses = {a for n in plan.nodes.values() for f in (4, 6) for a in n.addresses(f)}
    walls: list[tuple[NodePlan, set[str]]] = []
    for node in plan.nodes.values():
        if node.firewall:
            fw = FirewallPlan.from_dict(node.firewall)
            dropped = fw.dropped(addresses)
            if dropped:  # one that drops no lab address blocks no pair
                walls.append((node, dropped))
    if not walls:
        return pairs
    adjacent: dict[str, list[tuple[str, float]]] = {}
    for link in plan.links:
        adjacent.setdefault(link.a, []).append((link.b, float(link.cost)))
        adjacent.setdefault(link.b, []).append((link.a, float(link.cost)))
    costs: dict[str, dict[str, float]] = {}

    def cost(src: str) -> dict[str, float]:
        if src not in costs:
            costs[src] = _least_costs(adjacent, src)
        return costs[src]

    def on_path(src: str, via: str, dst: str) -> bool:
        if plan.protocol == "none":  # direct neighbours: nothing forwards
            return False
        far = cost(src)
        return far.get(via, INF) + cost(via).get(dst, INF) == far.get(dst, INF) < INF

    def blocked(src: str, dst: str, addr: str) -> bool:
        s, d = plan.nodes[src], plan.nodes[dst]
        sources = s.addresses(6 if ":" in addr else 4)
        for node, dropped in walls:
            at_src, at_dst = node.ns == s.ns, node.ns == d.ns
            request = any(a in dropped for a in sources)
            reply = addr in dropped
            if not (request or reply):
                continue
            transit = not (at_src or at_dst) and on_path(src, node.name, dst)
            if (at_dst or transit) and request:
                return True
            if (at_src or transit) and reply:
                return True
        return False

    return [p for p in pairs if not blocked(*p)]


def _least_costs(adjacent: dict[str, list[tuple[str, float]]], src: str) -> dict[str, float]:
    """Least link-cost from src to every node (Dijkstra; a switch is a node whose ports
    cost their links' costs, as the routing plans them)."""
    import heapq

    best = {src: 0.0}
    queue = [(0.0, src)]
    while queue:
        here, node = heapq.heappop(queue)
        if here > best.get(node, INF):
            continue
        for peer, weight in adjacent.get(node, []):
            if here + weight < best.get(peer, INF):
                best[peer] = here + weight
                heapq.heappush(queue, (here + weight, peer))
    return best


INF = float("inf")


def _proof_inputs(
    plan: LabPlan,
) -> tuple[fibcheck.PromiseFn, list[tuple[str, str, str]]]:
    """The planned hop counts of every pair, and the echoes: every link, a sample of pairs."""
    promised = fibcheck.planned_hops(plan, list(plan.nodes))
    return promised, fibcheck.link_pairs(plan) + fibcheck.sample_pairs(plan, promised=promised)


def verify(
    plan: LabPlan, mode: str, timeout: float, prepared: Prepared | None = None
) -> CheckResult:
    """The check `up` runs: `all` pings every promised pair; where the FIBs decide alone
    `auto` proves every promised pair from them and `sample` every node's pairs toward
    SAMPLE_DESTINATIONS destinations per family; elsewhere `auto` pings all pairs up to
    AUTO_ALL_PAIRS_MAX nodes and `sample` a sample. prepared: prepare(plan, mode)."""
    prepared = prepared or prepare(plan, mode)
    if prepared.pairs is None:
        destinations = SAMPLE_DESTINATIONS if mode == "sample" else None
        return prove(plan, timeout, destinations, prepared)
    result = ping_pairs(plan, prepared.pairs, timeout)
    result.echoes = len(prepared.pairs)
    result.blocked = prepared.blocked
    return result


FORK_WALK_FROM = 50  # nodes: below, forking costs about what walking in a child saves


def read_kernels(plan: LabPlan) -> dict[str, fibcheck.Kernel]:
    """fibcheck.read_kernels, half of the nodes read by a forked child (reading is
    Python's work as much as the kernel's: two threads only contended for the GIL)."""
    names = list(plan.nodes)

    def theirs() -> dict[str, fibcheck.Kernel]:
        return fibcheck.read_kernels(plan, only=names[1::2])

    child = forked.start(theirs) if len(names) >= FORK_WALK_FROM else None
    if child is None:
        return fibcheck.read_kernels(plan)
    try:
        kernels = fibcheck.read_kernels(plan, only=names[0::2])
        kernels.update(child.result_or(theirs))
    finally:
        child.cancel()  # a no-op once its result was taken
    return kernels


SAMPLE_DESTINATIONS = 256  # per family: `check: sample` walks every node's FIB path to these


def prove(
    plan: LabPlan,
    timeout: float,
    destinations: int | None = None,
    prepared: Prepared | None = None,
) -> CheckResult:
    """Every link and a sample of pairs pinged (which also waits for carriers), then every
    promised pair walked through the FIBs the kernels hold (with `destinations`: every
    node's pairs toward that many destinations per family)."""

    start = time.perf_counter()
    if prepared is not None and prepared.promised is not None:
        promised, echoes = prepared.promised, prepared.echoes
    else:
        promised, echoes = _proof_inputs(plan)
    kernels = read_kernels(plan)  # first: reading a link applies its carrier

    # the walk is Python and numpy, the echoes mostly the kernel's work: on two cores the
    # walk goes to a forked child while this process pings
    def walk() -> fibcheck.Proof:
        return fibcheck.prove(plan, kernels, promised, destinations)

    walking = forked.start(walk) if len(plan.nodes) >= FORK_WALK_FROM else None
    try:
        pinged = ping_pairs(plan, echoes, timeout)
        proof = walking.result_or(walk) if walking else walk()
    finally:
        if walking:
            walking.cancel()  # a no-op once its result was taken
    reasons = dict(proof.reasons)
    for pair in pinged.failed:
        reasons.setdefault(pair, NO_REPLY)
    failed = sorted(set(pinged.failed) | set(proof.failed))
    return CheckResult(
        proof.pairs, failed, time.perf_counter() - start, "fib", len(echoes), reasons
    )


def check_pairs(plan: LabPlan, mode: str) -> list[tuple[str, str, str]]:
    """(source, target, address) pairs the lab's routing promises to connect."""
    hosts = plan.hosts()
    if plan.protocol == "none":  # neighbours only, on their link addresses
        return _neighbour_pairs(plan, mode)
    families = [f for f in (4, 6) if any(h.addresses(f) for h in hosts)]
    targets = {(h.name, f): plan.addr(h.name, f) for h in hosts for f in families if h.addresses(f)}
    if mode == "auto":
        mode = "all" if len(hosts) <= AUTO_ALL_PAIRS_MAX else "sample"
    rng = random.Random(plan.name)
    hops = _hop_counts(plan)
    reach = {4: default_ttl(plan, 4), 6: default_ttl(plan, 6)}
    pairs = []
    for src in hosts:
        # replies leave the target with its default TTL: pairs further apart cannot talk
        others = [
            h for h in hosts if h.name != src.name and hops[src.name][h.name] < max(reach.values())
        ]
        if mode == "sample" and len(others) > SAMPLE_TARGETS:
            others = rng.sample(others, SAMPLE_TARGETS)
        for dst in others:
            for f in families:
                if (dst.name, f) in targets and hops[src.name][dst.name] < reach[f]:
                    pairs.append((src.name, dst.name, targets[(dst.name, f)]))
    return pairs


def _neighbour_pairs(plan: LabPlan, mode: str) -> list[tuple[str, str, str]]:
    """Without routing, the hosts a host reaches: the far end of each of its wires, and
    every other host on a switched segment it is on (switch nodes, Linux or Open vSwitch,
    linked to each other make one segment), each at its addresses there. `sample` (and
    `auto` on a segment of more than AUTO_ALL_PAIRS_MAX hosts) pings SAMPLE_TARGETS of a
    segment's hosts from each."""
    switches = {n.name for n in plan.nodes.values() if n.kind == "switch"}
    fabric = DisjointSets(switches)
    for link in plan.links:
        if link.a in switches and link.b in switches:
            fabric.union(link.a, link.b)
    ports: dict[str, list[tuple[str, list[str]]]] = {}  # segment → (host, addresses)
    pairs = []
    for node in plan.hosts():
        for iface in node.ifaces:
            if iface.master:
                continue
            addrs = [a.split("/")[0] for a in iface.addrs]
            if iface.peer in switches:
                ports.setdefault(fabric.find(iface.peer), []).append((node.name, addrs))
                continue
            peer = plan.nodes[iface.peer]
            if peer.kind == "host":
                there = peer.iface(iface.peer_iface).addrs
                pairs += [(node.name, peer.name, a.split("/")[0]) for a in there]
    rng = random.Random(plan.name)
    for members in ports.values():
        hosts: dict[str, list[str]] = {}
        for name, addrs in members:
            hosts.setdefault(name, addrs)  # a host's first port on the segment
        sample = mode == "sample" or (mode == "auto" and len(hosts) > AUTO_ALL_PAIRS_MAX)
        for src in hosts:
            others = [h for h in hosts if h != src]
            if sample and len(others) > SAMPLE_TARGETS:
                others = rng.sample(others, SAMPLE_TARGETS)
            pairs += [(src, dst, a) for dst in others for a in hosts[dst]]
    return pairs


def default_ttl(plan: LabPlan, family: int) -> int:
    key = "net.ipv4.ip_default_ttl" if family == 4 else "net.ipv6.conf.all.hop_limit"
    return int(plan.sysctls.get(key, 64))


def _hop_counts(plan: LabPlan) -> dict[str, dict[str, float]]:
    """Router hops between hosts (a switched segment counts as one hop)."""
    planned_hops = fibcheck.planned_hops

    hosts = [h.name for h in plan.hosts()]
    rows = planned_hops(plan, hosts)(range(len(hosts)))
    return {
        a: dict(zip(hosts, map(float, row), strict=True))
        for a, row in zip(hosts, rows, strict=True)
    }


def ping_pairs(
    plan: LabPlan, pairs: list[tuple[str, str, str]], timeout: float, retry: float = 0.2
) -> CheckResult:
    start = time.perf_counter()
    sources = sorted({p[0] for p in pairs})
    if len(sources) > MAX_SOCKET_SOURCES:  # bounded file descriptors: groups of sources
        failed: list[tuple[str, str, str]] = []
        for first in range(0, len(sources), MAX_SOCKET_SOURCES):
            group = set(sources[first : first + MAX_SOCKET_SOURCES])
            part = [p for p in pairs if p[0] in group]
            failed += ping_pairs(plan, part, timeout, retry).failed
        return CheckResult(len(pairs), sorted(failed), time.perf_counter() - start)
    families = {6 if ":" in p[2] else 4 for p in pairs}

    def open_sockets() -> dict[tuple[str, int], socket.socket]:
        socks = {}
        for name in sources:
            with netns.entered(plan.nodes[name].ns):
                if 4 in families:
                    socks[(name, 4)] = socket.socket(
                        socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP
                    )
                if 6 in families:
                    socks[(name, 6)] = socket.socket(
                        socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6
                    )
        for (_name, fam), s in socks.items():
            s.setblocking(False)
            if fam == 4:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, MAX_TTL)
            else:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, MAX_TTL)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        return socks

    socks = netns.run_in_thread(open_sockets)
    ident = os.getpid() & 0xFFFF
    by_fd = {s.fileno(): (key, s) for key, s in socks.items()}
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    counters: dict[str, int] = {}
    outstanding: dict[tuple[str, int], tuple[str, str, str]] = {}
    for pair in pairs:  # sequence numbers count per source, so (source, seq) is unique
        seq = counters.get(pair[0], 0)
        counters[pair[0]] = seq + 1
        outstanding[(pair[0], seq & 0xFFFF)] = pair
    try:
        deadline = time.monotonic() + timeout
        while outstanding and time.monotonic() < deadline:
            # a burst must fit the per-CPU backlog (net.core.netdev_max_backlog, 1000) that
            # every veth hop goes through; a window of echoes at a time never overflows it
            todo = list(outstanding.items())
            for first in range(0, len(todo), WINDOW):
                chunk = todo[first : first + WINDOW]
                for (src, seq), (_src, _dst, addr) in chunk:
                    fam = 6 if ":" in addr else 4
                    with suppress(OSError):  # e.g. ENETUNREACH: stays outstanding, reported
                        socks[(src, fam)].sendto(_echo(fam, ident, seq), (addr, 0))
                window = {key for key, _ in chunk}
                _collect(by_fd, poller, outstanding, ident, retry, window)
                if time.monotonic() > deadline:
                    break
            retry = min(retry * 2, 1.0)
    finally:
        for s in socks.values():
            s.close()
    return CheckResult(len(pairs), sorted(outstanding.values()), time.perf_counter() - start)


def _echo(family: int, ident: int, seq: int) -> bytes:
    seq &= 0xFFFF
    if family == 6:
        return struct.pack("!BBHHH", 128, 0, 0, ident, seq) + b"netrig"
    header = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"netrig"
    csum = _checksum(header)
    return struct.pack("!BBHHH", 8, 0, csum, ident, seq) + b"netrig"


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def _collect(
    by_fd: dict[int, tuple[tuple[str, int], socket.socket]],
    poller: select.poll,
    outstanding: dict[tuple[str, int], tuple[str, str, str]],
    ident: int,
    wait: float,
    window: set[tuple[str, int]],
) -> None:
    """Read echo replies until the window is answered or `wait` seconds have passed."""
    deadline = time.monotonic() + wait
    while window & outstanding.keys():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        for fd, _ev in poller.poll(left * 1000):
            (src, fam), sock = by_fd[fd]
            while True:
                try:
                    data = sock.recv(2048)
                except BlockingIOError:
                    break
                if fam == 4:
                    data = data[(data[0] & 0x0F) * 4 :]
                    want_type = 0
                else:
                    want_type = 129
                if len(data) < 8:
                    continue
                kind, _code, _sum, rid, seq = struct.unpack_from("!BBHHH", data)
                if kind != want_type or rid != ident:
                    continue
                outstanding.pop((src, seq), None)
