"""bgp: eBGP by FRR (bgpd + zebra per node), as datacenter fabrics run it (RFC 7938).

Every node is its own private AS (4200000100 + its index), or with `asn: per-tier` the
spines and cores of a fabric (nodes named s1…, c1…, as the clos and fat-tree topologies
name them) share one AS, as RFC 7938 does, so a path never goes down and up the spine
layer twice (they accept routes their AS originated, so spines still reach each other's
loopbacks). Sessions run on the interfaces ("BGP unnumbered": IPv6 link-local peers, one
session for both families; IPv4 routes get the link's IPv4 next hop, or without IPv4 link
addresses an IPv6 one, RFC 8950), one per link, or with `unnumbered: false` on
the link addresses (one session per family; what `bfd: true` uses, since FRR 8.4 runs
no BFD for a peer on an interface). Each node advertises its connected networks
(loopbacks and links); equal paths through different ASes are all installed
(`multipath-relax`, up to `maximum_paths`).

With `ibgp: true` the lab is one AS (4200000000) and route reflection carries the routes,
still hop by hop over sessions on the links, with no IGP below: the top reflectors are
`route_reflectors` (by default the spines s*, else the cores c*), every other router a
client of its neighbours one hop nearer them (and their reflector in turn for its
neighbours one hop farther off); two nodes as far from the top share no session. A node
with two or more reflectors also reflects between them (a leaf between its spines, which
have no link to each other). Every session sets the next hop to the sender's own address
(`next-hop-self force`), so next hops are always on a link; every hop adds 1 to the MED,
compared before anything else that differs, so paths are as short as eBGP's (without it,
FRR ranks paths by the originator before the cluster list's length: detours). check()
refuses reflectors some router's routes would never reach through.

On a shared segment (routers linked to switch nodes) each router has a session with every
other router there, on their addresses on the segment (unnumbered sessions need a link of
their own); in iBGP they are all one hop apart.

    netrig exec LAB n1 -- vtysh -c 'show bgp summary'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import Field, model_validator

from netrig.routing import register
from netrig.routing._frr import RTPROT_BGP, FrrOptions, FrrProtocol, router_id

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.model.load import LabGraph
    from netrig.model.yamlmarks import KeyPath

ASN_BASE = 4200000000  # RFC 6996 private 4-byte ASNs: 4200000000-4294967294
SHARED_TIERS = ("s", "c")  # spines (clos) and cores (fat-tree) share an AS under per-tier


class BgpOptions(FrrOptions):
    asn: Literal["per-node", "per-tier"] = Field(
        "per-node",
        description="per-node: a private AS per node; per-tier: spines (s*) and cores (c*) "
        "share one AS, every other node has its own (RFC 7938)",
    )
    unnumbered: bool | None = Field(
        None,
        description="sessions on interfaces over IPv6 link-local (false: on the link "
        "addresses); default: true, false with bfd (FRR 8.4 runs no BFD on interface peers)",
    )
    keepalive: int = Field(1, ge=1, le=65535, description="seconds between keepalives")
    hold: int = Field(
        3, ge=3, le=65535, description="seconds without a message before a session is down"
    )
    connect_retry: int = Field(
        2, ge=1, le=65535, description="seconds between attempts to open a session"
    )
    maximum_paths: int = Field(64, ge=1, le=256, description="equal paths installed (ECMP)")
    ibgp: bool = Field(
        False,
        description="one AS for the lab (iBGP) with route reflectors instead of eBGP: "
        "sessions on the links, each node a client of its neighbours one hop nearer the "
        "reflectors, next hops set to self",
    )
    route_reflectors: list[str] | None = Field(
        None,
        min_length=1,
        description="with ibgp: the top route reflectors (default: the spines s* of a clos, "
        "else the cores c* of a fat tree)",
    )

    @model_validator(mode="after")
    def _hold_after_keepalive(self) -> BgpOptions:
        if self.route_reflectors is not None and not self.ibgp:
            raise ValueError("route_reflectors needs ibgp: true (eBGP reflects nothing)")
        if self.ibgp and self.asn != "per-node":
            raise ValueError(f"asn: {self.asn} with ibgp: the whole lab is one AS ({ASN_BASE})")
        if self.bfd and self.unnumbered:
            raise ValueError(
                "bfd with unnumbered sessions: FRR 8.4 starts no BFD session for a peer "
                "on an interface; drop unnumbered (with bfd, sessions use link addresses)"
            )
        if self.hold < 3 * self.keepalive:
            raise ValueError(
                f"hold ({self.hold} s) must be at least 3 × keepalive ({self.keepalive} s)"
            )
        return self


@register
class Bgp(FrrProtocol[BgpOptions]):
    name = "bgp"
    summary = (
        "eBGP (FRR): a private AS per node or tier, unnumbered, ECMP; or iBGP, route reflectors"
    )
    Options = BgpOptions
    daemons = ("bgpd",)
    rtprot = RTPROT_BGP
    _computed: tuple[object, dict[str, set[str]], dict[str, int]] | None = None

    def asn(self, lab: Lab, node: str) -> int:
        if self.options.ibgp:
            return ASN_BASE
        if self.options.asn == "per-tier" and _tier(node) in SHARED_TIERS:
            return ASN_BASE + SHARED_TIERS.index(_tier(node))  # below every node index
        return ASN_BASE + 100 + lab.plan.node(node).index

    def check(self, graph: LabGraph) -> list[tuple[KeyPath, str]]:
        if not self.options.ibgp:
            return []
        return _reflector_problems(_graph_adjacency(graph), self.options.route_reflectors)

    def config(self, lab: Lab, node: str, daemon: str) -> str:
        o = self.options
        unnumbered = o.unnumbered if o.unnumbered is not None else not o.bfd
        families = self.node_families(lab, node)
        ibgp = o.ibgp
        # the session groups on this node: eBGP has one; iBGP one per role (a neighbour
        # nearer the reflectors, one farther off whose routes this node reflects, or
        # another top reflector)
        groups: dict[str, list[Neighbour]] = {}
        clients = {CLIENTS}  # the groups whose routes this node reflects
        if ibgp:
            adjacent, level = self._hierarchy(lab)
            if _bridges(adjacent, level, node):
                clients.add(REFLECTORS)
            for nb in _neighbours(lab, node):
                role = _role(level, node, nb.router)
                if role:
                    groups.setdefault(role, []).append(nb)
        else:
            groups[EBGP] = _neighbours(lab, node)
        # the route map comes first: a session that starts before its route map is read
        # sends nothing until bgpd's route-map delay timer (5 s) runs out
        out = [f"route-map {HOP_MAP} permit 10", " set metric +1", "exit"] if ibgp else []
        out += [
            f"router bgp {self.asn(lab, node)}",
            f" bgp router-id {router_id(lab, node)}",
            " no bgp ebgp-requires-policy",
            " no bgp default ipv4-unicast",
        ]
        if ibgp:
            # every hop adds 1 to the MED, which iBGP compares before the IGP metric (there
            # is none: next hops are always the neighbour's own link address) and the
            # originator: a hop count, as the AS path length is in eBGP
            out += [" bgp route-reflector allow-outbound-policy", " bgp always-compare-med"]
        else:
            out += [" bgp bestpath as-path multipath-relax", " bgp bestpath compare-routerid"]
        out += [" bgp log-neighbor-changes"] if o.debug else []
        for group in groups:
            out += [
                f" neighbor {group} peer-group",
                f" neighbor {group} remote-as {'internal' if ibgp else 'external'}",
                f" neighbor {group} timers {o.keepalive} {o.hold}",
                f" neighbor {group} timers connect {o.connect_retry}",
                f" neighbor {group} advertisement-interval 0",
            ]
        peers: dict[int, list[str]] = {4: [], 6: []}
        for group, neighbours in groups.items():
            for nb in neighbours:
                if unnumbered and nb.wire:
                    out.append(f" neighbor {nb.iface} interface peer-group {group}")
                    continue
                # on a shared segment, sessions run on the addresses the routers have there
                for cidr in lab.plan.node(nb.router).iface(nb.port).addrs:
                    addr = cidr.split("/")[0]
                    peers[6 if ":" in addr else 4].append(addr)
                    out.append(f" neighbor {addr} peer-group {group}")
                    out += [f" {line}" for line in self.bfd_line(f"neighbor {addr} bfd")]
        # nodes of a shared AS take routes that their AS originated (the other spines'
        # loopbacks), not routes that only passed through it
        shared = not ibgp and self.asn(lab, node) < ASN_BASE + 100
        for family in families:
            out += [
                f" address-family ipv{family} unicast",
                "  redistribute connected",
                f"  maximum-paths {'ibgp ' if ibgp else ''}{o.maximum_paths}",
            ]
            for group in groups:
                out.append(f"  neighbor {group} activate")
                if ibgp:
                    out += [
                        f"  neighbor {group} next-hop-self force",
                        f"  neighbor {group} route-map {HOP_MAP} out",
                    ]
                if shared:
                    out.append(f"  neighbor {group} allowas-in origin")
            out += [f"  neighbor {g} route-reflector-client" for g in groups if g in clients]
            # a session on addresses of one family carries only that family
            out += [f"  no neighbor {addr} activate" for addr in peers[10 - family]]
            out.append(" exit-address-family")
        out.append("exit")
        if o.debug:
            out += ["debug bgp neighbor-events", "debug bgp updates"]
        return "\n".join(out) + "\n"

    def _hierarchy(self, lab: Lab) -> tuple[dict[str, set[str]], dict[str, int]]:
        """The routers' neighbours and their hops from the top reflectors (once per plan:
        every node's configuration asks)."""
        if self._computed is None or self._computed[0] is not lab.plan:
            adjacent = _plan_adjacency(lab)
            self._computed = (lab.plan, adjacent, _levels(adjacent, self.reflectors(lab)))
        return self._computed[1], self._computed[2]

    def reflectors(self, lab: Lab) -> list[str]:
        """The top route reflectors: the file's, or the fabric's spines (else cores)."""
        o = self.options
        return o.route_reflectors or _default_reflectors(_plan_adjacency(lab))


