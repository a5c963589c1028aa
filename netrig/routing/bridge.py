"""bridge: pure layer 2; every node bridges its ports and the lab is one subnet."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from netrig.base.options import Options
from netrig.routing import RoutingProtocol, register


class BridgeOptions(Options):
    stp: Literal["auto"] | bool = Field(
        "auto",
        description="spanning tree in every node's bridge; auto = on when the graph has a loop",
    )


@register
class Bridge(RoutingProtocol[BridgeOptions]):
    name = "bridge"
    summary = "every node is a learning bridge (br0) holding its address; STP where loops exist"
    Options = BridgeOptions
    bridge_per_node = True
