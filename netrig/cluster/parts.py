"""A lab across hosts: the plan split per host, every cut link a VXLAN tunnel.

Routing daemons (babel, ospf) start on each host once its tunnels exist, with the nodes
as planned (`PartPlan`: a peer on another host can be looked up for the config).

The client splits the full plan (`split`): each host gets the nodes placed on it, the links
between them, and for every link to another host a `Tunnel` (one VNI per link, MTU 50
bytes under the link's for the IPv4 underlay's VXLAN header), plus the routes and
neighbour entries that use a tunnel (`deferred`: they need the tunnel to exist). The plan's
routes were computed for the whole lab, so static routing works across hosts unchanged.

On each host (`build_part`, a Dask task) the ordinary lab core builds the part; then each
tunnel is created directly inside its node's namespace with the planned name, ifindex and
MAC (its UDP socket stays in the host's underlay namespace), and gets its addresses, the
deferred neighbours and routes. It goes with the node's namespace, which the ledger records.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from ipaddress import IPv4Network
from typing import Any

from netrig import routing
from netrig.cluster.host import HostConfig, current
from netrig.lab import netns, nlwire
from netrig.lab.build import BadInput, LabError, ipv4_forwarding, route_requests
from netrig.lab.ledger import Ledger, save_json
from netrig.plan.model import LabPlan, LinkPlan, NetworkPlan, NodePlan, RoutePlan
from netrig.rig import Lab

VXLAN_PORT = 4789
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8
DEFAULT_MTU = 1500
SWITCHED = ("bridge",)  # a segment across hosts (STP over tunnels) is not done yet


@dataclass
class Tunnel:
    node: str
    iface: str
    index: int
    mac: str
    mtu: int
    vni: int
    remote_host: str
    addrs: list[str]
    master: int | None = None
    remote: str = ""  # the peer host's underlay address, filled in from its facts
    peer: str = ""  # the node at the other end, and its end's ifindex (for a trace)
    peer_index: int = 0
    rate: int | None = None  # the link's rate limit (bit/s): a token bucket on this end
    burst: int | None = None


@dataclass
class LabPart:
    host: str
    plan: LabPlan
    tunnels: list[Tunnel] = field(default_factory=list)
    deferred_routes: dict[str, list[RoutePlan]] = field(default_factory=dict)
    deferred_neighbors: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)
    # a routing daemon's protocol: the part is built without it, and its daemons start once
    # the tunnels exist, on the nodes as planned (tunnels included)
    daemons: LabPlan | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Shipped with the routes as plain tuples: a 500-node part of a 2,000-node ring has
        52,000 routes, and unpickling them as dataclasses took twice as long."""
        state = dict(self.__dict__)
        nodes = self.plan.nodes
        state["plan"] = replace(self.plan, nodes={
            name: replace(node, routes=[]) for name, node in nodes.items()})
        state["routes"] = {name: [(r.dst, r.nexthops) for r in node.routes]
                           for name, node in nodes.items() if node.routes}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        routes = state.pop("routes")
        self.__dict__.update(state)
        for name, planned in routes.items():
            self.plan.nodes[name].routes = [RoutePlan(dst, hops) for dst, hops in planned]


@dataclass
class PartPlan(LabPlan):
    """A host's nodes as planned (tunnel ends included), for its routing daemons: the
    nodes of other hosts that its links lead to can be looked up (a daemon's config
    names its peers), but only this host's nodes are in `nodes`, so only theirs start."""

    elsewhere: dict[str, NodePlan] = field(default_factory=dict)

    def node(self, name: str) -> NodePlan:
        return self.elsewhere[name] if name in self.elsewhere else super().node(name)


def vni_of(lab: str, link: int) -> int:
    """One VNI per link, different between labs (VNIs share the underlay's UDP socket)."""
    return 1 + (zlib.crc32(lab.encode()) % 3000) * 5000 + link


def check_spreadable(plan: LabPlan) -> None:
    """BadInput (the file's, exit 2) for a lab that cannot be spread over hosts yet."""
    switches = [n.name for n in plan.nodes.values() if n.kind == "switch"]
    if plan.protocol in SWITCHED or switches:
        what = f"switch node {switches[0]}" if switches else f"routing {plan.protocol}"
        raise BadInput(f"lab {plan.name}: {what}: a switched segment across hosts is not "
                       "done yet; bring the lab up on one host (without --cluster)")


