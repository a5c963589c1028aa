"""The plan: everything the lab engine will create, as plain data (JSON-serialisable).

A plan is pure: made from a spec without root, testable, and stored beside a running lab
so `exec`, `trace` and `down` work without the original file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from functools import cache
from typing import Any


class UnknownName(KeyError):
    """A node, interface or address asked for that the lab does not have (bad input)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown name"


@dataclass
class IfacePlan:
    name: str
    index: int  # ifindex inside the node's namespace (fixed at creation)
    link: int  # index into LabPlan.links
    peer: str  # node at the other end
    peer_iface: str
    addrs: list[str] = field(default_factory=list)  # "198.18.128.0/31", v4 then v6
    master: str | None = None  # bridge this port belongs to
    mac: str = ""  # fixed, so neighbours can be written down instead of resolved


# a Linux bridge's STP timers as netrig builds it, in centiseconds (as the kernel and `ip link
# … type bridge` take them): forward delay at the kernel's 2 s minimum instead of 15 s, so a
# bridge forwards ~4 s after its ports come up instead of ~30 s; the export writes the same
BRIDGE_TIMERS = {"forward_delay": 200, "hello_time": 100, "max_age": 2000}


@dataclass
class BridgePlan:
    name: str
    index: int
    stp: bool
    addrs: list[str] = field(default_factory=list)
    mac: str = ""


@dataclass
class OvsPlan:
    """An Open vSwitch bridge in a switch node (userspace datapath); its ports are the
    node's interfaces."""

    bridge: str
    dpid: str  # 16 hex digits
    stp: bool
    controller: str  # none | standalone | tcp:IP:PORT


@dataclass
class RoutePlan:
    dst: str  # "198.18.0.0/24"
    nexthops: list[tuple[str, int]]  # (gateway, ifindex); several = multipath


@dataclass
class ServicePlan:
    """A daemon a node runs (netrig.services): its plugin, validated options (as JSON), the
    TCP port it serves, and the address clients use when it is not the node's own (a VIP)."""

    kind: str
    options: dict[str, Any]
    port: int
    address: str | None = None


@dataclass
class NodePlan:
    name: str
    kind: str  # host | switch
    ns: str  # namespace name
    index: int  # 1-based position among all nodes (stable, used for addressing)
    ifaces: list[IfacePlan] = field(default_factory=list)
    loopbacks: list[str] = field(default_factory=list)  # "198.18.0.1/32", "2001:2::1/128"
    bridge: BridgePlan | None = None
    ovs: OvsPlan | None = None  # an Open vSwitch switch node (then bridge is None)
    routes: list[RoutePlan] = field(default_factory=list)
    # permanent ARP/ND entries (ifindex, address, mac): the kernel's neighbour tables are
    # shared by all namespaces and overflow at 1024 dynamic entries (gc_thresh3)
    neighbors: list[tuple[int, str, str]] = field(default_factory=list)
    firewall: dict[str, Any] | None = None  # a netrig.firewall.FirewallPlan as a dict
    services: list[ServicePlan] = field(default_factory=list)
    exec: list[list[str]] = field(default_factory=list)  # argv of each line, run in order
    cmd: list[str] | None = None  # a long-running program (a supervised daemon)
    binds: list[tuple[str, str, bool]] = field(default_factory=list)  # (host, node, read-only)
    shares: str | None = None  # the node whose network namespace this one runs in
    private_run: bool = False  # programs in this node get their own /run

    def iface(self, name: str) -> IfacePlan:
        # by a name → position index, checked at each use and rebuilt when stale: a linear
        # search made planning a hub of 10,000 ports quadratic (a 3,000-leaf star: 3.4 s)
        at: dict[str, int] | None = self.__dict__.get("_iface_at")
        pos = -1 if at is None else at.get(name, -1)
        if not (0 <= pos < len(self.ifaces) and self.ifaces[pos].name == name):
            at = {}
            for i, iface in enumerate(self.ifaces):
                at.setdefault(iface.name, i)
            self.__dict__["_iface_at"] = at
            pos = at.get(name, -1)
            if pos < 0:
                raise UnknownName(f"node {self.name!r} has no interface {name!r}")
        return self.ifaces[pos]

    def port_addrs(self, port: str) -> list[str]:
        """The addresses of a segment's member port: the node's bridge, or an interface."""
        if self.bridge and port == self.bridge.name:
            return self.bridge.addrs
        return self.iface(port).addrs

    def addresses(self, family: int = 4) -> list[str]:
        """Addresses without prefix length: loopbacks first, then bridge, then links."""
        out = []
        cidrs = [*self.loopbacks, *(self.bridge.addrs if self.bridge else [])]
        for iface in self.ifaces:
            cidrs += iface.addrs
        for cidr in cidrs:
            addr = cidr.split("/")[0]
            if (":" in addr) == (family == 6):
                out.append(addr)
        return out


@dataclass
class LinkPlan:
    a: str
    a_iface: str
    b: str
    b_iface: str
    mtu: int | None = None
    rate: int | None = None  # bit/s
    burst: int | None = None
    delay: float | None = None
    jitter: float | None = None
    loss: float | None = None
    aliases: int = 0
    cost: int = 1


@dataclass
class NetworkPlan:
    """One L3 subnet: a point-to-point link or a switched segment, with its routers."""

    prefixes: list[str]  # one per family
    members: list[tuple[str, str]]  # (node, iface or bridge name)
    cost: int = 1


