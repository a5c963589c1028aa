"""The hops a packet takes, asked of each node's FIB the way the kernel forwards it.

At the source the lookup is an output lookup (as `connect()` does: first without a source
address to learn the preferred one, then with it and the ports); at every later node it is
an input lookup on the interface the packet arrives on, with the flow's addresses, protocol
and ports, so multipath hashing (L3 or L4 policy) picks the same next hop it would pick for
real traffic. Counting over many flows (source ports) shows how traffic spreads.
"""

from __future__ import annotations

import errno
import socket
import struct
from collections import Counter
from dataclasses import dataclass
from ipaddress import ip_address

from netrig.lab import netns, nlwire
from netrig.plan.model import LabPlan

MAX_HOPS = 64
FIRST_SPORT = 32768  # counted flows' first source port, unless one is given
IFA_ADDRESS, IFA_LOCAL = 1, 2
IPPROTO = {"tcp": socket.IPPROTO_TCP, "udp": socket.IPPROTO_UDP, "icmp": socket.IPPROTO_ICMP}


@dataclass(frozen=True)
class Hop:
    node: str
    out_iface: str | None  # None at the destination


@dataclass(frozen=True)
class Path:
    hops: tuple[Hop, ...]
    reached: bool
    error: str | None = None

    def nodes(self) -> list[str]:
        return [h.node for h in self.hops]

    def __str__(self) -> str:
        parts = [h.node + (f" ({h.out_iface})" if h.out_iface else "") for h in self.hops]
        text = " → ".join(parts)
        return text if self.reached else f"{text} ✘ {self.error or 'not reached'}"


