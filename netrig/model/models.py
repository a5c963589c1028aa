"""The lab file as typed models: what a user may write, with types, ranges and defaults.

Validation and normalisation live here (pydantic v2); the loader (`netrig.model.load`)
turns pydantic's errors into `file:line:col` messages. Nothing here touches the kernel.
"""

from __future__ import annotations

import os
import re
from ipaddress import IPv4Interface, IPv4Network, IPv6Interface, IPv6Network, ip_interface
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from netrig.base.options import Options
from netrig.model.nodecount import topology_links, topology_nodes
from netrig.model.units import parse_duration, parse_link_rate, parse_percent, parse_rate

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_LAB_NAME = 20
MAX_NODE_NAME = 24
IFNAMSIZ = 16  # including the terminating NUL: 15 visible characters


def _name(kind: str, limit: int) -> Any:
    def check(value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(
                f"{kind} name {value!r} may hold only letters, digits, '_', '.', '-' "
                "and must start with a letter or digit"
            )
        if len(value) > limit:
            raise ValueError(f"{kind} name {value!r} is {len(value)} characters; at most {limit}")
        return value

    return AfterValidator(check)


def _ifname(value: str) -> str:
    """The kernel's dev_valid_name(): 1–15 characters, no '/', ':' or white space."""
    if not value or value in (".", ".."):
        raise ValueError(f"{value!r} is not a valid interface name")
    if len(value) >= IFNAMSIZ:
        raise ValueError(
            f"interface name {value!r} is {len(value)} characters; the kernel allows at most 15"
        )
    bad = [c for c in value if c in "/:" or c.isspace()]
    if bad:
        raise ValueError(f"interface name {value!r} contains {bad[0]!r}, which the kernel refuses")
    if value in ("all", "default"):  # net.ipv4.conf.all and .default: EINVAL at build
        raise ValueError(f"interface name {value!r} is the kernel's own (its sysctl folders)")
    return value


LabName = Annotated[str, _name("lab", MAX_LAB_NAME)]
NodeName = Annotated[str, _name("node", MAX_NODE_NAME)]
IfName = Annotated[str, AfterValidator(_ifname)]
Rate = Annotated[int, BeforeValidator(parse_rate)]
LinkRate = Annotated[int, BeforeValidator(parse_link_rate)]
Seconds = Annotated[float, BeforeValidator(parse_duration), Field(ge=0)]
Percent = Annotated[float, BeforeValidator(parse_percent)]


def _addresses(value: Any) -> list[IPv4Interface | IPv6Interface]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        iface = ip_interface(str(item))
        if "/" not in str(item):
            raise ValueError(f"{item!r} needs a prefix length, e.g. {item}/24")
        if iface.network.prefixlen == 0:
            raise ValueError(
                f"{item!r}: a /0 puts every address on this link; give its subnet's length"
            )
        for special, what in _NOT_ADDRESSES:
            if iface.version == special.version and iface.ip in special:
                raise ValueError(f"{item!r} is in {special} ({what}): not an interface's address")
        out.append(iface)
    return out


Addresses = Annotated[list[IPv4Interface | IPv6Interface], BeforeValidator(_addresses)]


class Strict(Options):
    """Every model refuses unknown keys, so a typo is an error, not a silent default, and a
    number is no yes/no (netrig.base.options).

    Empty lists and dicts are defaults as values (pydantic copies them for each instance),
    not `default_factory=list`: for a builtin factory pydantic asks `inspect` for its
    signature, which compiles tokenize's expressions (~1.5 ms of every `validate`)."""



class LinkAttrs(Strict):
    """Properties of a link; used per link and as `link_defaults` for generated links."""

    mtu: int | None = Field(None, ge=68, le=65535, description="MTU of both ends")
    rate: LinkRate | None = Field(
        None, description="rate limit per direction, tc units: 100mbit (1kbit to 34gbit)"
    )
    burst: int | None = Field(None, ge=1, description="token bucket burst in bytes (rate only)")
    delay: Seconds | None = Field(None, description="one-way delay per direction (needs netem)")
    jitter: Seconds | None = Field(None, description="delay variation (needs netem)")
    loss: Percent | None = Field(None, description="packet loss per direction (needs netem)")
    aliases: int = Field(0, ge=0, le=1024, description="extra IP addresses on each end")
    cost: int = Field(1, ge=1, le=65535, description="metric for shortest-path routing")

    def netem_keys(self) -> list[str]:
        return [k for k in ("delay", "jitter", "loss") if getattr(self, k) is not None]


_LINK_ATTR_NAMES = tuple(LinkAttrs.model_fields)


class Link(LinkAttrs):
    a: NodeName
    b: NodeName
    a_ifname: IfName | None = None
    b_ifname: IfName | None = None
    a_addr: Addresses | None = Field(None, description="explicit addresses of the a end")
    b_addr: Addresses | None = Field(None, description="explicit addresses of the b end")

    @model_validator(mode="after")
    def _no_self_loop(self) -> Link:
        if self.a == self.b:
            raise ValueError(f"link from {self.a!r} to itself: a self-loop is not a link")
        return self

    def attrs(self) -> dict[str, Any]:
        """The attributes set explicitly (for merging over generated links)."""
        return {k: getattr(self, k) for k in self.model_fields_set if k in _LINK_ATTR_NAMES}


def _dpid(value: Any) -> str:
    """An OpenFlow datapath ID: 16 hex digits, written as a string (YAML reads 0000…1 as 1)."""
    if not isinstance(value, str) or not re.fullmatch(r"[0-9A-Fa-f]{16}", value):
        raise ValueError(f'dpid {value!r} must be 16 hex digits in quotes, e.g. "0000000000000001"')
    return value.lower()


def _controller(value: Any) -> str:
    """none | standalone | tcp:IP:PORT (an OpenFlow controller the switch connects to)."""
    text = str(value)
    if text in ("none", "standalone"):
        return text
    match = re.fullmatch(r"tcp:(\[[0-9A-Fa-f:.]+\]|[0-9.]+)(?::(\d{1,5}))?", text)
    if not match:
        raise ValueError(
            f"controller {text!r} must be none, standalone (netrig runs ovs-testcontroller in "
            "the switch node) or tcp:IP[:PORT], e.g. tcp:127.0.0.1:6653"
        )
    try:
        ip_interface(match.group(1).strip("[]"))
    except ValueError:
        raise ValueError(f"controller {text!r}: {match.group(1)!r} is not an IP address") from None
    if match.group(2) and not 0 < int(match.group(2)) < 65536:
        raise ValueError(f"controller {text!r}: port must be 1–65535")
    return text


Dpid = Annotated[str, BeforeValidator(_dpid)]
Controller = Annotated[str, BeforeValidator(_controller)]


class FirewallRule(Strict):
    """A rule that may match lab traffic: `{src: n1}` drops everything from n1's addresses."""

    src: str = Field(description="a node name (all its addresses) or a CIDR, e.g. 198.18.0.1/32")
    action: Literal["drop", "accept"] = "drop"


class Firewall(Strict):
    """A packet filter in a node, applied after the lab is built (see netrig.firewall)."""

    engine: str = Field(description="iptables | nftables | xdp (a plugin of netrig.firewall)")
    filler_rules: int = Field(
        0,
        ge=0,
        le=10000,
        description="rules that never match lab traffic, this many per family "
        "(sources from 240.0.0.0/4 and 3fff:ff0::/32)",
    )
    rules: list[FirewallRule] = []
    xdp_mode: Literal["native", "skb"] = Field("native", description="xdp engine: attach mode")


def _bind(value: Any) -> str:
    """HOST:NODE[:ro|rw], both absolute (readers of other tools' files resolve relative paths)."""
    parts = str(value).split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise ValueError(f"bind {value!r} must be HOST_PATH:NODE_PATH or HOST_PATH:NODE_PATH:ro")
    for path in parts[:2]:
        if not path.startswith("/"):
            raise ValueError(f"bind {value!r}: {path!r} is not an absolute path")
    inside = os.path.normpath(parts[1])
    if inside == "/":
        raise ValueError(f"bind {value!r}: cannot mount over /")
    for kernel in ("/proc", "/sys"):  # the node's own: netrig mounts them for it
        if inside == kernel or inside.startswith(kernel + "/"):
            raise ValueError(
                f"bind {value!r}: {kernel} in a node is the kernel's, mounted by netrig for "
                "the node (every exec in it failed after such a bind)"
            )
    return str(value)


Bind = Annotated[str, BeforeValidator(_bind)]


class Node(Strict):
    name: NodeName
    kind: Literal["host", "switch"] = "host"
    host: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="with --cluster: the cluster host (a worker's name) this node goes to; "
        "the other nodes are placed as `placement:` says",
    )  # only read by netrig.cluster (labs across hosts)
    stp: bool = Field(False, description="spanning tree on a switch node")
    switch: Literal["linux", "ovs"] = Field(
        "linux", description="what a switch node is: a Linux bridge or Open vSwitch"
    )
    dpid: Dpid | None = Field(None, description="OpenFlow datapath ID of an ovs switch")
    controller: Controller = Field(
        "none", description="ovs switch: none | standalone (ovs-testcontroller) | tcp:IP:PORT"
    )
    firewall: Firewall | None = Field(None, description="a packet filter in this node")
    services: list[str | dict[str, Any]] = Field(
        default=[],
        description="daemons the node runs, each `kind: {options}` (see netrig.services), "
        "e.g. [{nginx: {files: {1k: 1024}}}, {haproxy: {backends: [web1, web2]}}]",
    )
    exec: list[str] = Field(
        default=[],
        description="commands run in order inside the node once the lab is up (after routing "
        "and services), each split as a shell would split it; a failing one fails `up`",
    )
    cmd: str | None = Field(
        None, description="a long-running program started in the node (supervised, as a daemon)"
    )
    binds: list[Bind] = Field(
        default=[],
        description="HOST_PATH:NODE_PATH[:ro]: files or directories mounted into the node's "
        "private view of the filesystem (every program netrig runs in the node sees them)",
    )
    netns: NodeName | None = Field(
        None,
        description="share the network namespace of another node (own programs and binds, "
        "that node's interfaces), as containerlab's network-mode container:X",
    )
    loopbacks: Addresses = Field(
        default=[],
        description="addresses on the node's lo, written (a containerlab file's `ip addr add "
        "CIDR dev lo` exec lines): they stand for the node (before the pool's loopback)",
    )

    @model_validator(mode="after")
    def _stp_on_switch(self) -> Node:
        if self.stp and self.kind != "switch":
            raise ValueError("stp applies to switch nodes (kind: switch)")
        ovs_keys = [k for k in ("switch", "dpid", "controller") if k in self.model_fields_set]
        if ovs_keys and self.kind != "switch":
            raise ValueError(f"{ovs_keys[0]} applies to switch nodes (kind: switch)")
        ovs_only = [k for k in ("dpid", "controller") if k in self.model_fields_set]
        if ovs_only and self.switch != "ovs":
            raise ValueError(f"{ovs_only[0]} applies to Open vSwitch nodes (switch: ovs)")
        if self.services and self.kind != "host":
            raise ValueError("services run on host nodes, not on a switch")
        if (self.exec or self.cmd or self.binds or self.netns) and self.kind != "host":
            raise ValueError("exec, cmd, binds and netns apply to host nodes, not to a switch")
        if self.loopbacks and (self.kind != "host" or self.netns):
            raise ValueError("loopbacks apply to host nodes with a namespace of their own")
        return self


