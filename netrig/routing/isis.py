"""isis: IS-IS by FRR (isisd + zebra per node), level 2 only, IPv4 and IPv6.

One IS-IS instance per node, system id from the node's index (49.0001.0000.0000.00NN.00),
wide metrics, every link point-to-point with the lab file's link `cost` as its metric (a
port towards a switch node stays broadcast), and the loopback passive, so its addresses are
advertised without hellos on `lo`.

    netrig exec LAB n1 -- vtysh -c 'show isis neighbor'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from netrig.routing import register
from netrig.routing._frr import RTPROT_ISIS, FrrOptions, FrrProtocol, cost, point_to_point

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

AREA = "49.0001"
INSTANCE = "netrig"


class IsisOptions(FrrOptions):
    hello: int = Field(1, ge=1, le=600, description="seconds between hellos (FRR: 3)")
    hello_multiplier: int = Field(
        3, ge=2, le=100, description="hellos missed before an adjacency is down (FRR: 10)"
    )
    spf_interval: int = Field(
        1, ge=1, le=120, description="minimum seconds between SPF runs (FRR: 1)"
    )
    lsp_gen_interval: int = Field(
        1, ge=1, le=120, description="minimum seconds between regenerations of an LSP (FRR: 30)"
    )


@register
class Isis(FrrProtocol[IsisOptions]):
    name = "isis"
    summary = "IS-IS level 2 (FRR), point-to-point links, link costs from the file"
    Options = IsisOptions
    daemons = ("isisd",)
    rtprot = RTPROT_ISIS

    def config(self, lab: Lab, node: str, daemon: str) -> str:
        o = self.options
        plan_node = lab.plan.node(node)
        families = self.node_families(lab, node)
        enable = [f" {'ip' if f == 4 else 'ipv6'} router isis {INSTANCE}" for f in families]
        sysid = f"{plan_node.index:012d}"
        # the intervals come before `net`: the first LSP is scheduled when the area gets
        # its address, with the interval set by then (FRR's default: 30 s)
        out = [
            f"router isis {INSTANCE}",
            " is-type level-2-only",
            " metric-style wide",
            f" lsp-gen-interval {o.lsp_gen_interval}",
            f" spf-interval {o.spf_interval}",
            *([" log-adjacency-changes"] if o.debug else []),
            f" net {AREA}.{sysid[0:4]}.{sysid[4:8]}.{sysid[8:12]}.00",
            "exit",
        ]
        for iface in plan_node.ifaces:
            out += [
                f"interface {iface.name}",
                *enable,
                " isis circuit-type level-2-only",
                *([" isis network point-to-point"] if point_to_point(lab, iface) else []),
                f" isis hello-interval {o.hello}",
                f" isis hello-multiplier {o.hello_multiplier}",
                f" isis metric {cost(lab, iface)}",
                *[f" {line}" for line in self.bfd_line("isis bfd")],
                "exit",
            ]
        out += ["interface lo", *enable, " isis passive", "exit"]
        if o.debug:
            out += [
                "debug isis adj-packets",
                "debug isis spf-events",
                "debug isis update-packets",
                "debug isis lsp-gen",
                "debug isis snp-packets",
            ]
        return "\n".join(out) + "\n"
