"""pen: a small TCP load balancer, optionally with direct server return (seed 004).

    - {pen: {backends: [web1, web2]}}                # proxy: every byte passes the balancer
    - {pen: {backends: [web1, web2], dsr: true}}     # DSR: replies bypass the balancer

Proxy mode runs `pen -f -r -x N PORT b1:p b2:p` (round robin, no client tracking).

With `dsr: true` pen takes frames for a virtual address (VIP) off the wire through a raw
packet socket (`-O "dsr_if IFACE"`), rewrites only the destination MAC to a backend's, and
sends them out again; the backend owns the VIP on its loopback and answers the client
directly. So the balancer and its backends must share a subnet (one switch), and netrig
sets the lab up as the seed did by hand:
- backends: the VIP on `lo`, `arp_ignore=1` and `arp_announce=2` (they must not answer ARP
  for it, nor announce it);
- the balancer: no forwarding on its DSR interface (its kernel silently drops the frames
  pen forwards, instead of routing them or answering with ICMP), the VIP not configured;
- every other host: a route to the VIP via the balancer, next to its route to the
  balancer's own address.
The VIP is `vip:`, by default an unused address of the loopback half of the IPv4 pool.
pen balances by a hash of the client's address and port; DSR is IPv4 only (proxy mode listens
on IPv6 too, where the node has it).
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import functools
import socket
import struct
from ipaddress import IPv4Address, IPv4Network, ip_address, ip_interface, ip_network
from typing import ClassVar

from pydantic import Field

from netrig.lab import daemons, netns, nlwire
from netrig.lab.build import LabError
from netrig.lab.procs import socket_inodes
from netrig.lab.runtime import LabRuntime as Lab
from netrig.plan.model import LabPlan
from netrig.services import (
    BalancerOptions,
    KeyPath,
    Service,
    backend_address,
    register,
    serves_ipv6,
    shared_address,
)

SIOCETHTOOL, ETHTOOL_STXCSUM = 0x8946, 0x17
PROBE_TIMEOUT = 0.3  # seconds for one connection through the VIP during start-up


class PenOptions(BalancerOptions):
    dsr: bool = Field(False, description="direct server return through a raw packet socket")
    vip: IPv4Address | None = Field(None, description="DSR: the virtual address clients use")
    max_clients: int = Field(2048, ge=1, le=1_000_000, description="client table size (-c)")


@register
class Pen(Service[PenOptions]):
    name = "pen"
    summary = "pen TCP load balancer, proxy or direct server return (DSR)"
    Options = PenOptions

    programs: ClassVar[dict[str, str]] = {"pen": "pen"}

    def check(self, options: PenOptions, plan: LabPlan, node: str) -> list[tuple[KeyPath, str]]:
        o = options
        problems = super().check(o, plan, node)
        if problems or not o.dsr:
            if o.vip is not None and not o.dsr:
                problems.append((("vip",), "vip applies with dsr: true"))
            return problems
        for i, backend in enumerate(o.backends):
            if shared_address(plan, node, backend) is None:
                problems.append(
                    (
                        ("backends", i),
                        f"dsr: backend {backend!r} shares no subnet with {node} (DSR rewrites "
                        "only MAC addresses: put the balancer and its backends on one switch)",
                    )
                )
        if o.vip is not None and _in_use(plan, str(o.vip)):
            problems.append((("vip",), f"{o.vip} is already an address of the lab"))
        return problems

    def backend_port(self, options: PenOptions) -> int | None:
        """With DSR a backend answers on the VIP's own port (pen forwards frames as sent)."""
        return options.port if options.dsr else options.backend_port

    def address(
        self, options: PenOptions, plan: LabPlan, node: str, pool: IPv4Network | None
    ) -> str | None:
        o = options
        if not o.dsr:
            return None
        if o.vip is not None:
            return str(o.vip)
        if pool is None:
            raise ValueError("dsr needs an IPv4 VIP and the lab has no IPv4 pool; set vip:")
        # the top of the loopback half, counting down by node index: never a loopback
        top = int(pool.network_address) + pool.num_addresses // 2 - 1
        vip = str(IPv4Address(top - plan.node(node).index))
        if _in_use(plan, vip):
            raise ValueError(f"the default VIP {vip} is taken in this small pool; set vip:")
        return vip

    def argv(self, lab: Lab, node: str, o: PenOptions, vip: str | None) -> list[str]:
        argv = ["pen", "-f", "-r", "-x", str(o.max_connections), "-c", str(o.max_clients)]
        if o.dsr:
            assert vip is not None
            return [*argv, "-O", f"dsr_if {dsr_iface(lab.plan, node, o)}", f"{vip}:{o.port}"] + [
                str(shared_address(lab.plan, node, b)) for b in o.backends
            ]
        # one socket: pen takes one listening address, and `:::PORT` (not `[::]:PORT`,
        # which it cannot read) is [::] with IPv4 mapped in, both families
        listen = f":::{o.port}" if serves_ipv6(lab.plan, node) else str(o.port)
        return [*argv, listen] + [
            f"{backend_address(lab.plan, node, b)}:{o.backend_port}" for b in o.backends
        ]

    def start(self, lab: Lab, node: str, options: PenOptions) -> None:
        o = options
        vip = _vip(lab, node)
        if o.dsr:
            if vip is None:

                raise LabError(f"{node}/pen: dsr needs an IPv4 VIP; set `vip:`")
            _prepare_dsr(lab, node, o, vip)
        # pen raises its own core size limit: run it in the node's directory (env -C execs,
        # so the PID stays pen's), where a core from a crash goes away with the lab
        argv = ["env", "-C", lab.node_dir(node), *self.argv(lab, node, o, vip)]
        daemons.start(lab, node, "pen", argv)

    def ready(self, lab: Lab, node: str, options: PenOptions, pid: int) -> bool:
        o = options
        if not o.dsr:
            return super().ready(lab, node, o, pid)
        if not _has_packet_socket(pid):
            return False
        vip = _vip(lab, node)
        clients = [h for h in _vip_clients(lab.plan, node, o)]
        if not clients or vip is None:
            return True  # nobody to probe from: the packet socket is all we can see
        return _connects(lab.ns(clients[0]), vip, o.port)


