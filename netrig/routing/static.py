"""static: shortest paths computed by netrig, one next hop per destination, in the kernel."""

from __future__ import annotations

from netrig.base.plugin import NoOptions
from netrig.plan.model import LabPlan, RoutePlan
from netrig.plan.routes_py import compute_routes
from netrig.routing import RoutingProtocol, register


@register
class Static(RoutingProtocol[NoOptions]):
    name = "static"
    summary = "shortest-path routes to every loopback and subnet (one next hop)"
    refuses_addressing = ("shared-subnet",)

    def routes(self, plan: LabPlan) -> dict[str, list[RoutePlan]]:
        return compute_routes(plan, multipath=False)