def split(plan: LabPlan, where: dict[str, str]) -> dict[str, LabPart]:
    """Each host's part of the plan (see the module docstring)."""
    check_spreadable(plan)
    daemons = routing.make(plan.protocol, plan.routing_options).runs_daemons()
    parts = {}
    for host in dict.fromkeys(where.values()):
        mine = {n for n, h in where.items() if h == host}
        renumber = {}
        links: list[LinkPlan] = []
        for i, link in enumerate(plan.links):
            if link.a in mine and link.b in mine:
                renumber[i] = len(links)
                links.append(link)
        nodes: dict[str, NodePlan] = {}
        part = LabPart(host, plan)
        for name, node in plan.nodes.items():
            if name not in mine:
                continue
            cut = [i for i in node.ifaces if where[i.peer] != host]
            cut_index = {i.index for i in cut}
            bridge = node.bridge
            for iface in cut:
                link = plan.links[iface.link]
                part.tunnels.append(Tunnel(
                    name, iface.name, iface.index, iface.mac,
                    (link.mtu or DEFAULT_MTU) - VXLAN_OVERHEAD, vni_of(plan.name, iface.link),
                    where[iface.peer], list(iface.addrs),
                    bridge.index if bridge and iface.master == bridge.name else None,
                    peer=iface.peer,
                    peer_index=plan.nodes[iface.peer].iface(iface.peer_iface).index,
                    rate=link.rate, burst=link.burst,
                ))
            part.deferred_routes[name] = [
                r for r in node.routes if any(ix in cut_index for _, ix in r.nexthops)
            ]
            part.deferred_neighbors[name] = [n for n in node.neighbors if n[0] in cut_index]
            nodes[name] = replace(
                node,
                ifaces=[replace(i, link=renumber[i.link]) for i in node.ifaces
                        if i.index not in cut_index],
                routes=[r for r in node.routes
                        if not any(ix in cut_index for _, ix in r.nexthops)],
                neighbors=[n for n in node.neighbors if n[0] not in cut_index],
            )
        networks = [
            NetworkPlan(n.prefixes, [m for m in n.members if m[0] in mine], n.cost)
            for n in plan.networks
            if any(m[0] in mine for m in n.members)
        ]
        part.plan = replace(plan, nodes=nodes, links=links, networks=networks,
                            reachability="none")
        if daemons:  # the whole plan's links: the daemons' link costs are looked up there
            peers = {i.peer for n in nodes for i in plan.nodes[n].ifaces} - set(nodes)
            part.daemons = PartPlan(**{
                **vars(replace(plan, nodes={n: plan.nodes[n] for n in nodes})),
                "elsewhere": {p: plan.nodes[p] for p in peers},
            })
            part.plan = replace(part.plan, protocol="none", routing_options={})
        parts[host] = part
    return parts


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def build_part(part: LabPart, lease: str | None = None) -> dict[str, Any]:
    """Dask task on the part's host: build it, then its tunnels. Returns what was built.
    LEASE: the key of the sweep's client at the scheduler (`netrig run --cluster`): the
    worker removes the part once that key is gone (the client died); None (`netrig up
    --cluster`): the part stays until `netrig down`."""
    from netrig.cluster.keeping import lab_thread as _lab_thread
    from netrig.cluster.keeping import part_leases as _part_leases

    def work() -> dict[str, Any]:
        _part_leases.pop(part.plan.name, None)
        built = _build(part)
        if lease:
            _part_leases[part.plan.name] = lease
        return built

    return _lab_thread().call(work)


