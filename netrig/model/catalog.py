"""The plugins a file may name, handed down from above.

The model and the plan check plugin names and options (a routing protocol, a firewall
engine, a service, a measurement) at file:line, yet import no plugin package: the rig
builds a `Catalog` from the plugin registries (netrig.rig.prepare.catalog()) and passes it
down. What the plan asks of a routing or measurement plugin is written here as a Protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:  # the lab core holds a Catalog without loading pydantic (`netrig exec`)
    from pydantic import BaseModel

    from netrig.base.registry import Registry


class RoutingTraits(Protocol):
    """What the model and the plan use of a configured routing plugin."""

    name: ClassVar[str]
    addressing: ClassVar[str | None]
    refuses_addressing: ClassVar[tuple[str, ...]]
    bridge_per_node: ClassVar[bool]
    private_run: ClassVar[bool]
    families: ClassVar[tuple[int, ...]]  # address families it routes
    options: BaseModel

    def sysctls(self) -> dict[str, str]: ...
    def runs_daemons(self) -> bool: ...
    def plans_routes(self) -> bool: ...  # routes() computes routes
    def routes(self, plan: Any) -> dict[str, list[Any]]: ...  # LabPlan → RoutePlans per node
    # the options against the lab's nodes and links (a LabGraph): (key path, message) each
    def check(self, graph: Any) -> list[tuple[tuple[str | int, ...], str]]: ...


class MeasurementTraits(Protocol):
    """What the plan (its tools, its options while events run) and the runner use of a
    measurement plugin (netrig.measure.Measurement)."""

    name: ClassVar[str]

    def tools(self, options: Any) -> dict[str, str]: ...  # program → Debian package
    def during_events(self, options: Any) -> Any: ...  # the options for a run with events
    def events_timeout(self, options: Any) -> float: ...  # its timeout in a run with events
    def length(self, options: Any) -> float | None: ...  # seconds of traffic, if known
    def endpoints(self, options: Any) -> list[tuple[str, str]]: ...  # node pairs it joins
    def udp_arrives(self, options: Any) -> list[tuple[str, int]]: ...  # (node, family) UDP reaches
    def udp_counted(self, options: Any) -> tuple[str, int] | None: ...  # all its UDP counted
    def run(self, lab: Any, options: Any, timeout: float) -> Any: ...  # its samples


@dataclass(frozen=True)
class Catalog:
    """Registries of plugin classes by kind. Each is handed over as a function that returns
    it, called on first use: a lab file without a firewall, services or measurements never
    imports those plugin packages (`netrig validate` starts fast)."""

    routing_registry: Callable[[], Registry[Any]]
    firewall_registry: Callable[[], Registry[Any]]
    services_registry: Callable[[], Registry[Any]]
    measure_registry: Callable[[], Registry[Any]]

    @property
    def routing(self) -> Registry[Any]:
        return self.routing_registry()

    @property
    def firewall(self) -> Registry[Any]:
        return self.firewall_registry()

    @property
    def services(self) -> Registry[Any]:
        return self.services_registry()

    @property
    def measure(self) -> Registry[Any]:
        return self.measure_registry()