class Tracer:
    """Holds one rtnetlink socket per visited node (opened inside it) for many lookups.

    A hop across a switch node is also checked at layer 2, which no FIB shows: both ends of
    the two links between the hop's nodes and the switch must be running, and the switch
    not among `stopped` (an Open vSwitch node whose daemons are not running forwards
    nothing, though its links stay up)."""

    def __init__(self, plan: LabPlan, stopped: frozenset[str] = frozenset()) -> None:
        self.plan = plan
        self.stopped = stopped
        self.sockets: dict[str, nlwire.RtnlSocket] = {}
        self.owner: dict[str, tuple[str, int]] = {}  # address → (node, ifindex)
        self.ifname: dict[tuple[str, int], str] = {}
        self.link_local: dict[tuple[str, int], set[bytes]] = {}  # (node, ifindex) → addresses
        # (node, oif, next node, iif) → why a switch between them forwards nothing, or None:
        # asked of the kernel once, not once per flow of `--count`
        self.segment_problem: dict[tuple[str, int, str, int], str | None] = {}
        for node in plan.nodes.values():
            for cidr in node.loopbacks:
                self.owner[cidr.split("/")[0]] = (node.name, 1)
            if node.bridge:
                self.ifname[(node.name, node.bridge.index)] = node.bridge.name
                for cidr in node.bridge.addrs:
                    self.owner[cidr.split("/")[0]] = (node.name, node.bridge.index)
            for iface in node.ifaces:
                self.ifname[(node.name, iface.index)] = iface.name
                for cidr in iface.addrs:
                    self.owner[cidr.split("/")[0]] = (node.name, iface.index)

    def close(self) -> None:
        for sock in self.sockets.values():
            sock.close()

    def __enter__(self) -> Tracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sock(self, node: str) -> nlwire.RtnlSocket:
        if node not in self.sockets:
            self.sockets[node] = netns.in_netns(self.plan.node(node).ns, nlwire.RtnlSocket)
        return self.sockets[node]

    def route_get(
        self,
        node: str,
        dst: str,
        src: str | None,
        iif: int | None,
        proto: int,
        sport: int,
        dport: int,
    ) -> tuple[int, dict[int, bytes]]:
        family = socket.AF_INET6 if ":" in dst else socket.AF_INET
        bits = 32 if family == socket.AF_INET else 128
        body = struct.pack("=BBBBBBBBI", family, bits, bits if src else 0, 0, 0, 0, 0, 0, 0)
        body += nlwire.attr(nlwire.RTA_DST, ip_address(dst).packed)
        if src:
            body += nlwire.attr(nlwire.RTA_SRC, ip_address(src).packed)
        if iif:
            body += nlwire.attr_u32(nlwire.RTA_IIF, iif)
        if family == socket.AF_INET6 and proto == socket.IPPROTO_ICMP:
            proto = socket.IPPROTO_ICMPV6  # `icmp` of an IPv6 flow
        body += nlwire.attr(nlwire.RTA_IP_PROTO, bytes([proto]))
        if proto in (socket.IPPROTO_TCP, socket.IPPROTO_UDP):
            body += nlwire.attr(nlwire.RTA_SPORT, struct.pack("!H", sport))
            body += nlwire.attr(nlwire.RTA_DPORT, struct.pack("!H", dport))
        replies = self._sock(node).request(nlwire.RTM_GETROUTE, 0, body)
        if not replies:
            raise OSError(0, "no answer")
        payload = replies[0][1]
        rtm_type = payload[7]
        return rtm_type, nlwire.parse_attrs(payload, 12)

    def trace(
        self,
        src: str,
        dst_addr: str,
        proto: str = "tcp",
        sport: int = 40000,
        dport: int = 5201,
        from_addr: str | None = None,
        iif: int | None = None,
    ) -> Path:
        """The hops from `src`; `iif`: the packet enters src on that interface (a trace
        that goes on from another host's part of a lab)."""
        p = IPPROTO[proto]
        hops: list[Hop] = []
        node = src
        flow_src = from_addr
        try:
            if flow_src is None:  # what connect() would choose as the source address
                _t, attrs = self.route_get(src, dst_addr, None, None, p, sport, dport)
                pref = attrs.get(nlwire.RTA_PREFSRC)
                flow_src = str(ip_address(pref)) if pref else None
            seen: dict[tuple[str, int | None], int] = {}  # lookup → its hop's position
            for _ in range(MAX_HOPS):
                if (node, iif) in seen:  # the same lookup again: it can only go round
                    loop = [h.node for h in hops[seen[(node, iif)] :]]
                    return Path(
                        tuple([*hops, Hop(node, None)]),
                        False,
                        "a routing loop: " + " → ".join([*loop, node]),
                    )
                seen[(node, iif)] = len(hops)
                rtm_type, attrs = self.route_get(node, dst_addr, flow_src, iif, p, sport, dport)
                if rtm_type == nlwire.RTN_LOCAL:
                    hops.append(Hop(node, None))
                    return Path(tuple(hops), True)
                oif = (
                    struct.unpack("=I", attrs[nlwire.RTA_OIF])[0] if nlwire.RTA_OIF in attrs else 0
                )
                gw_raw = attrs.get(nlwire.RTA_GATEWAY)
                nexthop = str(ip_address(gw_raw)) if gw_raw else dst_addr
                hops.append(Hop(node, self.ifname.get((node, oif), f"if{oif}")))
                nxt = self._next_node(node, oif, nexthop)
                if nxt is None and gw_raw is None:  # on-link (a switch's segment): no owner
                    return Path(tuple(hops), False, self._nobody_has(node, hops, dst_addr))
                if nxt is None:
                    return Path(tuple(hops), False, f"next hop {nexthop} is outside the lab")
                hop = (node, oif, *nxt)
                if hop not in self.segment_problem:
                    self.segment_problem[hop] = self._switched_segment_problem(*hop)
                broken = self.segment_problem[hop]
                if broken:
                    return Path(tuple(hops), False, broken)
                if gw_raw is None and not self._owns(nxt[0], dst_addr):
                    # on-link, and the node across does not have it: the packet never
                    # leaves (the kernel asks for the address and nobody answers); the
                    # peer's lookup had called it a martian coming back
                    return Path(tuple(hops), False, self._nobody_has(node, hops, dst_addr))
                node, iif = nxt
            return Path(tuple(hops), False, f"more than {MAX_HOPS} hops (a loop?)")
        except OSError as exc:
            said = exc.strerror or str(exc)
            if exc.errno == errno.EINVAL and iif is not None and flow_src is not None:
                said = self._martian(node, iif, flow_src)
            return Path(tuple([*hops, Hop(node, None)]), False, said)

    @staticmethod
    def _nobody_has(node: str, hops: list[Hop], dst_addr: str) -> str:
        return (f"{dst_addr} is on {node}'s link {hops[-1].out_iface}, where no node has it: "
                f"{node} asks for it (ARP/ND) and gets no answer")

    def _owns(self, node: str, addr: str) -> bool:
        """addr is one of node's own addresses (its kernel's local table says so)."""
        return self.route_get(node, addr, None, None, IPPROTO["icmp"], 0, 0)[0] == nlwire.RTN_LOCAL

    def _martian(self, node: str, iif: int, flow_src: str) -> str:
        """Why an input lookup is refused (EINVAL): the kernel drops a packet whose source
        is one of the node's own addresses (back at the sender, sent back by the hop before
        it: a cut next to the source) or one it cannot take from that interface."""
        port = self.ifname.get((node, iif), f"if{iif}")
        if self.owner.get(flow_src, ("",))[0] == node:
            return (
                f"{node} drops it: its own address {flow_src} comes back in on {port} "
                "(a martian: the hop before sends the traffic back)"
            )
        return f"{node} drops it as a martian: source {flow_src} on {port} (Invalid argument)"

    def _next_node(self, node: str, oif: int, nexthop: str) -> tuple[str, int] | None:
        """The node (and its ingress ifindex) the packet reaches next."""
        plan_node = self.plan.node(node)
        for iface in plan_node.ifaces:
            if iface.index == oif and not iface.master:
                peer = self.plan.node(iface.peer)
                if peer.kind == "host" and not peer.bridge:
                    return peer.name, peer.iface(iface.peer_iface).index
        if nexthop in self.owner:
            return self.owner[nexthop]
        if ip_address(nexthop).is_link_local:  # e.g. BGP unnumbered on a shared segment
            return self._link_local_owner(node, oif, nexthop)
        return None

    def _switched_segment_problem(self, node: str, oif: int, nxt: str, iif: int) -> str | None:
        """Why a frame from node's `oif` to nxt's `iif` through a switch node would not get
        there (a link of the switch down, the switch stopped), or None. Hops between
        routers on a direct link need no such check: a link down takes its routes along."""
        ends = []
        for owner, index in ((node, oif), (nxt, iif)):
            iface = next((i for i in self.plan.node(owner).ifaces if i.index == index), None)
            if iface is None or self.plan.node(iface.peer).kind != "switch":
                return None  # not a switch port at both ends: the FIB said it all
            ends.append((owner, iface))
        switches = {iface.peer for _owner, iface in ends}
        stopped = sorted(switches & self.stopped)
        if stopped:
            return f"switch {stopped[0]} is stopped: it forwards nothing"
        for owner, iface in ends:
            peer = self.plan.node(iface.peer)
            for name, index in ((owner, iface.index), (peer.name, peer.iface(iface.peer_iface).index)):
                if not self._running(name, index):
                    return f"{name}:{self.ifname.get((name, index), index)} is down"
        return None

    def _running(self, node: str, index: int) -> bool:
        """Is this interface of node up and running (its carrier on)?"""
        from netrig.lab.settle import running_ports

        return index in running_ports(self._sock(node), [index])

    def _link_local_owner(self, node: str, oif: int, addr: str) -> tuple[str, int] | None:
        """Which other router on the segment behind node's `oif` has this link-local
        address (the kernel makes those; the plan does not know them): asked of each."""
        port = self.ifname.get((node, oif))
        wanted = ip_address(addr).packed
        for net in self.plan.networks:
            if (node, port) not in net.members:
                continue
            for member, member_port in net.members:
                if member == node:
                    continue
                index = next(i for (n, i), name in self.ifname.items()
                             if n == member and name == member_port)  # fmt: skip
                if wanted in self._addresses(member, index):
                    return member, index
        return None

    def _addresses(self, node: str, index: int) -> set[bytes]:
        """The IPv6 addresses of one interface of node, as its kernel has them."""
        if (node, index) not in self.link_local:
            body = struct.pack("=BBBBi", socket.AF_INET6, 0, 0, 0, index)
            found = set()
            replies = self._sock(node).request(nlwire.RTM_GETADDR, nlwire.NLM_F_DUMP, body)
            for _t, payload in replies:
                if struct.unpack_from("=BBBBi", payload)[4] != index:
                    continue
                attrs = nlwire.parse_attrs(payload, 8)
                raw = attrs.get(IFA_ADDRESS) or attrs.get(IFA_LOCAL)
                if raw:
                    found.add(raw)
            self.link_local[(node, index)] = found
        return self.link_local[(node, index)]


def count_paths(
    plan: LabPlan,
    src: str,
    dst_addr: str,
    flows: int,
    proto: str = "tcp",
    dport: int = 5201,
    first_sport: int = FIRST_SPORT,
    stopped: frozenset[str] = frozenset(),
) -> Counter[Path]:
    """How many of `flows` flows (source ports first_sport, first_sport + 1, …) take each
    path (`stopped`: see Tracer). ValueError if those ports run past 65535."""
    if not 1 <= first_sport <= first_sport + flows - 1 <= 65535:
        raise ValueError(f"{flows} flows from source port {first_sport} go past port 65535")
    counts: Counter[Path] = Counter()
    with Tracer(plan, stopped) as tracer:
        for i in range(flows):
            counts[tracer.trace(src, dst_addr, proto, first_sport + i, dport)] += 1
    return counts
