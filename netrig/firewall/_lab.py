"""Firewalls applied to a built lab: every node's firewall, in its namespace, by its engine.

    apply_all(lab, say)   # after the build (the plan resolved them: netrig.plan.firewall)
"""

from __future__ import annotations

from collections.abc import Callable

from netrig.firewall import FirewallError, FirewallPlan, get
from netrig.lab.build import LabError
from netrig.lab.runtime import LabRuntime as Lab
from netrig.plan.model import LabPlan


def firewalls(plan: LabPlan) -> dict[str, FirewallPlan]:
    return {
        name: FirewallPlan.from_dict(n.firewall) for name, n in plan.nodes.items() if n.firewall
    }


def apply_all(lab: Lab, say: Callable[[str], None]) -> None:
    for node, fw in firewalls(lab.plan).items():
        say(f"firewall {fw.engine} in {node}: {fw.total()} rules")
        try:
            get(fw.engine).apply(lab, node, fw)
        except FirewallError as exc:

            raise LabError(str(exc)) from None