TopologyKind = Literal[
    "pair", "chain", "ring", "ladder", "star", "grid", "tree", "full-mesh", "clos", "fat-tree"
]

_TOPOLOGY_PARAMS: dict[str, tuple[str, ...]] = {
    "pair": (),
    "chain": ("nodes",),
    "ring": ("nodes",),
    "ladder": ("nodes",),
    "star": ("leaves",),
    "grid": ("rows", "cols"),
    "tree": ("depth", "fanout"),
    "full-mesh": ("nodes",),
    "clos": ("spines", "leaves", "hosts_per_leaf"),
    "fat-tree": ("k",),
}
_TOPOLOGY_PARAM_NAMES = sorted({p for params in _TOPOLOGY_PARAMS.values() for p in params})
_TOPOLOGY_MIN_NODES = {"chain": 2, "ring": 3, "ladder": 4, "full-mesh": 2}


MAX_NODES = 10000  # a generated topology's (a 100x100 grid)
MAX_LINKS = 50000  # ~20-35 s of veth pairs here (a 100x100 grid has 19,800; a k=32 fat-tree 24,576)


class Topology(Strict):
    """A generated topology; nodes are named n1 … nN (fabrics: by tier, see model.topology)."""

    kind: TopologyKind
    nodes: int | None = Field(None, ge=1, le=10000)
    leaves: int | None = Field(None, ge=1, le=10000)
    rows: int | None = Field(None, ge=1, le=200)
    cols: int | None = Field(None, ge=1, le=200)
    depth: int | None = Field(None, ge=1, le=20)
    fanout: int | None = Field(None, ge=1, le=100)
    spines: int | None = Field(None, ge=1, le=1000, description="clos: spine switches s1…")
    hosts_per_leaf: int | None = Field(None, ge=1, le=1000, description="clos: hosts per leaf")
    k: int | None = Field(None, ge=2, le=32, description="fat-tree: ports per switch (even)")

    @model_validator(mode="after")
    def _params_fit_kind(self) -> Topology:
        wanted = _TOPOLOGY_PARAMS[self.kind]
        given = {k for k in _TOPOLOGY_PARAM_NAMES if getattr(self, k)}
        missing = [k for k in wanted if k not in given]
        extra = sorted(given - set(wanted))
        if missing:
            raise ValueError(f"topology {self.kind!r} needs {', '.join(missing)}")
        if extra:
            needs = ", ".join(wanted) or "no parameters"
            raise ValueError(f"topology {self.kind!r} takes {needs}, not {', '.join(extra)}")
        low = _TOPOLOGY_MIN_NODES.get(self.kind)
        if low and self.nodes is not None and self.nodes < low:
            raise ValueError(f"a {self.kind} needs at least {low} nodes")
        if self.kind == "fat-tree" and self.k and self.k % 2:
            raise ValueError(f"a fat-tree needs an even k (ports per switch), not {self.k}")
        size = {k: getattr(self, k) for k in wanted}
        nodes = topology_nodes({"kind": self.kind, **size}) or 0
        links = topology_links({"kind": self.kind, **size}) or 0
        if nodes > MAX_NODES or links > MAX_LINKS:
            raise ValueError(
                f"{self.kind} too large: {nodes:,} nodes and {links:,} links (at most"
                f" {MAX_NODES:,} nodes and {MAX_LINKS:,} links)"
            )
        return self