@dataclass
class LabPlan:
    name: str
    protocol: str
    routing_options: dict[str, Any]
    nodes: dict[str, NodePlan]
    links: list[LinkPlan]
    networks: list[NetworkPlan]
    sysctls: dict[str, str]
    reachability: str
    check_timeout: float
    private_run: bool = False
    source_file: str | None = None
    # the routing plugin starts daemons (False: all its routes are in the plan), so `up`
    # of a remembered plan (netrig.rig.plancache) needs no plugin loaded for static routes
    routing_daemons: bool = True
    # the address pools netrig numbers from ("198.18.0.0/15", "2001:2::/48"): a route may
    # cover their unused space (a covering prefix), never space outside them
    pools: list[str] = field(default_factory=list)

    def node(self, name: str) -> NodePlan:
        try:
            return self.nodes[name]
        except KeyError:
            known = ", ".join(list(self.nodes)[:8]) + (" …" if len(self.nodes) > 8 else "")
            raise UnknownName(f"lab {self.name!r} has no node {name!r} (nodes: {known})") from None

    def addr(self, node: str, family: int = 4) -> str:
        """The address that stands for a node: its loopback, else its first address."""
        addrs = self.node(node).addresses(family)
        if not addrs:
            raise UnknownName(f"node {node!r} has no IPv{family} address")
        return addrs[0]

    def hosts(self) -> list[NodePlan]:
        return [n for n in self.nodes.values() if n.kind == "host"]

    def namespace_nodes(self) -> list[NodePlan]:
        """The nodes that get a network namespace of their own (one that shares another's
        makes none): what the build makes, and what `up` makes ahead."""
        return [n for n in self.nodes.values() if not n.shares]

    def route_count(self) -> int:
        self.finish_routes()
        return sum(len(n.routes) for n in self.nodes.values())

    # Routes may still be being planned in a forked child while the lab is built (`netrig
    # up`: netrig.plan.lab.build_plan(defer_routes=True)); the build waits for them only
    # before it installs them. Held outside the dataclass fields: not data, not serialised.
    def routes_later(
        self, finish: Callable[[], dict[str, list[RoutePlan]]], cancel: Callable[[], None]
    ) -> None:
        self.__dict__["_routes_later"] = (finish, cancel)

    def finish_routes(self) -> None:
        """Every node's routes in place (waits for the child planning them, if any)."""
        later = self.__dict__.pop("_routes_later", None)
        if later is not None:
            for name, routes in later[0]().items():
                self.nodes[name].routes = routes

    def cancel_routes(self) -> None:
        """Give up routes still being planned (their child is ended); none are installed."""
        later = self.__dict__.pop("_routes_later", None)
        if later is not None:
            later[1]()

    def without_routes(self) -> LabPlan:
        """A copy with no node's routes (nor routes still being planned), for keeping or
        handing over apart from them; shares everything else with this plan."""
        return replace(
            self, nodes={name: replace(node, routes=[]) for name, node in self.nodes.items()}
        )

    def to_dict(self, with_routes: bool = True) -> dict[str, Any]:
        """The plan as JSON-ready data; `from_dict` reads it back equal (lossless)."""
        if with_routes:
            self.finish_routes()
            return asdict(self)
        # the routes left out before asdict copies them (most of a big static lab's plan)
        return asdict(self.without_routes())

    def to_json(self, with_routes: bool = False) -> str:
        """The same text as json.dumps(self.to_dict(with_routes)), several times faster:
        the encoder asks for each dataclass's fields instead of asdict copying them all."""
        if with_routes:
            self.finish_routes()

        def plain(obj: Any) -> dict[str, Any]:
            if not is_dataclass(obj) or isinstance(obj, type):
                raise TypeError(f"{type(obj).__name__} is not JSON data")
            names = _field_names(type(obj))
            if not with_routes and isinstance(obj, NodePlan):
                return {name: [] if name == "routes" else getattr(obj, name) for name in names}
            return {name: getattr(obj, name) for name in names}

        return json.dumps(self, default=plain)

    @classmethod
    def from_json(cls, text: str) -> LabPlan:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabPlan:
        data = json.loads(json.dumps(data))  # a copy: the caller's data stays as it was
        nodes = {}
        for name, n in data["nodes"].items():
            n["ifaces"] = [IfacePlan(**i) for i in n["ifaces"]]
            n["bridge"] = BridgePlan(**n["bridge"]) if n["bridge"] else None
            n["ovs"] = OvsPlan(**n["ovs"]) if n.get("ovs") else None
            n["routes"] = [
                RoutePlan(r["dst"], [tuple(h) for h in r["nexthops"]]) for r in n["routes"]
            ]
            n["neighbors"] = [tuple(x) for x in n["neighbors"]]
            n["services"] = [ServicePlan(**x) for x in n.get("services", [])]
            n["binds"] = [tuple(b) for b in n.get("binds", [])]
            nodes[name] = NodePlan(**n)
        data["nodes"] = nodes
        data["links"] = [LinkPlan(**link) for link in data["links"]]
        data["networks"] = [
            NetworkPlan(n["prefixes"], [tuple(m) for m in n["members"]], n["cost"])
            for n in data["networks"]
        ]
        return cls(**data)


@cache
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))