EBGP, REFLECTORS, CLIENTS, TOPS = "fabric", "reflectors", "clients", "tops"
HOP_MAP = "hop"


class Neighbour(NamedTuple):
    """A router NODE has a session with: through NODE's interface `iface`, on its own
    `wire` (a link between the two) or over switches, to the router's interface `port`."""

    iface: str
    router: str
    port: str
    wire: bool


def _neighbours(lab: Lab, node: str) -> list[Neighbour]:
    """The routers NODE shares a link or a switched segment with, per interface."""
    out = []
    for iface in lab.plan.node(node).ifaces:
        if lab.plan.node(iface.peer).kind != "switch":
            out.append(Neighbour(iface.name, iface.peer, iface.peer_iface, True))
            continue
        for router, port in _segment_ports(lab, iface.peer):
            if router != node:
                out.append(Neighbour(iface.name, router, port, False))
    return out


def _segment_ports(lab: Lab, switch: str) -> list[tuple[str, str]]:
    """(router, interface) of every router port on the switches SWITCH is linked to."""
    seen, todo, out = {switch}, [switch], []
    while todo:
        for iface in lab.plan.node(todo.pop()).ifaces:
            if lab.plan.node(iface.peer).kind != "switch":
                out.append((iface.peer, iface.peer_iface))
            elif iface.peer not in seen:
                seen.add(iface.peer)
                todo.append(iface.peer)
    return sorted(out)