def _build(part: LabPart) -> dict[str, Any]:
    config = current()
    if part.tunnels and not config.underlay_addr:
        raise LabError(f"host {config.name} has no underlay address for its tunnels "
                       "(netrig worker --underlay-addr ADDR)")
    started = time.perf_counter()
    plan = config.localize(part.plan)
    ledger = config.ledger()
    lab = Lab(plan, ledger)
    seconds: dict[str, float] = {}
    try:
        timings = lab.up(check_reachability=False)
        seconds["lab"] = time.perf_counter() - started
        seconds.update({k: getattr(timings, k) for k in ("namespaces", "links", "config")})
        try:
            mark = time.perf_counter()
            for t in part.tunnels:
                _tunnel(t, plan.nodes[t.node].ns, config.underlay_ns, config.underlay_addr)
            for name in plan.nodes:
                _configure(plan.nodes[name], part, name)
            for t in part.tunnels:  # the lab core limits the links it builds; these are ours
                if t.rate:
                    tunnel_rate(plan.nodes[t.node].ns, t.index, t.rate, t.burst)
            seconds["tunnels"] = time.perf_counter() - mark
            save_json(os.path.join(ledger.lab_dir(plan.name), "tunnels.json"),
                      [asdict(t) for t in part.tunnels])
            save_json(os.path.join(ledger.lab_dir(plan.name), "deferred.json"), {
                "routes": {n: [asdict(r) for r in rs] for n, rs in part.deferred_routes.items()},
                "neighbors": part.deferred_neighbors,
            })  # what a tunnel brought back up needs again (`netrig link --cluster`)
            if part.daemons is not None:
                with_tunnels = Lab(config.localize(part.daemons), ledger)
                with_tunnels.protocol.start(with_tunnels)
        except BaseException:
            lab.down()
            raise
    finally:
        ledger.close()
    seconds["total"] = time.perf_counter() - started
    return {"host": config.name, "nodes": len(plan.nodes), "tunnels": len(part.tunnels),
            "seconds": seconds}


def tunnel_rate(ns: str, index: int, rate: int | None, burst: int | None = None) -> None:
    """A token bucket of RATE bit/s on a tunnel end (replacing any); None removes it (as
    `faults.set_rate` does on a veth end)."""
    from netrig.lab import faults

    try:
        faults.replace_rate(ns, index, rate, burst)
    except Exception as exc:  # pyroute2's NetlinkError
        raise LabError(f"rate on tunnel end {index} in {ns}: {exc}") from exc


def _broadcast(cidr: str) -> str | None:
    """An IPv4 subnet's broadcast address, as the lab core gives a veth end (batmand sends
    its originator messages to it: without one they never left a tunnel end)."""
    addr, plen = cidr.split("/")
    if ":" in addr or int(plen) >= 31:
        return None
    return str(IPv4Network(cidr, strict=False).broadcast_address)


def _tunnel(t: Tunnel, ns: str, underlay_ns: str | None, local: str | None) -> None:
    """The VXLAN device, born in the node's namespace with its planned name and ifindex."""
    where = ["-n", underlay_ns] if underlay_ns else []
    dev = ["dev", "ul0"] if underlay_ns else []
    _ip(*where, "link", "add", t.iface, "index", str(t.index),
        *(["address", t.mac] if t.mac else []), "mtu", str(t.mtu), "netns", ns,
        "type", "vxlan", "id", str(t.vni), "local", str(local), "remote", t.remote,
        "dstport", str(VXLAN_PORT), *dev)


def _configure(node: NodePlan, part: LabPart, name: str) -> None:
    """Addresses, neighbours and routes of the node's tunnels (after they exist)."""
    tunnels = [t for t in part.tunnels if t.node == name]
    if not tunnels:
        return
    reqs = []
    forwarding4 = ipv4_forwarding(part.plan)  # as every interface the lab core brings up
    for t in tunnels:
        reqs.append(nlwire.set_link(t.index, up=True, master=t.master, forwarding4=forwarding4,
                                    what=f"{t.iface} up"))
        for cidr in t.addrs:
            addr, plen = cidr.split("/")
            reqs.append(nlwire.new_addr(t.index, addr, int(plen), broadcast=_broadcast(cidr),
                                        what=f"{cidr} on {t.iface}"))
    for index, addr, mac in part.deferred_neighbors.get(name, []):
        reqs.append(nlwire.new_neighbor(index, addr, mac, what=f"neighbour {addr}"))
    reqs += route_requests(replace(node, routes=part.deferred_routes.get(name, [])))

    def send() -> list[nlwire.NetlinkError]:
        with nlwire.RtnlSocket() as sock:
            return sock.send_batch(reqs)

    errors = netns.in_netns(node.ns, send)
    if errors:
        raise LabError(f"tunnels of {name}: {errors[0]}")


