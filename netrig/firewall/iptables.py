"""iptables (legacy xtables): rules in the filter table's INPUT and FORWARD chains.

Legacy iptables walks a chain rule by rule, so every filler rule costs every packet a
comparison: the behaviour seed 002 measured. Installed with one `iptables-legacy-restore`
(and `ip6tables-legacy-restore` for IPv6 rules); counted back with `iptables-legacy-save`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from netrig.firewall import Engine, FirewallPlan, register, run_checked

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

CHAINS = ("INPUT", "FORWARD")  # a packet walks one of them: to this node, or through it


def ruleset(rules: list[tuple[str, str]]) -> str:
    """An iptables-restore file: the filter table with `rules` in INPUT and FORWARD."""
    lines = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]"]
    for chain in CHAINS:
        lines += [f"-A {chain} -s {cidr} -j {action.upper()}" for action, cidr in rules]
    return "\n".join([*lines, "COMMIT", ""])


@register
class Iptables(Engine):
    name = "iptables"
    summary = "legacy iptables, linear chains (iptables-legacy-restore)"
    programs: ClassVar[dict[str, str]] = {
        "iptables-legacy-restore": "iptables",
        "iptables-legacy-save": "iptables",
    }

    def apply(self, lab: Lab, node: str, fw: FirewallPlan) -> None:
        v4 = [("drop", c) for c in fw.fillers()] + [r for r in fw.rules if ":" not in r[1]]
        v6 = [r for r in fw.rules if ":" in r[1]]
        run_checked(lab, node, ["iptables-legacy-restore"], ruleset(v4))
        if v6:
            run_checked(lab, node, ["ip6tables-legacy-restore"], ruleset(v6))

    def count(self, lab: Lab, node: str) -> int:
        saved = run_checked(lab, node, ["iptables-legacy-save", "-t", "filter"])
        v4 = sum(1 for line in saved.splitlines() if line.startswith("-A INPUT "))
        saved6 = lab.exec(node, ["ip6tables-legacy-save", "-t", "filter"], capture_output=True)
        v6 = sum(1 for line in saved6.stdout.splitlines() if line.startswith("-A INPUT "))
        return v4 + v6
