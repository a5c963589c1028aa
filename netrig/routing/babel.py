"""babel: the Babel distance-vector protocol (RFC 8966) by babeld, one daemon per node.

Each node gets a generated babeld.conf in its directory: every interface of the node
(wired, with `rxcost` = 96 × the link's `cost`), the node's own addresses redistributed
(its loopbacks and link addresses; babeld announces local addresses by default and
nothing else), and its pid, state and control socket files beside the config, so nothing
is shared between nodes and no private /run is needed. IPv4 and IPv6 routes go into the
main table (proto babel), where `netrig trace` reads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from netrig.lab import daemons
from netrig.routing import register
from netrig.routing._daemon import DaemonOptions, DaemonProtocol

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

RTPROT_BABEL = 42
WIRED_RXCOST = 96  # babeld's default receive cost of a wired interface


class BabelOptions(DaemonOptions):
    hello_interval: float = Field(
        4.0, gt=0, le=600, description="seconds between hellos (babeld's default: 4)"
    )
    update_interval: float | None = Field(
        None, gt=0, le=3600, description="seconds between full updates (default: 4 × hello)"
    )
    link_detect: bool = Field(
        True, description="treat an interface without carrier as down at once (babeld -l)"
    )
    split_horizon: bool = True
    smoothing_half_life: float | None = Field(
        None,
        ge=0,
        le=3600,
        description="seconds; metric smoothing before switching to a better route (babeld: 4; "
        "0 switches at once: a restored link is used again in seconds, not ~30 s)",
    )
    debug: int = Field(0, ge=0, le=3, description="babeld -d: 1 dumps the routing table")


@register
class Babel(DaemonProtocol[BabelOptions]):
    name = "babel"
    summary = "Babel distance-vector routing (babeld), IPv4 and IPv6"
    Options = BabelOptions
    refuses_addressing = ("shared-subnet",)
    programs: ClassVar[dict[str, str]] = {"babeld": "babeld"}
    convergence_timeout = 60.0

    @property
    def opts(self) -> BabelOptions:
        assert isinstance(self.options, BabelOptions)
        return self.options

    def config(self, lab: Lab, node: str) -> str:
        """babeld.conf for one node: globals, then one line per interface."""
        plan_node = lab.plan.node(node)
        o = self.opts
        where = lab.node_dir(node)
        first_mac = plan_node.ifaces[0].mac
        lines = [
            f"# babeld for {lab.name}/{node}, written by netrig",
            f"router-id {first_mac}" if first_mac else "random-id true",
            f"state-file {where}/babel-state",
            f"pid-file {where}/babeld.pid",
            f"local-path-readwrite {where}/babeld.sock",
            f"link-detect {str(o.link_detect).lower()}",
            *([f"debug {o.debug}"] if o.debug else []),
            *(
                [f"smoothing-half-life {o.smoothing_half_life:g}"]
                if o.smoothing_half_life is not None
                else []
            ),
        ]
        for iface in plan_node.ifaces:
            cost = lab.plan.links[iface.link].cost
            parts = [
                f"interface {iface.name} type wired",
                f"hello-interval {o.hello_interval:g}",
                f"rxcost {WIRED_RXCOST * cost}",
                f"split-horizon {str(o.split_horizon).lower()}",
            ]
            if o.update_interval:
                parts.append(f"update-interval {o.update_interval:g}")
            lines.append(" ".join(parts))
        lines.append("redistribute local")  # own addresses (loopbacks, links): babeld's default
        return "\n".join(lines) + "\n"

    def start(self, lab: Lab) -> None:
        daemons.require_tools("babeld", package="babeld")
        self.convergence_timeout = type(self).convergence_timeout + self.opts.settle
        for node in self.watch(lab).nodes:
            conf = daemons.write_file(lab, node, "babeld.conf", self.config(lab, node))
            daemons.start(lab, node, "babeld", ["babeld", "-c", conf])

    def is_ours(self, route: daemons.Route) -> bool:
        return route.protocol == RTPROT_BABEL