class Routing(BaseModel):
    """`protocol` picks a plugin from netrig.routing; other keys are that plugin's options."""

    model_config = ConfigDict(extra="allow", frozen=True)
    protocol: str = "static"

    @model_validator(mode="before")
    @classmethod
    def _protocol_alone(cls, data: Any) -> Any:
        """`routing: ospf` is `routing: {protocol: ospf}` (pydantic had answered "Input
        should be a valid dictionary or instance of Routing")."""
        if isinstance(data, str):
            return {"protocol": data}
        if not isinstance(data, dict | Routing):
            raise ValueError(f"routing: a protocol's name (routing: ospf) or a mapping (routing: "
                             f"{{protocol: ospf, …}}), not {data!r}")
        return data

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Addressing(Strict):
    mode: Literal["p2p", "shared-subnet"] = Field(
        "p2p",
        description="p2p: a /31 (/127) per link; shared-subnet: all mesh interfaces in one subnet",
    )
    ipv4: IPv4Network | None = IPv4Network("198.18.0.0/15")
    ipv6: IPv6Network | None = IPv6Network("2001:2::/48")
    loopbacks: bool = Field(True, description="a /32 (/128) per node on lo")
    auto: bool = Field(
        True,
        description="false: netrig assigns no addresses but those a link gives explicitly "
        "(the lab's own commands address it, as in a containerlab file)",
    )

    @field_validator("ipv4", "ipv6", mode="before")
    @classmethod
    def _false_means_off(cls, value: Any, info: ValidationInfo) -> Any:
        if value is True:  # it was taken for the number 1: a pool 0.0.0.1/32
            raise ValueError(
                f"true is no pool: leave {info.field_name} out for netrig's own, give one "
                "(e.g. 198.51.100.0/24), or false for none"
            )
        return None if value is False else value

    @model_validator(mode="after")
    def _some_family(self) -> Addressing:
        if self.ipv4 is None and self.ipv6 is None:
            raise ValueError("at least one of ipv4 and ipv6 must be on")
        if self.ipv4 is not None and self.ipv4.prefixlen > 29:
            raise ValueError(f"ipv4 pool {self.ipv4} is too small (at most /29)")
        if self.ipv6 is not None and self.ipv6.prefixlen > 64:
            raise ValueError(f"ipv6 pool {self.ipv6} is too small (at most /64)")
        for pool in (self.ipv4, self.ipv6):
            for special, what in _NOT_POOLS:
                if pool is not None and pool.version == special.version and pool.overlaps(special):
                    raise ValueError(f"pool {pool} overlaps {special} ({what}): not for a lab")
        return self


