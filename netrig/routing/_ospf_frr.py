"""OSPF by FRR (`routing: {protocol: ospf, daemon: frr}`): ospfd (OSPFv2, IPv4) and ospf6d
(OSPFv3, IPv6) beside zebra on every node; `netrig.routing.ospf` hands this class the file's
options when they say `daemon: frr` (BIRD stays the default).

One area; every interface in it with the link's `cost`, point-to-point on veth links
(broadcast towards a switch node), hello and dead intervals from the options; the loopback
is in the area as a passive interface, so its addresses are advertised.

    netrig exec LAB n1 -- vtysh -c 'show ip ospf neighbor'
"""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import TYPE_CHECKING

from netrig.routing._frr import RTPROT_OSPF, FrrProtocol, cost, point_to_point, router_id
from netrig.routing._ospf_options import OspfOptions

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

# FRR's defaults (LSAs at most every 5 s, accepted at most every 1 s) hold a lab back by
# seconds at start-up and after a change; a lab's handful of routers needs no damping
LSA_INTERVAL = 100  # ms between originations of one LSA (ospfd)
LSA_MIN_ARRIVAL = 50  # ms between accepted copies of one LSA
RETRANSMIT = 1  # s before an unacknowledged LSA is sent again (FRR: 5)


class FrrOspf(FrrProtocol[OspfOptions]):
    name = "ospf"
    summary = "OSPFv2 + OSPFv3 (FRR ospfd, ospf6d), one area, link costs from the file"
    daemons = ("ospfd", "ospf6d")
    rtprot = RTPROT_OSPF

    def node_daemons(self, lab: Lab, node: str) -> list[str]:
        return [
            d
            for d, f in zip(self.daemons, (4, 6), strict=True)
            if f in self.node_families(lab, node)
        ]

    def config(self, lab: Lab, node: str, daemon: str) -> str:
        o = self.options
        v6 = daemon == "ospf6d"
        area = str(IPv4Address(o.area))
        dead = o.dead or 4 * o.hello
        out = []
        for iface in lab.plan.node(node).ifaces:
            kind = "point-to-point" if point_to_point(lab, iface) else "broadcast"
            if v6:
                lines = [
                    f"ipv6 ospf6 area {area}",
                    f"ipv6 ospf6 network {kind}",
                    f"ipv6 ospf6 hello-interval {o.hello}",
                    f"ipv6 ospf6 dead-interval {dead}",
                    f"ipv6 ospf6 retransmit-interval {RETRANSMIT}",
                    f"ipv6 ospf6 cost {cost(lab, iface)}",
                    *self.bfd_line("ipv6 ospf6 bfd"),
                ]
            else:
                lines = [
                    f"ip ospf area {area}",
                    f"ip ospf network {kind}",
                    f"ip ospf hello-interval {o.hello}",
                    f"ip ospf dead-interval {dead}",
                    f"ip ospf retransmit-interval {RETRANSMIT}",
                    f"ip ospf cost {cost(lab, iface)}",
                    *self.bfd_line("ip ospf bfd"),
                ]
            out += [f"interface {iface.name}", *[f" {line}" for line in lines], "exit"]
        rid = router_id(lab, node)
        paths = 64 if o.ecmp else 1
        if v6:
            # OSPFv3 runs on nothing without a link-local address (lo): the loopback's
            # addresses go in as external routes
            out += [
                "router ospf6",
                f" ospf6 router-id {rid}",
                " redistribute connected",
                f" maximum-paths {paths}",
                " timers throttle spf 0 50 1000",
                f" timers lsa min-arrival {LSA_MIN_ARRIVAL}",
                *([" log-adjacency-changes detail"] if o.debug else []),
                "exit",
            ]
        else:
            out += [
                "interface lo",
                f" ip ospf area {area}",
                " ip ospf passive",
                "exit",
                "router ospf",
                f" ospf router-id {rid}",
                f" maximum-paths {paths}",
                " timers throttle spf 0 50 1000",
                f" timers throttle lsa all {LSA_INTERVAL}",
                f" timers lsa min-arrival {LSA_MIN_ARRIVAL}",
                *([" log-adjacency-changes detail"] if o.debug else []),
                "exit",
            ]
        return "\n".join(out) + "\n"
