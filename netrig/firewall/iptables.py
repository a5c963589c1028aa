"""iptables (legacy xtables): rules in the filter table's INPUT and FORWARD chains.

Legacy iptables walks a chain rule by rule, so every filler rule costs every packet a
comparison: the behaviour seed 002 measured. Installed with one `iptables-legacy-restore`
and one `ip6tables-legacy-restore` (each family its own fillers and rules); counted back with
`iptables-legacy-save` and `ip6tables-legacy-save`.
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
        "ip6tables-legacy-restore": "iptables",
        "ip6tables-legacy-save": "iptables",
    }

    def apply(self, lab: Lab, node: str, fw: FirewallPlan) -> None:
        run_checked(lab, node, ["iptables-legacy-restore"], ruleset(fw.family_rules(4)))
        run_checked(lab, node, ["ip6tables-legacy-restore"], ruleset(fw.family_rules(6)))

    def counts(self, lab: Lab, node: str) -> dict[int, int]:
        out = {}
        for family, tool in ((4, "iptables-legacy-save"), (6, "ip6tables-legacy-save")):
            saved = run_checked(lab, node, [tool, "-t", "filter"])
            out[family] = sum(1 for line in saved.splitlines() if line.startswith("-A INPUT "))
        return out