def _plan_adjacency(lab: Lab) -> dict[str, set[str]]:
    """Router → the routers it has a link or a switched segment to."""
    return {
        node.name: {nb.router for nb in _neighbours(lab, node.name)}
        for node in lab.plan.nodes.values()
        if node.kind != "switch" and node.ifaces
    }


def _graph_adjacency(graph: LabGraph) -> dict[str, set[str]]:
    """Router → the routers it has a link or a switched segment to, from the file."""
    switches = {name for name, node in graph.nodes.items() if node.kind == "switch"}
    segment = {sw: sw for sw in switches}  # union-find: switches linked together

    def root(sw: str) -> str:
        while segment[sw] != sw:
            sw = segment[sw]
        return sw

    for link in graph.links:
        if link.a in switches and link.b in switches:
            segment[root(link.a)] = root(link.b)
    out: dict[str, set[str]] = {}
    ports: dict[str, set[str]] = {}  # segment → its routers
    for link in graph.links:
        for a, b in ((link.a, link.b), (link.b, link.a)):
            if a in switches:
                continue
            out.setdefault(a, set())
            if b in switches:
                ports.setdefault(root(b), set()).add(a)
            else:
                out[a].add(b)
    for routers in ports.values():
        for router in routers:
            out[router] |= routers - {router}
    return out


def _default_reflectors(adjacent: dict[str, set[str]]) -> list[str]:
    for tier in SHARED_TIERS:
        found = sorted((n for n in adjacent if _tier(n) == tier), key=_natural)
        if found:
            return found
    return []


def _levels(adjacent: dict[str, set[str]], tops: list[str]) -> dict[str, int]:
    """Hops from the nearest top reflector, for every router that has a way to one."""
    level = {top: 0 for top in tops if top in adjacent}
    frontier = list(level)
    while frontier:
        nxt = []
        for node in frontier:
            for peer in sorted(adjacent[node]):
                if peer not in level:
                    level[peer] = level[node] + 1
                    nxt.append(peer)
        frontier = nxt
    return level


