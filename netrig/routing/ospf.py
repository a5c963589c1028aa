"""ospf: OSPFv2 (IPv4) and OSPFv3 (IPv6) by BIRD 2, one daemon per node, one area.

Each node gets a generated bird.conf in its directory: router id = its IPv4 loopback
(else an address, else its index), every interface in the area with the lab file's link
`cost` (point-to-point on veth links, broadcast towards a switch), its loopbacks as
stub networks (OSPFv2) or as external routes from `direct` (OSPFv3 ignores `lo`, which has
no link-local address), and a kernel protocol per family that installs what OSPF learned
into the main table (proto bird). The control socket lives beside the config:
`birdc -s <node dir>/bird.ctl show ospf neighbors`.

With `daemon: frr` the same options (and `bfd`) configure FRR's ospfd and ospf6d instead:
see netrig.routing._ospf_frr.
"""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import TYPE_CHECKING, ClassVar

from netrig.lab import daemons
from netrig.routing import register
from netrig.routing._daemon import DaemonProtocol
from netrig.routing._ospf_frr import FrrOspf
from netrig.routing._ospf_options import OspfOptions

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.plan.model import IfacePlan

RTPROT_BIRD = 12


@register
class Ospf(DaemonProtocol[OspfOptions]):
    name = "ospf"
    summary = "OSPFv2 + OSPFv3 link-state routing (BIRD 2), one area, link costs from the file"
    Options = OspfOptions
    refuses_addressing = ("shared-subnet",)
    programs: ClassVar[dict[str, str]] = {"bird": "bird2"}
    convergence_timeout = 60.0

    def __new__(cls, options: OspfOptions) -> Ospf:
        """`daemon: frr` makes this plugin FRR's OSPF (same name, same options)."""
        if cls is Ospf and getattr(options, "daemon", "bird") == "frr":
            return FrrOspf(options)  # type: ignore[return-value]
        return super().__new__(cls)

    @property
    def opts(self) -> OspfOptions:
        assert isinstance(self.options, OspfOptions)
        return self.options

    def sysctls(self) -> dict[str, str]:
        """`hash:` is the kernel's, whichever suite routes: l4 (the default, as with FRR and
        ecmp) spreads flows over BIRD's multipath routes by five-tuple, l3 by addresses. It
        had been recorded in the plan and never set (policy 0: one path for every flow)."""
        policy = "1" if self.opts.hash == "l4" else "0"
        return {f"net.ipv{v}.fib_multipath_hash_policy": policy for v in (4, 6)}

    def config(self, lab: Lab, node: str) -> str:
        """bird.conf for one node."""
        plan_node = lab.plan.node(node)
        o = self.opts
        v4 = bool(plan_node.addresses(4))
        v6 = bool(plan_node.addresses(6))
        out = [
            f"# BIRD for {lab.name}/{node}, written by netrig",
            "log stderr all;",
            f"router id {_router_id(lab, node)};",
            "protocol device { }",
        ]
        if o.debug:
            out.append("debug protocols all;")
        ifaces = "\n".join(self._iface(lab, i) for i in plan_node.ifaces)
        # the kernel gets what OSPF learned; routes of `direct` stay inside BIRD
        kernel_export = "export where source != RTS_DEVICE;"
        merge = " merge paths on;" if o.ecmp else ""
        ecmp = "on" if o.ecmp else "off"
        if v4:
            out += [
                f"protocol kernel k4 {{{merge} ipv4 {{ import none; {kernel_export} }}; }}",
                "protocol ospf v2 ospf4 {",
                f"  ecmp {ecmp};",
                "  ipv4 { import all; export none; };",
                f"  area {o.area} {{",
                '    interface "lo" { stub yes; type ptp; };',
                ifaces,
                "  };",
                "}",
            ]
        if v6:
            out += [
                f"protocol kernel k6 {{{merge} ipv6 {{ import none; {kernel_export} }}; }}",
                'protocol direct lo6 { ipv6; interface "lo"; }',
                "protocol ospf v3 ospf6 {",
                f"  ecmp {ecmp};",
                "  ipv6 { import all; export where source = RTS_DEVICE; };",
                f"  area {o.area} {{",
                ifaces,
                "  };",
                "}",
            ]
        return "\n".join(out) + "\n"

    def _iface(self, lab: Lab, iface: IfacePlan) -> str:
        o = self.opts
        kind = "broadcast" if lab.plan.node(iface.peer).kind == "switch" else "ptp"
        cost = lab.plan.links[iface.link].cost
        dead = f" dead {o.dead};" if o.dead else ""
        # a segment's DR is elected after `wait` (BIRD: 4 hellos, 40 s), and its routers
        # start together, each saying hello at once: 2 s (BIRD's least) hears them all.
        # A switched lab of 3 routers had not converged within 60 s; now in ~15 s
        wait = " wait 2;" if kind == "broadcast" else ""
        return (
            f'    interface "{iface.name}" {{ type {kind}; cost {cost}; hello {o.hello};{dead}'
            f"{wait} }};"
        )

    def start(self, lab: Lab) -> None:
        daemons.require_tools("bird", package="bird2")
        self.convergence_timeout = type(self).convergence_timeout + self.opts.settle
        for node in self.watch(lab).nodes:
            where = lab.node_dir(node)
            conf = daemons.write_file(lab, node, "bird.conf", self.config(lab, node))
            argv = ["bird", "-f", "-c", conf, "-s", f"{where}/bird.ctl", "-P", f"{where}/bird.pid"]
            daemons.start(lab, node, "bird", argv)

    def is_ours(self, route: daemons.Route) -> bool:
        return route.protocol == RTPROT_BIRD


def _router_id(lab: Lab, node: str) -> str:
    """The node's IPv4 loopback (unique in the lab), else its first IPv4, else its index."""
    addrs = lab.plan.node(node).addresses(4)
    return addrs[0] if addrs else str(IPv4Address(lab.plan.node(node).index))