# address space no lab's interfaces may take (each kind of address means something else)
_NOT_POOLS: tuple[tuple[IPv4Network | IPv6Network, str], ...] = (
    (IPv4Network("0.0.0.0/8"), "this network"),
    (IPv4Network("127.0.0.0/8"), "loopback"),
    (IPv4Network("224.0.0.0/4"), "multicast"),
    (IPv4Network("240.0.0.0/4"), "reserved"),
    (IPv6Network("::/8"), "loopback, unspecified and IPv4-mapped"),
    (IPv6Network("fe80::/10"), "link-local"),
    (IPv6Network("ff00::/8"), "multicast"),
)


# and no interface address either (link-local may: a routing daemon's own choice)
_NOT_ADDRESSES = tuple(p for p in _NOT_POOLS if p[0] != IPv6Network("fe80::/10"))


class Check(Strict):
    """What `up` verifies before it reports the lab usable."""

    reachability: Literal["auto", "all", "sample", "none"] = Field(
        "auto",
        description=(
            "auto: every pair (proven from the FIBs in a static/ecmp lab of hosts, else "
            "pinged up to 128 nodes); sample: every node toward 256 destinations per family "
            "there, 8 pinged targets per node elsewhere; all: every pair pinged; none"
        ),
    )
    timeout: Seconds = 10.0


