"""Routing protocol plugins: one small class per file, found through one registry.

A plugin says what it needs from the plan (addressing mode, a bridge per node, a private
/run per node, tools) and what it does to a lab: kernel routes computed from the graph
(`routes`), and/or daemons started and supervised (`start`, `stop`, `converged`).
Adding a protocol means adding one module here that decorates its class with @register.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from netrig.base.plugin import OptionsT, Plugin
from netrig.base.registry import Registry

if TYPE_CHECKING:
    from netrig.lab.daemons import Route
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.model.load import LabGraph
    from netrig.model.yamlmarks import KeyPath
    from netrig.plan.model import LabPlan, RoutePlan


class RoutingProtocol(Plugin[OptionsT]):
    """Base class: the defaults describe a protocol that installs nothing."""

    addressing: ClassVar[str | None] = None  # forced addressing mode, None = the file's choice
    refuses_addressing: ClassVar[tuple[str, ...]] = ()
    bridge_per_node: ClassVar[bool] = False  # every host bridges its ports (pure L2)
    private_run: ClassVar[bool] = False  # daemons need a private /run per node
    families: ClassVar[tuple[int, ...]] = (4, 6)  # address families it routes (others: none)
    # defaults: a protocol may set its own per instance, for its lab
    convergence_timeout: float = 10.0  # seconds `up` waits for converged()
    poll_interval: float = 0.2
    # Does the daemon put back its routes through a link that went down and up again? The
    # kernel deletes them on `down`; a daemon that does not notice (batmand reinstalls a
    # route only when it changes its choice) gets them put back by netrig on `up`.
    restores_dropped_routes: ClassVar[bool] = True

    def __init__(self, options: OptionsT) -> None:
        self.options = options

    def sysctls(self) -> dict[str, str]:
        """Per-namespace sysctls on top of the lab defaults (ip_forward etc.)."""
        return {}

    def check(self, graph: LabGraph) -> list[tuple[KeyPath, str]]:
        """Problems of the options with this lab's nodes and links, each at a key path of
        the file (("routing", "route_reflectors", 0)), found before anything is created."""
        return []

    def routes(self, plan: LabPlan) -> dict[str, list[RoutePlan]]:
        """Kernel routes per node, computed without root (static protocols)."""
        return {}

    @classmethod
    def plans_routes(cls) -> bool:
        """True for a protocol whose routes() computes routes (worth a core of its own)."""
        return cls.routes is not RoutingProtocol.routes

    @classmethod
    def runs_daemons(cls) -> bool:
        """True for a protocol whose start() runs something (static routes are in at build)."""
        return cls.start is not RoutingProtocol.start

    def is_ours(self, route: Route) -> bool:
        """Whether a kernel route is this protocol's (what convergence waits for)."""
        from netrig.lab.daemons import protocol_route  # the lab core, once a lab is up

        return protocol_route(route)

    def start(self, lab: Lab) -> None:
        """Start daemons once links and addresses exist."""

    def stop(self, lab: Lab) -> None:
        """Stop what start() started (the ledger ends leftovers by PID anyway)."""

    def converged(self, lab: Lab) -> bool:
        """True once the protocol's routes are in place; `up` polls it."""
        return True

    def pending(self) -> str:
        """What the last converged() call found missing, for the timeout message."""
        return ""


registry: Registry[RoutingProtocol[Any]] = Registry("routing protocol", __name__)
PROTOCOLS = registry.classes
register = registry.register
load_plugins = registry.load


def make(protocol: str, options: dict[str, Any]) -> RoutingProtocol:
    """A configured plugin; raises KeyError for an unknown name, ValidationError for options."""
    cls = registry.lookup(protocol)
    return cls(cls.Options.model_validate(options))
