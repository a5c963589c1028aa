"""none: addresses only; nodes reach their direct neighbours and nothing else."""

from __future__ import annotations

from netrig.base.plugin import NoOptions
from netrig.routing import RoutingProtocol, register


@register
class NoRouting(RoutingProtocol[NoOptions]):
    name = "none"
    summary = "no routes beyond connected subnets"