class Placement(Strict):
    """Where the nodes go when the lab is brought up on a cluster (`netrig up --cluster`):
    partitioned over this many hosts, with as few links cut as balance allows."""

    hosts: int = Field(ge=1, le=64, description="hosts to spread the nodes over")


def _net_sysctls(value: dict[str, Any]) -> dict[str, str]:
    """Only net.* keys: they are per network namespace; anything else would change the host."""
    out = {}
    for key, val in value.items():
        if not re.fullmatch(r"net(\.[A-Za-z0-9_*-]+)+", str(key)):
            raise ValueError(
                f"sysctl {key!r}: only net.* keys are allowed (they apply per namespace; "
                "others would change the host)"
            )
        device = re.fullmatch(r"net\.ipv[46]\.(conf|neigh)\.([^.]+)\.(.+)", str(key))
        if device and device[2] not in ("all", "default"):
            # set as each namespace is made, before its links exist: `up` had failed with
            # "No such file or directory" for a key validate had passed
            raise ValueError(
                f"sysctl {key!r}: a key of one device is set before the lab's links exist; "
                f"use net.ipv{key[7]}.{device[1]}.default.{device[3]} (every link made after "
                f"takes it) or .all."
            )
        text = str(int(val) if isinstance(val, bool) else val)
        if not re.fullmatch(r"[A-Za-z0-9_.:/ \t-]*", text):  # numbers, names, lists of them
            raise ValueError(f"sysctl {key}: {text!r} is no value a sysctl takes")
        out[str(key)] = text
    return out


class LabSpec(Strict):
    """A lab file: what network to build."""

    name: LabName
    topology: Topology | None = None
    nodes: list[Node] = []
    links: list[Link] = []
    link_defaults: LinkAttrs = LinkAttrs()
    routing: Routing = Routing()
    addressing: Addressing = Addressing()
    check: Check = Check()
    placement: Placement | None = None  # only read by netrig.cluster (labs across hosts)
    sysctls: Annotated[dict[str, str | int | float | bool], AfterValidator(_net_sysctls)] = Field(
        default={},
        description="extra per-namespace sysctls for every node, e.g. net.ipv4.ip_default_ttl: 255",
    )

    @model_validator(mode="after")
    def _something_to_build(self) -> LabSpec:
        if self.topology is None and not self.nodes:
            raise ValueError("a lab needs a `topology:` or a `nodes:` list (or both)")
        return self
