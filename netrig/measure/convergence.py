"""convergence: how long the lab's routing takes from a cold start, measured in a lab that is up.

    - convergence: {}                  # with routing: {protocol: babel}, batman, ospf, static

For a routing daemon (batman, babel, ospf): every daemon of the lab is stopped (by PID, as
`netrig node N stop` does), the protocol's routes are waited out of every node's table, then
all daemons start again at once and the clock runs until every node has a route to every
other node's address (polled over rtnetlink, as `netrig up` does). For netrig's own routes
(static, ecmp) the cold start is removing every planned route and installing them again.

Samples: `convergence` [s] from the start to the first poll that found every route (±
one poll interval), `start` [s] the part of it netrig spent starting daemons or sending
routes, `polls` the number of route polls. The lab is converged again when this returns,
so measurements after it in the same run find it as before.
"""

from __future__ import annotations

import errno
import time
from typing import Any

from pydantic import Field

from netrig.base.sample import MeasurementFailed, Sample
from netrig.lab import daemons, faults, nlwire
from netrig.lab.build import LabError, route_requests
from netrig.lab.runtime import LabRuntime as Lab
from netrig.measure import KeyPath, Measurement, MeasureOptions, Result, mark_started, register
from netrig.model.models import Seconds
from netrig.plan.model import LabPlan

NOT_ROUTED = ("none", "bridge")
DRAIN_TIMEOUT = 15.0  # seconds to wait for stopped daemons' routes to leave the tables


class ConvergenceOptions(MeasureOptions):
    limit: Seconds | None = Field(
        None, description="give up after this long (default: the protocol's convergence timeout)"
    )


def own_routing(plan: LabPlan) -> str:
    """What runs routing in a lab beside netrig's protocol: `FRR in r1, r2` (a containerlab
    FRR node, `services: [frr]`), `cmd in x`; empty if nothing does."""
    frr = [n.name for n in plan.nodes.values() if any(s.kind == "frr" for s in n.services)]
    cmd = [n.name for n in plan.nodes.values() if n.cmd and n.name not in frr]
    parts = [f"FRR in {', '.join(frr)}"] if frr else []
    return "; ".join(parts + ([f"cmd in {', '.join(cmd)}"] if cmd else []))


@register
class Convergence(Measurement[ConvergenceOptions]):
    name = "convergence"
    summary = "cold-start convergence time of the lab's routing (daemons restarted at once)"
    Options = ConvergenceOptions
    summary_metrics = ("convergence",)

    def check(self, options: ConvergenceOptions, plan: LabPlan) -> list[tuple[KeyPath, str]]:
        if plan.protocol in NOT_ROUTED:
            own = own_routing(plan)
            if own:
                return [((), "convergence needs a netrig `routing:` protocol (static, ospf, "
                         f"bgp, …), whose daemons netrig restarts and watches; the lab's own "
                         f"daemons ({own}) are not netrig's to watch")]  # fmt: skip
            return [((), f"protocol {plan.protocol} has no routes to converge")]
        return []

    def timeout(self, options: ConvergenceOptions) -> float:
        return float(options.timeout or (options.limit or 120.0) + DRAIN_TIMEOUT + 10.0)

    def run(self, lab: Lab, options: ConvergenceOptions, timeout: float) -> Result:

        proto = lab.protocol
        limit = float(options.limit or max(lab.plan.check_timeout, proto.convergence_timeout))
        if proto.runs_daemons():
            reach = daemons.Reachability(lab, proto.is_ours)
            _stop_daemons(lab, reach)
            mark_started()
            began = time.monotonic()
            for node in lab.plan.nodes:
                for name, argv in daemons.recorded(lab, node).items():
                    daemons.start(lab, node, name, argv)
        else:
            reach = daemons.Reachability(lab)
            _remove_routes(lab)
            mark_started()
            began = time.monotonic()
            _install_routes(lab)
        started = time.monotonic() - began
        polls = 0
        while True:
            polls += 1
            missing = reach.missing()
            now = time.monotonic()
            if not missing and now - began <= limit:
                break
            crashed = lab.daemon_failures()
            if crashed:
                label, tail = crashed[0]
                raise MeasurementFailed(f"{label} exited during the cold start", stderr=tail)
            if not missing:  # the first poll that found it converged came past the limit
                raise MeasurementFailed(
                    f"{proto.name} converged in {now - began:.3g} s of a cold start, past "
                    f"its limit of {limit:g} s"
                )
            if now - began > limit:
                raise MeasurementFailed(
                    f"{proto.name} did not converge within {limit:g} s of a cold start; "
                    + reach.describe()
                )
            time.sleep(proto.poll_interval)
        return [
            Sample("convergence", now - began, "s"),
            Sample("start", started, "s"),
            Sample("polls", polls, ""),
        ]


def _stop_daemons(lab: Lab, reach: Any) -> None:
    """Stop every daemon and wait until none of the protocol's routes is left anywhere."""

    daemons.stop(lab, reason="stopped for a cold start")
    deadline = time.monotonic() + DRAIN_TIMEOUT
    while True:
        routes = daemons.dump_routes(lab, reach.nodes)
        left = sum(1 for rs in routes.values() for r in rs if reach.accept(r))
        if not left:
            return
        if time.monotonic() > deadline:
            raise MeasurementFailed(
                f"{left} routes of the stopped daemons were still installed after "
                f"{DRAIN_TIMEOUT:g} s; a cold start cannot begin"
            )
        time.sleep(0.1)


def _remove_routes(lab: Lab) -> None:

    for node in lab.plan.nodes.values():
        _send(lab, node.name, [nlwire.as_delete(r) for r in route_requests(node)], errno.ESRCH)


def _install_routes(lab: Lab) -> None:

    for node in lab.plan.nodes.values():
        _send(lab, node.name, route_requests(node), errno.EEXIST)


def _send(lab: Lab, node: str, requests: list[Any], ignore: int) -> None:
    """faults.send, whose LabError is this measurement's failure."""

    try:
        faults.send(lab, node, requests, ignore=(ignore,))
    except LabError as exc:
        raise MeasurementFailed(f"routes of {node}: {exc}") from None
