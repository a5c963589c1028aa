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

    netrig exec LAB n1 -- vtysh -c 'show bgp summary'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from netrig.routing import register
from netrig.routing._frr import RTPROT_BGP, FrrOptions, FrrProtocol, router_id

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

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

    @model_validator(mode="after")
    def _hold_after_keepalive(self) -> BgpOptions:
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
    summary = "eBGP (FRR), a private AS per node or per tier, unnumbered sessions, ECMP"
    Options = BgpOptions
    daemons = ("bgpd",)
    rtprot = RTPROT_BGP

    def asn(self, lab: Lab, node: str) -> int:
        if self.options.asn == "per-tier" and _tier(node) in SHARED_TIERS:
            return ASN_BASE + SHARED_TIERS.index(_tier(node))  # below every node index
        return ASN_BASE + 100 + lab.plan.node(node).index

    def config(self, lab: Lab, node: str, daemon: str) -> str:
        o = self.options
        unnumbered = o.unnumbered if o.unnumbered is not None else not o.bfd
        plan_node = lab.plan.node(node)
        families = self.node_families(lab, node)
        # nodes of a shared AS take routes that their AS originated (the other spines'
        # loopbacks), not routes that only passed through it
        shared = self.asn(lab, node) < ASN_BASE + 100
        out = [
            f"router bgp {self.asn(lab, node)}",
            f" bgp router-id {router_id(lab, node)}",
            " no bgp ebgp-requires-policy",
            " no bgp default ipv4-unicast",
            " bgp bestpath as-path multipath-relax",
            " bgp bestpath compare-routerid",
            *([" bgp log-neighbor-changes"] if o.debug else []),
            " neighbor fabric peer-group",
            " neighbor fabric remote-as external",
            f" neighbor fabric timers {o.keepalive} {o.hold}",
            f" neighbor fabric timers connect {o.connect_retry}",
            " neighbor fabric advertisement-interval 0",
        ]
        peers: dict[int, list[str]] = {4: [], 6: []}
        for iface in plan_node.ifaces:
            if unnumbered:
                out.append(f" neighbor {iface.name} interface peer-group fabric")
                continue
            peer = lab.plan.node(iface.peer).iface(iface.peer_iface)
            for cidr in peer.addrs:
                addr = cidr.split("/")[0]
                peers[6 if ":" in addr else 4].append(addr)
                out.append(f" neighbor {addr} peer-group fabric")
                out += [f" {line}" for line in self.bfd_line(f"neighbor {addr} bfd")]
        for family in families:
            out += [
                f" address-family ipv{family} unicast",
                "  redistribute connected",
                f"  maximum-paths {o.maximum_paths}",
                "  neighbor fabric activate",
                *(["  neighbor fabric allowas-in origin"] if shared else []),
            ]
            if not unnumbered:  # a session of one family carries only that family
                other = peers[10 - family]
                out += [f"  no neighbor {addr} activate" for addr in other]
            out.append(" exit-address-family")
        out.append("exit")
        if o.debug:
            out += ["debug bgp neighbor-events", "debug bgp updates"]
        return "\n".join(out) + "\n"


def _tier(node: str) -> str:
    """`s` for s12: the letters before the number, as the fabric generators name nodes."""
    return node.rstrip("0123456789")
