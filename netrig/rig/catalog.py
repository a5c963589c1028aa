"""The plugin registries, each plugin package imported on first use: what the model and
the plan are handed (netrig.model.catalog) instead of importing any plugin themselves."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from netrig.model.catalog import Catalog

if TYPE_CHECKING:
    from netrig.base.registry import Registry


def _routing() -> Registry[Any]:
    from netrig import routing

    return routing.registry


def _firewall() -> Registry[Any]:
    from netrig import firewall

    return firewall.registry


def _services() -> Registry[Any]:
    from netrig import services

    return services.registry


def _measure() -> Registry[Any]:
    from netrig import measure

    return measure.registry


@cache
def catalog() -> Catalog:
    """Every plugin registry, each package imported on first use."""
    return Catalog(_routing, _firewall, _services, _measure)
