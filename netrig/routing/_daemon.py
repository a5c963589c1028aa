"""The base of routing protocols run by one daemon per node (batman, babel, ospf)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pydantic import Field

from netrig.base.options import Options
from netrig.base.plugin import OptionsT
from netrig.lab.daemons import Reachability, stop
from netrig.routing import RoutingProtocol

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab


class DaemonOptions(Options):
    """Options every daemon-run protocol takes beside its own."""

    settle: float = Field(
        0.0,
        ge=0,
        le=600,
        description="once every node has a route to every other, `up` also waits until no "
        "route changed for this many seconds (routes may still move to shorter paths)",
    )


class DaemonProtocol(RoutingProtocol[OptionsT]):
    """A protocol run by one daemon per node: subclasses start them (with `start` above)
    and say which kernel routes are theirs (`is_ours`); converged() is every node having
    such a route to every other node's address, held for the options' `settle` seconds."""

    def __init__(self, options: OptionsT) -> None:
        super().__init__(options)
        self.reach: Reachability | None = None

    def watch(self, lab: Lab) -> Reachability:
        """The route watcher (made on first use: `down` from another process needs none)."""
        if self.reach is None:
            self.reach = Reachability(lab, self.is_ours)
        return self.reach

    def stop(self, lab: Lab) -> None:
        stop(lab)

    def converged(self, lab: Lab) -> bool:
        began = time.perf_counter()
        done = self.watch(lab).settled(float(getattr(self.options, "settle", 0.0)))
        # a poll reads every node's routes (~60 ms for 50 nodes): keep polls to ~1/5 of
        # the time, so netrig's own work does not slow the daemons it is waiting for
        self.poll_interval = max(type(self).poll_interval, 4 * (time.perf_counter() - began))
        return done

    def pending(self) -> str:
        return self.reach.describe() if self.reach else ""