def dsr_iface(plan: LabPlan, node: str, o: PenOptions) -> str:
    """The balancer's interface on the subnet of its first backend."""
    target = ip_address(shared_address(plan, node, o.backends[0]) or "0.0.0.0")
    for iface in plan.node(node).ifaces:
        if any(target in ip_interface(c).network for c in iface.addrs):
            return iface.name
    raise KeyError(f"{node} has no interface on the subnet of {o.backends[0]}")


def _vip(lab: Lab, node: str) -> str | None:
    return next((s.address for s in lab.plan.node(node).services if s.kind == "pen"), None)


def _in_use(plan: LabPlan, addr: str) -> bool:
    return any(addr in n.addresses(4) for n in plan.nodes.values())


def _vip_clients(plan: LabPlan, node: str, o: PenOptions) -> list[str]:
    """Hosts that reach the VIP through the balancer: all but it and its backends."""
    return [
        n.name
        for n in plan.hosts()
        if n.name != node and n.name not in o.backends and n.addresses(4)
    ]


def _prepare_dsr(lab: Lab, node: str, o: PenOptions, vip: str) -> None:
    plan = lab.plan
    iface = dsr_iface(plan, node, o)
    netns.in_netns(lab.ns(node), lambda: netns.write_sysctl(f"net.ipv4.conf.{iface}.forwarding", 0))
    wire = plan.node(node).iface(iface)
    netns.in_netns(lab.ns(wire.peer), lambda: _tx_checksum_off(wire.peer_iface))
    for backend in o.backends:
        ifaces = ["all", *(i.name for i in plan.node(backend).ifaces)]

        def on_backend(names: list[str] = ifaces) -> None:
            for name in names:
                netns.write_sysctl(f"net.ipv4.conf.{name}.arp_ignore", 1)
                netns.write_sysctl(f"net.ipv4.conf.{name}.arp_announce", 2)
            _send(nlwire.new_addr(1, vip, 32, what=f"VIP {vip} on lo"))

        netns.in_netns(lab.ns(backend), on_backend)
    for host in _vip_clients(plan, node, o):
        hop = _next_hop(plan, host, node)
        if hop is None:
            continue
        loopbacks = [c.split("/")[0] for c in plan.node(host).loopbacks if ":" not in c]
        request = nlwire.new_route(
            vip, 32, [hop], prefsrc=loopbacks[0] if loopbacks else None, what=f"route to {vip}"
        )
        netns.in_netns(lab.ns(host), functools.partial(_send, request))


def _tx_checksum_off(ifname: str) -> None:
    """No checksum offload on a veth end of the calling thread's namespace (ethtool -K IF tx
    off): the stack then fills TCP checksums in before the frame crosses, so pen's raw
    socket reads (and forwards) complete segments, not ones the backend drops as corrupt."""
    request = array.array("B", struct.pack("=II", ETHTOOL_STXCSUM, 0))
    ifreq = struct.pack("16sP16x", ifname.encode(), request.buffer_info()[0])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)


def _send(request: nlwire.Request) -> None:
    """One netlink request in the calling thread's namespace; an existing object is fine."""
    with nlwire.RtnlSocket() as sock:
        errors = sock.send_batch([request])
    real = [e for e in errors if "exist" not in str(e).lower()]
    if real:

        raise LabError(f"{request.what}: {real[0]}")


def _next_hop(plan: LabPlan, host: str, node: str) -> tuple[str, int] | None:
    """How HOST reaches NODE: directly on a shared subnet, else its planned route to it."""
    direct = shared_address(plan, host, node)
    if direct is not None:
        for iface in plan.node(host).ifaces:
            if any(ip_address(direct) in ip_interface(c).network for c in iface.addrs):
                return direct, iface.index
    target = ip_address(plan.addr(node, 4))
    best = None
    for route in plan.node(host).routes:
        net = ip_network(route.dst, strict=False)
        if target in net and (best is None or net.prefixlen > best[0]):
            best = (net.prefixlen, route.nexthops[0])
    return best[1] if best else None


def _has_packet_socket(pid: int) -> bool:

    mine = socket_inodes(pid)
    try:
        with open(f"/proc/{pid}/net/packet") as fh:
            lines = fh.read().splitlines()[1:]
    except OSError:
        return False
    return any(line.split()[-1] in mine for line in lines if line.split())


def _connects(ns: str, addr: str, port: int) -> bool:
    """One TCP connection to addr:port from namespace NS succeeds (through the balancer)."""

    def attempt() -> bool:
        with contextlib.suppress(OSError), socket.create_connection((addr, port), PROBE_TIMEOUT):
            return True
        return False

    return netns.in_netns(ns, attempt)