def _role(level: dict[str, int], node: str, peer: str) -> str | None:
    """The session group of NODE's neighbour PEER: one hop nearer the reflectors
    (REFLECTORS: they reflect NODE's routes), one hop farther (CLIENTS), another top
    reflector (TOPS); none between two nodes as far from the reflectors."""
    if node not in level or peer not in level:
        return None
    if level[peer] == level[node] - 1:
        return REFLECTORS
    if level[peer] == level[node] + 1:
        return CLIENTS
    return TOPS if level[node] == level[peer] == 0 else None


def _bridges(adjacent: dict[str, set[str]], level: dict[str, int], node: str) -> bool:
    """Whether NODE reflects between its own reflectors, as it does when it has two or
    more: reflectors are seldom linked to each other (the spines of a Clos), and
    without a node below that passes on what one of them says the others would never
    hear it (nor the routes that reached only one: in a fat tree, an aggregation switch's
    own routes reach the cores above the other aggregation switches of its pod only
    through an edge switch)."""
    if node not in level:
        return False
    return sum(1 for p in adjacent[node] if level.get(p) == level[node] - 1) >= 2


def _listeners(
    adjacent: dict[str, set[str]], level: dict[str, int]
) -> dict[str, list[tuple[str, bool, bool]]]:
    """Per router, its session peers as (peer, whether it is the peer's client, whether
    the peer is its own)."""
    bridges = {node: _bridges(adjacent, level, node) for node in level}

    def client(node: str, peer: str) -> bool:  # peer is node's route-reflector client
        role = _role(level, node, peer)
        return role == CLIENTS or (role == REFLECTORS and bridges[node])

    return {
        node: [
            (p, client(p, node), client(node, p)) for p in adjacent[node] if _role(level, node, p)
        ]
        for node in level
    }


def _heard(listeners: dict[str, list[tuple[str, bool, bool]]], origin: str) -> set[str]:
    """The routers that ORIGIN's routes reach by the rules of route reflection: a node
    passes on its own routes and its clients' to every peer, its reflectors' only to its
    clients (whichever path each node prefers: this is what could reach it)."""
    todo = [(p, theirs) for p, theirs, _ in listeners[origin]]
    done: set[tuple[str, bool]] = set()
    while todo:
        node, from_client = todo.pop()
        if (node, from_client) in done or node == origin:
            continue
        done.add((node, from_client))
        todo += [(p, theirs) for p, theirs, mine in listeners[node] if from_client or mine]
    return {origin} | {node for node, _ in done}


def _reflector_problems(
    adjacent: dict[str, set[str]], chosen: list[str] | None
) -> list[tuple[KeyPath, str]]:
    """Unknown reflectors, and routers whose routes would never reach each other: a route
    climbs from its origin through every reflector above it, crosses at most one link
    between top reflectors, and goes down; two routers need a top reflector in common, or
    two linked ones."""
    if chosen is not None:
        bad = [
            (("routing", "route_reflectors", i), name)
            for i, name in enumerate(chosen)
            if name not in adjacent
        ]
        if bad:
            return [
                (path, f"route reflector {name!r} is not a router with links in this lab")
                for path, name in bad
            ]
        tops, where = chosen, ("routing", "route_reflectors")
    else:
        tops, where = _default_reflectors(adjacent), ("routing", "ibgp")
        if not tops:
            return [
                (
                    where,
                    "ibgp: no route reflectors: this lab has no spines (s*) or cores (c*); "
                    "name them in route_reflectors",
                )
            ]
    level = _levels(adjacent, tops)
    cut_off = sorted((n for n in adjacent if n not in level), key=_natural)
    if cut_off:
        return [(where, f"ibgp: {cut_off[0]} has no way to a route reflector")]
    listeners = _listeners(adjacent, level)
    for a in sorted(level, key=_natural):
        missed = sorted(set(level) - _heard(listeners, a), key=_natural)
        if missed:
            return [
                (
                    where,
                    f"ibgp: the routes of {a} never reach {missed[0]} through these route "
                    "reflectors (what a node hears from its reflector goes on only to its "
                    "clients); choose others, or link them",
                )
            ]
    return []


def _natural(name: str) -> tuple[str, int]:
    """s2 before s10."""
    tier = _tier(name)
    return tier, int(name[len(tier) :] or 0)


def _tier(node: str) -> str:
    """`s` for s12: the letters before the number, as the fabric generators name nodes."""
    return node.rstrip("0123456789")
