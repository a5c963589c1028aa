"""From a lab graph to a plan: names, interface indexes, subnets and addresses, routes.

Address layout (per family, inside the pool): the first half holds one loopback per host
node, numbered by node order (n1 → .1); the second half holds link subnets, all /31
(/127) blocks first in link order, then larger blocks (segments, links with aliases),
each aligned to its size. Contiguous numbering is what lets routes aggregate: on a ring,
every node reaches half the lab through each neighbour in a handful of prefixes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_interface, ip_network
from typing import Any, cast

from netrig.base import forked
from netrig.base.disjoint import DisjointSets
from netrig.model.load import GraphLink, LabGraph, Problem, SpecError
from netrig.plan.firewall import resolve as resolve_firewalls
from netrig.plan.model import (
    BridgePlan,
    IfacePlan,
    LabPlan,
    LinkPlan,
    NetworkPlan,
    NodePlan,
    OvsPlan,
)
from netrig.plan.prefixes import PlainRoutes, plain_routes, route_plans
from netrig.plan.services import plan_services

BASE_SYSCTLS = {
    "net.ipv4.ip_forward": "1",
    "net.ipv6.conf.all.forwarding": "1",
    "net.ipv6.conf.all.accept_dad": "0",
    "net.ipv6.conf.default.accept_dad": "0",
    "net.ipv4.conf.all.rp_filter": "0",
    "net.ipv4.conf.default.rp_filter": "0",
}
MAX_NS_NAME = 64
STATIC_NEIGHBOR_MAX = 64


@dataclass
class _Segment:
    """A set of ports that share one subnet: a p2p link, a switch fabric, or the whole lab."""

    members: list[tuple[str, str]]  # (host node, iface or bridge name)
    cost: int
    aliases: int = 0
    explicit: dict[tuple[str, str], list[str]] | None = None
    broadcast: bool = False  # a mesh's one subnet: never a /31, which has no broadcast


class _Pool:
    """Hands out aligned blocks of a power-of-two size from one address range."""

    def __init__(self, net: IPv4Network | IPv6Network) -> None:
        self.net = net
        self.next = int(net.network_address)
        self.end = int(net.broadcast_address) + 1

    def take(self, size: int) -> int:
        start = -(-self.next // size) * size
        if start + size > self.end:
            raise OverflowError
        self.next = start + size
        return start


def build_plan(graph: LabGraph, defer_routes: bool = False) -> LabPlan:
    """The plan of a lab. defer_routes: a protocol that plans routes (static, ecmp) plans
    them in a forked child, which `plan.finish_routes()` waits for (`netrig up` builds the
    namespaces and links meanwhile: a 10,000-node grid's 20 s of planning overlap them)."""
    spec = graph.spec
    proto = graph.protocol
    lab = spec.name
    problems: list[Problem] = []
    nodes: dict[str, NodePlan] = {}
    for i, spec_node in enumerate(graph.nodes.values(), start=1):
        ns = f"{lab}-{spec_node.name}"
        if len(ns) > MAX_NS_NAME:
            where = graph.where(graph.node_paths[spec_node.name])
            problems.append(Problem(where, f"namespace name {ns!r} too long"))
        nodes[spec_node.name] = NodePlan(spec_node.name, spec_node.kind, ns, i)
        # written ones first: they stand for the node (lab.addr), as its pool loopback would
        nodes[spec_node.name].loopbacks = [str(cidr) for cidr in spec_node.loopbacks]
    _node_programs(graph, nodes, problems)
    if problems:
        raise SpecError(problems)

    links: list[LinkPlan] = []
    for link_id, link in enumerate(graph.links):
        a_if = _add_iface(nodes[link.a], link.a_ifname, link_id, link.b, graph, link, problems)
        b_if = _add_iface(nodes[link.b], link.b_ifname, link_id, link.a, graph, link, problems)
        a_if.peer_iface, b_if.peer_iface = b_if.name, a_if.name
        at = link.attrs
        _check_burst(at.burst, at.rate, at.mtu, graph.where(link.path), problems)
        links.append(
            LinkPlan(
                link.a,
                a_if.name,
                link.b,
                b_if.name,
                at.mtu,
                at.rate,
                at.burst,
                at.delay,
                at.jitter,
                at.loss,
                at.aliases,
                at.cost,
            )
        )
    _check_unique_ifnames(nodes, graph, problems)
    if problems:
        raise SpecError(problems)

    # bridges: switch nodes always; every connected host when the protocol is pure L2
    bridged_hosts = proto.bridge_per_node
    stp_auto = _has_cycle(graph) if bridged_hosts else False
    for node in nodes.values():
        spec_node = graph.nodes[node.name]
        if node.kind == "switch" and spec_node.switch == "ovs":
            node.ovs = OvsPlan("br0", spec_node.dpid or f"{node.index:016x}", spec_node.stp,
                               spec_node.controller)  # fmt: skip
            continue
        wants_bridge = node.kind == "switch" or (bridged_hosts and node.ifaces)
        if not wants_bridge:
            continue
        stp = spec_node.stp if node.kind == "switch" else _stp_option(proto, stp_auto)
        node.bridge = BridgePlan("br0", 2 + len(node.ifaces), stp)
        for iface in node.ifaces:
            iface.master = "br0"

    _check_ovs(graph, nodes, problems)
    if problems:
        raise SpecError(problems)

    mode = proto.addressing or spec.addressing.mode  # a protocol may force its mode
    segments = _segments(nodes, links, graph, bridged_hosts, mode)
    networks = _assign_addresses(graph, nodes, segments, problems)
    _check_link_ends(graph, nodes, links, problems)
    links_written = any(g.a_addr or g.b_addr for g in graph.links)
    if not problems and (links_written or any(n.loopbacks for n in graph.nodes.values())):
        _check_written_addresses(graph, nodes, networks, problems)
        if not problems and (proto.plans_routes() or proto.runs_daemons()):
            _check_segments_apart(graph, nodes, networks, problems)
    resolve_firewalls(graph, nodes, problems)
    if problems:
        raise SpecError(problems)

    _assign_macs(lab, nodes)
    _static_neighbors(nodes, networks)
    sysctls = dict(BASE_SYSCTLS)
    sysctls.update(proto.sysctls())
    written = cast("dict[str, str]", spec.sysctls)  # strings once validated (_net_sysctls)
    for key, value in written.items():
        # the file's own would win, silently: runs labelled `hash: l4` hashed by l3
        theirs = proto.sysctls().get(key)
        if theirs is not None and theirs != value:
            problems.append(Problem(graph.where(("sysctls", key)), (
                f"sysctl {key}: {value} contradicts routing {proto.name}, which sets it to "
                f"{theirs} for its options; set it through `routing:` (or leave it out)")))
    if problems:
        raise SpecError(problems)
    sysctls.update(written)
    plan = LabPlan(
        name=lab,
        protocol=proto.name,
        routing_options=proto.options.model_dump(),
        nodes=nodes,
        links=links,
        networks=networks,
        sysctls=sysctls,
        reachability=spec.check.reachability,
        check_timeout=spec.check.timeout,
        private_run=proto.private_run,
        routing_daemons=proto.runs_daemons(),
        pools=[str(p) for p in (spec.addressing.ipv4, spec.addressing.ipv6) if p is not None],
    )
    if not (defer_routes and proto.plans_routes() and _routes_in_child(plan, proto)):
        for name, routes in proto.routes(plan).items():
            plan.nodes[name].routes = routes
    plan_services(graph, plan)  # after addresses: backends and VIPs are checked against them
    return plan


IPV6_MIN_MTU = 1280  # below it the kernel turns IPv6 off on the interface (RFC 8200)


def _check_link_ends(
    graph: LabGraph, nodes: dict[str, NodePlan], links: list[LinkPlan], problems: list[Problem]
) -> None:
    """What the kernel would refuse at build time, said here at the link's line: an IPv6
    address on a link whose MTU is below IPv6's minimum (EINVAL after a 10 s wait), and one
    address on both ends (the ends cannot reach each other). The first of each, with a count."""
    small: list[int] = []
    same: list[tuple[int, str]] = []
    for k, link in enumerate(links):
        a, b = nodes[link.a].iface(link.a_iface), nodes[link.b].iface(link.b_iface)
        if link.mtu and link.mtu < IPV6_MIN_MTU and any(":" in x for x in a.addrs + b.addrs):
            small.append(k)
        shared = {x.split("/")[0] for x in a.addrs} & {x.split("/")[0] for x in b.addrs}
        if shared:
            same.append((k, min(shared)))

    for k, link in enumerate(links):
        glink = graph.links[k]
        for node, given in ((link.a, glink.a_addr), (link.b, glink.b_addr)):
            problem = _written_address_problem(nodes[node].kind, node, given or [])
            if problem:
                problems.append(Problem(graph.where(glink.path), f"link {link.a}–{link.b}: "
                                                                  f"{problem}"))  # fmt: skip
                return

    def more(n: int) -> str:
        return f" (and {n - 1} more links)" if n > 1 else ""

    if small:
        link = links[small[0]]
        problems.append(
            Problem(
                graph.where(graph.links[small[0]].path),
                f"link {link.a}–{link.b}: mtu {link.mtu} is below IPv6's minimum "
                f"({IPV6_MIN_MTU}), where the kernel turns IPv6 off, yet the link has IPv6 "
                f"addresses{more(len(small))}; raise the mtu or route IPv4 only "
                "(addressing: {ipv6: false})",
            )
        )
    if same:
        k, addr = same[0]
        problems.append(
            Problem(
                graph.where(graph.links[k].path),
                f"link {links[k].a}–{links[k].b}: both ends have address {addr}; "
                f"each end needs its own{more(len(same))}",
            )
        )


def _written_address_problem(kind: str, node: str, given: list[Any]) -> str | None:
    """What is wrong with addresses the file gives one end of a link: a switch's port holds
    none (they had been dropped without a word), and an IPv4 subnet's network or broadcast
    address is no interface's (the kernel takes it, and nothing answers it as one would)."""
    if given and kind == "switch":
        return (f"{node} is a switch, whose ports hold no address ({', '.join(map(str, given))} "
                "would be dropped): give it to a host of the segment, or make the node a host")
    for cidr in given:
        iface = ip_interface(str(cidr))
        net = iface.network
        if iface.version == 4 and net.prefixlen <= 30:
            if iface.ip == net.network_address:
                return f"{cidr} is the network address of {net}, not an interface's"
            if iface.ip == net.broadcast_address:
                return f"{cidr} is the broadcast address of {net}, not an interface's"
    return None


def _check_written_addresses(
    graph: LabGraph,
    nodes: dict[str, NodePlan],
    networks: list[NetworkPlan],
    problems: list[Problem],
) -> None:
    """Addresses written in the file against every other: one address on two interfaces
    (a loopback included; netrig's pool handed out an address a written link held), and a
    written subnet that overlaps another subnet of the same node (EEXIST for the second's
    route at build time). Allowed: link-local addresses (fe80::1 on every link is usual),
    one subnet on a node's several ports of one segment (batman, shared-subnet), and one
    subnet on two nodes (as behind a bridge made by exec lines). Only where the file writes
    addresses: the pool alone gives none of these."""
    owner: dict[str, str] = {}
    where: dict[str, str] = {}  # interface → where its link is in the file
    written: set[str] = set()  # interfaces whose addresses the file wrote
    for node in nodes.values():
        for cidr in node.loopbacks:
            ip, label = cidr.split("/")[0], f"{node.name}:lo"
            other = owner.setdefault(ip, label)
            where[label] = graph.where(graph.node_paths[node.name])
            if cidr in {str(c) for c in graph.nodes[node.name].loopbacks}:  # the file wrote it
                written.add(label)
            if other != label:  # one on two nodes: where the file wrote it
                at = where[other] if other in written and label not in written else where[label]
                problems.append(Problem(at, f"{label} and {other} both have address {ip}"))
                return
    for node in nodes.values():
        for iface in node.ifaces:
            label = f"{node.name}:{iface.name}"
            glink = graph.links[iface.link]
            where[label] = graph.where(glink.path)
            if glink.a_addr or glink.b_addr:
                written.add(label)
            for cidr in iface.addrs:
                ip = cidr.split("/")[0]
                if _link_local(ip):
                    continue
                other = owner.setdefault(ip, label)  # its link's far end: _check_link_ends'
                if other not in (label, f"{iface.peer}:{iface.peer_iface}"):
                    at = where[other] if other in written and label not in written else where[label]
                    problems.append(Problem(at, f"{label} and {other} both have address {ip}"))
                    return
    segment = {f"{n}:{port}": k for k, net in enumerate(networks) for n, port in net.members}
    for node in nodes.values():
        spans = []
        for iface in node.ifaces:
            label = f"{node.name}:{iface.name}"
            for cidr in iface.addrs:
                if not _link_local(cidr.split("/")[0]):
                    block = ip_network(cidr, strict=False)
                    spans.append((block.version, int(block.network_address),
                                  int(block.broadcast_address), label, str(block)))  # fmt: skip
        spans.sort()
        active: list[tuple[int, int, str, str]] = []  # (version, last address, port, prefix)
        for version, lo, hi, b, pb in spans:  # a sweep: each against those still open
            active = [x for x in active if x[0] != version or x[1] >= lo]
            for va, _hi, a, pa in active:
                if va == version and a != b and segment.get(a) != segment.get(b) and (
                    a in written or b in written
                ):
                    at = a if a in written and b not in written else b
                    problems.append(Problem(where[at], f"{b}'s subnet {pb} overlaps {a}'s "
                                                       f"{pa}: one node's links need subnets "
                                                       "of their own"))  # fmt: skip
                    return
            active.append((version, hi, b, pb))


def _check_segments_apart(
    graph: LabGraph,
    nodes: dict[str, NodePlan],
    networks: list[NetworkPlan],
    problems: list[Problem],
) -> None:
    """Under a routing that connects subnets (static routes, a routing daemon), two
    segments whose subnets overlap, on any nodes: every node then has a route to the one
    beside its own connected subnet (`up` failed with EEXIST), or a daemon routes one of
    them nowhere. Said at the later link's line (the one whose addresses the file wrote)."""
    segment = {f"{n}:{port}": k for k, net in enumerate(networks) for n, port in net.members}
    spans = []  # (version, first, last, link, segment, prefix)
    for node in nodes.values():
        for iface in node.ifaces:
            port = f"{node.name}:{iface.master or iface.name}"
            for cidr in iface.addrs:
                if _link_local(cidr.split("/")[0]):
                    continue
                block = ip_network(cidr, strict=False)
                spans.append((block.version, int(block.network_address),
                              int(block.broadcast_address), iface.link,
                              segment.get(port, -1 - iface.link), str(block)))  # fmt: skip
    spans.sort()
    active: list[tuple[int, int, int, int, str]] = []  # (version, last, link, segment, prefix)
    for version, lo, hi, link, seg, prefix in spans:
        active = [x for x in active if x[0] == version and x[1] >= lo]
        for _v, _hi, other, other_seg, other_prefix in active:
            if other_seg == seg:
                continue
            first, second = sorted((other, link))
            written = [k for k in (first, second) if graph.links[k].a_addr or graph.links[k].b_addr]
            if not written:
                continue
            at = second if second in written else first
            p1, p2 = (other_prefix, prefix) if other == first else (prefix, other_prefix)
            a, b = graph.links[first], graph.links[second]
            problems.append(Problem(graph.where(graph.links[at].path), (
                f"link {b.a}–{b.b}'s subnet {p2} overlaps {p1} of link {a.a}–{a.b}: "
                f"under routing {graph.protocol.name} each link (or switched segment) needs "
                "a subnet of its own")))  # fmt: skip
            return
        active.append((version, hi, link, seg, prefix))


def _link_local(ip: str) -> bool:
    """fe80::/10: the same address on every link of a node is usual, and routes none."""
    return ip[:3].lower() in ("fe8", "fe9", "fea", "feb") and ":" in ip


def _routes_in_child(plan: LabPlan, proto: Any) -> bool:
    """Start planning the routes in a forked child (False: forking is not safe here). The
    child plans from the plan as it is now; what build_plan adds after (services) does not
    change routes. A child that fails has its work done here when the routes are asked for."""

    def plain() -> PlainRoutes:
        return plain_routes(proto.routes(plan))

    pending = forked.start(plain)
    if pending is None:
        return False
    plan.routes_later(lambda: route_plans(pending.result_or(plain)), pending.cancel)
    return True


def _node_programs(graph: LabGraph, nodes: dict[str, NodePlan], problems: list[Problem]) -> None:
    """exec lines split into argv, cmd, binds, and the namespace a `netns:` node runs in."""
    import shlex

    for name, plan in nodes.items():
        spec_node = graph.nodes[name]
        path = graph.node_paths[name]
        for i, line in enumerate(spec_node.exec):
            try:
                argv = shlex.split(line)
            except ValueError as exc:
                problems.append(Problem(graph.where((*path, "exec", i)), f"exec: {exc}"))
                continue
            if argv:
                plan.exec.append(argv)
        if spec_node.cmd:
            try:
                plan.cmd = shlex.split(spec_node.cmd) or None
            except ValueError as exc:
                problems.append(Problem(graph.where((*path, "cmd")), f"cmd: {exc}"))
        for bind in spec_node.binds:
            host, inside, *mode = bind.split(":")
            plan.binds.append((host, inside, mode == ["ro"]))
        if spec_node.netns:
            plan.shares = spec_node.netns
            plan.ns = f"{graph.spec.name}-{spec_node.netns}"
        kinds = [next(iter(s), "") if isinstance(s, dict) else s for s in spec_node.services]
        services = graph.catalog.services if kinds else None  # the plugins named, no other
        wants_run = any(
            getattr(services.get(k), "private_run", False)
            for k in kinds
            if services is not None and isinstance(k, str)
        )
        plan.private_run = bool(plan.exec or plan.cmd or plan.binds or plan.shares or wants_run)


def _assign_macs(lab: str, nodes: dict[str, NodePlan]) -> None:
    """Locally administered MACs from (lab, node, ifindex): stable across runs."""
    tag = zlib.crc32(lab.encode()) & 0xFF
    for node in nodes.values():
        hi, lo = node.index >> 8 & 0xFF, node.index & 0xFF
        for iface in node.ifaces:
            iface.mac = (
                f"02:{tag:02x}:{hi:02x}:{lo:02x}:{iface.index >> 8:02x}:{iface.index & 0xFF:02x}"
            )
        if node.bridge:
            idx = node.bridge.index
            node.bridge.mac = f"02:{tag:02x}:{hi:02x}:{lo:02x}:{idx >> 8:02x}:{idx & 0xFF:02x}"


def _static_neighbors(nodes: dict[str, NodePlan], networks: list[NetworkPlan]) -> None:
    """Each port learns the addresses and MACs of the ports on its wire or switched segment
    (not of every port of a shared-subnet mesh); segments with more than
    STATIC_NEIGHBOR_MAX members are left to ARP/ND."""

    def port(node: str, name: str) -> tuple[int, str, list[str]]:
        plan = nodes[node]
        if plan.bridge and name == plan.bridge.name:
            return plan.bridge.index, plan.bridge.mac, plan.bridge.addrs
        iface = plan.iface(name)
        return iface.index, iface.mac, iface.addrs

    for net in networks:
        members = set(net.members)
        for node, name in net.members:
            plan = nodes[node]
            index = port(node, name)[0]
            bridged = plan.bridge is not None and name == plan.bridge.name
            if not bridged and nodes[plan.iface(name).peer].kind == "host":
                iface = plan.iface(name)
                peers = (
                    [(iface.peer, iface.peer_iface)]
                    if (iface.peer, iface.peer_iface) in members
                    else []
                )
            elif len(members) <= STATIC_NEIGHBOR_MAX:
                peers = [m for m in net.members if m != (node, name)]
            else:
                peers = []
            for other, other_name in peers:
                _idx, mac, addrs = port(other, other_name)
                plan.neighbors += [(index, a.split("/")[0], mac) for a in addrs]


def _check_ovs(graph: LabGraph, nodes: dict[str, NodePlan], problems: list[Problem]) -> None:
    """Open vSwitch nodes: datapath IDs unique in the lab, and Open vSwitch installed."""
    owners: dict[str, str] = {}
    for node in nodes.values():
        if node.ovs is None:
            continue
        path = graph.node_paths[node.name]
        given = graph.nodes[node.name].dpid is not None
        other = owners.setdefault(node.ovs.dpid, node.name)
        if other != node.name:
            how = "" if given else " (its default, from its position in the node list)"
            problems.append(
                Problem(
                    graph.where((*path, "dpid") if given else path),
                    f"dpid {node.ovs.dpid} of {node.name}{how} is also {other}'s; "
                    "each switch needs its own dpid",
                )
            )


def _stp_option(proto: object, auto: bool) -> bool:
    value = getattr(getattr(proto, "options", None), "stp", "auto")
    return auto if value == "auto" else bool(value)


def _add_iface(
    node: NodePlan,
    ifname: str | None,
    link_id: int,
    peer: str,
    graph: LabGraph,
    link: GraphLink,
    problems: list[Problem],
) -> IfacePlan:
    name = ifname or f"eth{len(node.ifaces)}"
    iface = IfacePlan(name, 2 + len(node.ifaces), link_id, peer, "")
    node.ifaces.append(iface)
    return iface


def _check_burst(
    burst: int | None, rate: int | None, mtu: int | None, where: str, problems: list[Problem]
) -> None:
    """A token bucket smaller than a frame never sends one (`burst: 100` passed `up`'s
    check, yet every full-size packet was dropped); a burst needs a rate to be a bucket."""
    if burst is None:
        return
    frame = (mtu or 1500) + 14  # the Ethernet header tbf counts
    if rate is None:
        problems.append(Problem(where, f"burst {burst} without a rate: a burst sizes the "
                                       "token bucket of `rate:`"))  # fmt: skip
    elif burst < frame:
        problems.append(Problem(where, f"burst {burst} bytes is less than one full frame "
                                       f"({frame} bytes with MTU {mtu or 1500}): such packets "
                                       f"could never be sent; give at least {frame}"))  # fmt: skip


def _check_unique_ifnames(
    nodes: dict[str, NodePlan], graph: LabGraph, problems: list[Problem]
) -> None:
    for node in nodes.values():
        seen: set[str] = set()
        for iface in node.ifaces:
            if iface.name in seen or iface.name in ("lo", "br0"):
                link = graph.links[iface.link]
                said = (
                    f"interface name {iface.name!r} is used twice on node {node.name!r}"
                    if iface.name in seen
                    else f"interface name {iface.name!r} on node {node.name!r} is the node's "
                    + ("loopback" if iface.name == "lo" else "bridge's (a switch, or a host "
                       "that bridges)") + "; a link needs another name"
                )  # fmt: skip
                problems.append(Problem(graph.where(link.path), said))
            seen.add(iface.name)


def _has_cycle(graph: LabGraph) -> bool:
    sets = DisjointSets(graph.nodes)
    return not all(sets.union(link.a, link.b) for link in graph.links)


def _segments(
    nodes: dict[str, NodePlan],
    links: list[LinkPlan],
    graph: LabGraph,
    bridged_hosts: bool,
    mode: str,
) -> list[_Segment]:
    """Group host ports into subnets: per link, per switch fabric, or one for all."""
    if bridged_hosts:
        members = [(n.name, "br0") for n in nodes.values() if n.bridge and n.kind == "host"]
        return [_Segment(members, 1)]
    segments: list[_Segment] = []
    # switch fabrics: connected components of switch–switch links
    parent = {n: n for n, p in nodes.items() if p.kind == "switch"}

    def find(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for link in links:
        if link.a in parent and link.b in parent:
            parent[find(link.a)] = find(link.b)
    fabric: dict[str, _Segment] = {}
    shared: list[tuple[str, str]] = []
    for link_id, link in enumerate(links):
        glink = graph.links[link_id]
        ends = [(link.a, link.a_iface, glink.a_addr), (link.b, link.b_iface, glink.b_addr)]
        host_ends = [e for e in ends if nodes[e[0]].kind == "host"]
        switch_ends = [e for e in ends if nodes[e[0]].kind == "switch"]
        if not host_ends:
            continue
        explicit = {(n, i): [str(a) for a in addrs] for n, i, addrs in host_ends if addrs}
        if switch_ends:
            root = find(switch_ends[0][0])
            seg = fabric.setdefault(root, _Segment([], link.cost, 0, {}))
            seg.members.append((host_ends[0][0], host_ends[0][1]))
            seg.aliases = max(seg.aliases, link.aliases)
            assert seg.explicit is not None
            seg.explicit.update(explicit)
        elif mode == "shared-subnet":
            shared += [(n, i) for n, i, _ in host_ends]
        else:
            segments.append(
                _Segment(
                    [(n, i) for n, i, _ in host_ends], link.cost, link.aliases, explicit or None
                )
            )
    if shared:
        segments.append(_Segment(shared, 1, broadcast=True))
    segments += [s for s in fabric.values() if s.members]
    return segments


MAX_ADDRESSES = 1_000_000  # interface addresses in one lab, aliases included


def _assign_addresses(
    graph: LabGraph,
    nodes: dict[str, NodePlan],
    segments: list[_Segment],
    problems: list[Problem],
) -> list[NetworkPlan]:
    addressing = graph.spec.addressing
    routed = graph.protocol.families  # a family the protocol cannot route gets no addresses
    families = [
        p for p in (addressing.ipv4, addressing.ipv6) if p is not None and p.version in routed
    ]
    if not families:
        problems.append(
            Problem(
                graph.where(("addressing",)),
                f"routing {graph.protocol.name!r} routes only "
                + " and ".join(f"IPv{f}" for f in routed)
                + ", which this file turns off",
            )
        )
    networks = [NetworkPlan([], list(seg.members), seg.cost) for seg in segments]
    hosts = [n for n in nodes.values() if n.kind == "host" and not n.shares]
    auto = addressing.auto
    ports = sum(len(seg.members) * (1 + seg.aliases) for seg in segments if not seg.explicit)
    # counted before any is made (a 100x100 grid with aliases: 1024 took 7 min and 3.6 GB
    # to be refused for its IPv4 pool, while IPv6 went on)
    if auto and ports * len(families) > MAX_ADDRESSES:
        most = max(seg.aliases for seg in segments)
        problems.append(
            Problem(
                graph.where(("addressing",)),
                f"{ports * len(families):,} interface addresses"
                + (f" ({most} aliases on a link)" if most else "")
                + f": a lab has at most {MAX_ADDRESSES:,}; give fewer aliases or links",
            )
        )
        return networks
    for pool in families:
        loop_half, link_half = pool.subnets(prefixlen_diff=1)
        v4 = pool.version == 4
        host_bits = 32 if v4 else 128
        if auto and addressing.loopbacks and not graph.protocol.bridge_per_node:
            if len(hosts) + 1 > loop_half.num_addresses:
                problems.append(
                    Problem(
                        graph.where(("addressing",)),
                        f"address pool {pool} too small for {len(hosts)} loopbacks: they "
                        f"take its first half, {loop_half} ({loop_half.num_addresses - 1} "
                        "usable), links the second; give a larger pool, or "
                        "addressing: {loopbacks: false}",
                    )
                )
                continue
            base = int(loop_half.network_address)
            for host in hosts:
                host.loopbacks.append(f"{ip_address(base + host.index)}/{host_bits}")
        blocks = _Pool(link_half)
        order = sorted(range(len(segments)), key=lambda k: _block_size(segments[k], v4) != 2)
        for k in order:
            seg = segments[k]
            if seg.explicit and _written_in(seg, pool.version):
                _explicit_segment(graph, nodes, seg, networks[k], pool.version, problems, auto)
                continue
            # a link whose file gives addresses of the other family only gets this one's
            # from the pool, as any link (left without, a node's IPv6 loopback was routed
            # over it: a loop, and `up` failed its check after 10 s)
            if not auto:
                continue
            size = _block_size(seg, v4)
            try:
                start = blocks.take(size)
            except OverflowError:
                other = "ipv4: false" if v4 else "ipv6: false"  # the family that fits
                problems.append(
                    Problem(
                        graph.where(("addressing",)),
                        f"address pool {pool} too small for the lab's {len(segments):,} links "
                        f"and segments: they take its second half, {link_half} (a link a "
                        f"/{host_bits - 1}); give a larger pool, or route the other family "
                        f"only (addressing: {{{other}}})",
                    )
                )
                break
            plen = host_bits - (size.bit_length() - 1)
            networks[k].prefixes.append(f"{ip_address(start)}/{plen}")
            first = start if size == 2 else start + 1
            addrs = [ip_address(first + j) for j in range(len(seg.members) * (1 + seg.aliases))]
            cursor = 0
            for node_name, iface_name in seg.members:  # primaries in member order
                nodes[node_name].port_addrs(iface_name).append(f"{addrs[cursor]}/{plen}")
                cursor += 1
            for _ in range(seg.aliases):
                for node_name, iface_name in seg.members:
                    nodes[node_name].port_addrs(iface_name).append(f"{addrs[cursor]}/{plen}")
                    cursor += 1
    return networks


def _written_in(seg: _Segment, version: int) -> bool:
    """The file gives some port of the segment an address of this IP version."""
    assert seg.explicit is not None
    return any(
        ip_network(cidr, strict=False).version == version
        for given in seg.explicit.values()
        for cidr in given
    )


def _block_size(seg: _Segment, v4: bool) -> int:
    count = len(seg.members) * (1 + seg.aliases)
    if count <= 2 and not seg.broadcast:
        return 2
    need = count + (2 if v4 else 1)  # network and broadcast (v4); subnet-router anycast (v6)
    return 1 << (need - 1).bit_length()


def _explicit_segment(
    graph: LabGraph,
    nodes: dict[str, NodePlan],
    seg: _Segment,
    network: NetworkPlan,
    version: int,
    problems: list[Problem],
    auto: bool = True,
) -> None:
    """Explicit addresses: every port of the subnet must have them (unless netrig assigns
    none: then a port without one stays without), in one subnet."""
    assert seg.explicit is not None
    nets = set()
    first: dict[Any, tuple[str, str]] = {}  # subnet → the first port the file put in it
    for member in seg.members:
        given = [
            c for c in seg.explicit.get(member, []) if ip_network(c, strict=False).version == version
        ]
        if not given and not auto:
            continue
        if not given:
            problems.append(
                Problem(
                    graph.where(("links",)),
                    f"{member[0]}:{member[1]} has no explicit IPv{version} address but shares a "
                    "subnet with ports that do; give addresses to every end or to none",
                )
            )
            return
        for cidr in given:
            iface_net = ip_network(cidr, strict=False)
            nets.add(iface_net)
            first.setdefault(iface_net, member)
            nodes[member[0]].port_addrs(member[1]).append(cidr)
    if len(nets) > 1 and not auto:  # the file's own addressing: several subnets may share
        network.prefixes.extend(sorted(map(str, nets)))
    elif len(nets) > 1:
        # said at the link of the first port in another subnet than the segment's first
        (net0, port0), (net1, port1) = list(first.items())[:2]
        link = graph.links[nodes[port1[0]].iface(port1[1]).link]
        what = (f"link {link.a}–{link.b}: its ends" if len(seg.members) == 2 else
                f"{port1[0]}:{port1[1]} and {port0[0]}:{port0[1]}, ports of one segment,")
        problems.append(
            Problem(
                graph.where(link.path),
                f"{what} are in different subnets ({net1} and {net0}); one link or switch "
                "segment is one subnet",
            )
        )  # fmt: skip
    elif nets:
        network.prefixes.append(str(nets.pop()))