# ------------------------------------------------------------------ acting on a spread lab


@contextlib.contextmanager
def attached(name: str, *nodes: str) -> Iterator[tuple[HostConfig, Lab] | None]:
    """This host's part of lab NAME, attached through a ledger connection of its own
    (closed on leaving): (host config, lab), or None when this host has no lab NAME or,
    if NODES are named, none of them."""
    config = current()
    ledger = Ledger(config.state_dir)
    try:
        if ledger.lab(name) is None:
            yield None
            return
        lab = Lab.attach(name, ledger)
        yield None if nodes and not any(n in lab.plan.nodes for n in nodes) else (config, lab)
    finally:
        ledger.close()


def exec_part(name: str, node: str, argv: list[str], timeout: float | None = None
              ) -> tuple[str, int, str, str] | None:
    """On every host: run ARGV in NODE if this host has it; (host, rc, stdout, stderr)."""
    with attached(name, node) as here:
        if here is None:
            return None
        config, lab = here
        try:
            done = lab.exec(node, argv, capture_output=True, timeout=timeout)
        except FileNotFoundError:
            return config.name, 127, "", f"netrig: {argv[0]}: command not found\n"
        return config.name, done.returncode, done.stdout, done.stderr


def labs_here() -> tuple[str, list[tuple[str, str, int, bool]]]:
    """On every host: (host, [(lab, state, nodes, kept for a sweep)]); a sweep's lab goes
    when the sweep ends, or when its client leaves the cluster (`tasks.reap`)."""
    from netrig.cluster.keeping import held

    config = current()
    ledger = Ledger(config.state_dir)
    try:
        return config.name, [(r.name, r.shown_state(), r.nodes, held(r.name))
                             for r in ledger.labs()]  # fmt: skip
    finally:
        ledger.close()


def trace_flows(name: str, dst: str, proto: str, dport: int,
                flows: list[tuple[int, str, int | None, str | None, int]]
                ) -> dict[str, Any] | None:
    """On every host: the hops of each flow (id, node, ingress ifindex, source address,
    source port) whose node is here, through this host's part of lab NAME, and where it
    goes on when it leaves by a tunnel: {"host", "flows": {id: {"hops", "reached",
    "error", "next", "from"}}}; None if this host has none of the flows' nodes."""
    from ipaddress import ip_address

    from netrig.lab.trace import IPPROTO, Tracer

    with attached(name) as here:
        if here is None:
            return None
        config, lab = here
        plan = lab.plan
        tunnels = _tunnels(lab.ledger.lab_dir(name))
    mine = [f for f in flows if f[1] in plan.nodes]
    if not mine:
        return None
    out: dict[int, dict[str, Any]] = {}
    with Tracer(plan) as tracer:
        for fid, node, iif, from_addr, sport in mine:
            if from_addr is None:  # the flow's first node: what connect() would choose
                try:
                    _t, attrs = tracer.route_get(node, dst, None, None, IPPROTO[proto], sport,
                                                 dport)
                    pref = attrs.get(nlwire.RTA_PREFSRC)
                    from_addr = str(ip_address(pref)) if pref else None
                except OSError:
                    from_addr = None
            path = tracer.trace(node, dst, proto, sport, dport, from_addr, iif)
            hops = [(h.node, h.out_iface) for h in path.hops]
            leaving = None
            if not path.reached and hops:
                last, oif = hops[-1]
                for t in tunnels:
                    if t["node"] == last and oif in (t["iface"], f"if{t['index']}"):
                        hops[-1] = (last, t["iface"])
                        leaving = (t["peer"], t["peer_index"], t["remote_host"])
            out[fid] = {"hops": hops, "reached": path.reached, "from": from_addr,
                        "error": None if leaving else path.error, "next": leaving}
    return {"host": config.name, "flows": out}


