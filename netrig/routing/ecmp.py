"""ecmp: like static, but every equal-cost next hop goes into one multipath route."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from netrig.base.options import Options
from netrig.plan.model import LabPlan, RoutePlan
from netrig.plan.routes_py import compute_routes
from netrig.routing import RoutingProtocol, register

# net.ipv4.fib_multipath_hash_policy: 0 = L3 (addresses), 1 = L4 (five-tuple)
_POLICY = {"l3": "0", "l4": "1"}


class EcmpOptions(Options):
    hash: Literal["l3", "l4"] = Field(
        "l4", description="multipath hash: l3 (addresses only) or l4 (addresses and ports)"
    )


@register
class Ecmp(RoutingProtocol[EcmpOptions]):
    name = "ecmp"
    summary = "shortest paths with all equal-cost next hops (multipath routes)"
    Options = EcmpOptions
    refuses_addressing = ("shared-subnet",)

    def sysctls(self) -> dict[str, str]:
        policy = _POLICY[self.options.hash]
        return {
            "net.ipv4.fib_multipath_hash_policy": policy,
            "net.ipv6.fib_multipath_hash_policy": policy,
        }

    def routes(self, plan: LabPlan) -> dict[str, list[RoutePlan]]:
        return compute_routes(plan, multipath=True)