def link_part(name: str, a: str, b: str, up: bool, step: str = "ends") -> dict[str, Any] | None:
    """On every host: this host's ends of the A–B link of lab NAME down or up (None when
    neither node is here); a link within the host has both ends here, a cut link its
    tunnel end. Down keeps the routes through the end in the node's folder (the kernel
    drops them; the plan a host keeps has none); `step="routes"`, once every end is up
    again, puts them back. {"host", "ends": ["n3:eth1"], "tunnel", "error"}."""
    from netrig.lab import faults
    from netrig.plan.events import find_link
    from netrig.plan.model import UnknownName

    with attached(name, a, b) as found:
        if found is None:
            return None
        config, lab = found
        ledger = lab.ledger
        here = [n for n in (a, b) if n in lab.plan.nodes]
        done: dict[str, Any] = {"host": config.name, "ends": [], "error": None,
                                "tunnel": len(here) == 1}
        try:
            deferred = _deferred(ledger.lab_dir(name))
            ends: list[tuple[str, str, int, list[nlwire.Request]]] = []
            if len(here) == 2:
                link = find_link(lab.plan, a, b)
                for node, ifname in ((link.a, link.a_iface), (link.b, link.b_iface)):
                    index = lab.plan.node(node).iface(ifname).index
                    ends.append((node, ifname, index, [
                        nlwire.set_link(index, up=up, what=f"{ifname} of {node}"),
                        *faults.restore_requests(lab.plan, node, index)]))
            else:
                node, peer = here[0], b if here[0] == a else a
                tunnel = _tunnel_to(ledger.lab_dir(name), node, peer)
                if tunnel is None:
                    done["error"] = f"lab {name} has no link {a}–{b}"
                    return done
                index = int(tunnel["index"])
                reqs = [nlwire.set_link(index, up=up, master=tunnel.get("master") if up else None,
                                        what=f"{tunnel['iface']} of {node}")]
                for cidr in tunnel["addrs"]:  # what the kernel dropped: IPv6 addresses, ...
                    addr, plen = cidr.split("/")
                    reqs.append(nlwire.new_addr(index, addr, int(plen),
                                                broadcast=_broadcast(cidr), what=cidr))
                reqs += [nlwire.new_neighbor(ix, addr, mac, what=f"neighbour {addr}")
                         for ix, addr, mac in deferred["neighbors"].get(node, []) if ix == index]
                ends.append((node, tunnel["iface"], index, reqs))
            done["ends"] = [f"{node}:{ifname}" for node, ifname, _, _ in ends]
            for node, ifname, index, reqs in ends:
                if step == "routes":  # kept at down, and the planned ones through a tunnel
                    routes = [RoutePlan(r["dst"], [tuple(h) for h in r["nexthops"]])
                              for r in deferred["routes"].get(node, [])
                              if any(ix == index for _, ix in r["nexthops"])]
                    faults.send(lab, node, faults.saved_routes(lab, node, ifname) +
                                route_requests(replace(lab.plan.node(node), routes=routes)))
                elif up:
                    faults.send(lab, node, reqs)
                else:
                    keep = lab.plan.protocol != "none"  # "none" here: no routes, or a daemon's
                    if keep and not os.path.exists(faults.routes_file(lab, node, ifname)):
                        faults.save_routes(lab, node, ifname, index)  # not when down twice
                    faults.send(lab, node, reqs[:1])
        except (LabError, UnknownName) as exc:  # sent back as text: the client raises it
            done["error"] = str(exc).strip("'\"")
        return done


def _tunnels(lab_dir: str) -> list[dict[str, Any]]:
    """The tunnels this host's part of a lab has (as `build_part` saved them)."""
    try:
        with open(os.path.join(lab_dir, "tunnels.json")) as fh:
            return json.load(fh)
    except FileNotFoundError:
        return []


def _tunnel_to(lab_dir: str, node: str, peer: str) -> dict[str, Any] | None:
    return next((t for t in _tunnels(lab_dir) if t["node"] == node and t["peer"] == peer),
                None)


def _deferred(lab_dir: str) -> dict[str, Any]:
    try:
        with open(os.path.join(lab_dir, "deferred.json")) as fh:
            return json.load(fh)
    except FileNotFoundError:  # a part built before netrig wrote it: the tunnels' own only
        return {"routes": {}, "neighbors": {}}


def addr_part(name: str, node: str, family: int) -> str | None:
    """On every host: NODE's address (as `netrig trace` names a node), if NODE is here."""
    with attached(name, node) as here:
        if here is None:
            return None
        try:
            return here[1].plan.addr(node, family)
        except KeyError:  # UnknownName: the node has no address of that family
            return None
