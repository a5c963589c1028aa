"""nftables: one rule per entry in an `inet netrig` table's input and forward chains.

Each filler is its own rule (`ip saddr 240.0.0.7 drop`), not an element of a set, so a packet
walks them one by one as in iptables: the seed's "useless rules" as written by hand. Installed
with one `nft -f -` (one transaction); counted back from `nft -j list table inet netrig`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, ClassVar

from netrig.firewall import Engine, FirewallError, FirewallPlan, register, run_checked

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

TABLE = "netrig"


def ruleset(rules: list[tuple[str, str]]) -> str:
    body = [
        f"        {'ip6' if ':' in cidr else 'ip'} saddr {cidr} {action}" for action, cidr in rules
    ]
    chains = []
    for chain in ("input", "forward"):
        chains += [
            f"    chain {chain} {{",
            f"        type filter hook {chain} priority filter; policy accept;",
            *body,
            "    }",
        ]
    return "\n".join([f"table inet {TABLE} {{", *chains, "}", ""])


@register
class Nftables(Engine):
    name = "nftables"
    summary = "nftables, one rule per entry (nft -f)"
    programs: ClassVar[dict[str, str]] = {"nft": "nftables"}

    def apply(self, lab: Lab, node: str, fw: FirewallPlan) -> None:
        rules = [("drop", c) for c in fw.fillers()] + fw.rules
        run_checked(lab, node, ["nft", "-f", "-"], ruleset(rules))

    def count(self, lab: Lab, node: str) -> int:
        out = run_checked(lab, node, ["nft", "-j", "list", "table", "inet", TABLE])
        try:
            items = json.loads(out)["nftables"]
        except (ValueError, KeyError) as exc:
            raise FirewallError(f"cannot read nft's JSON: {exc}") from None
        return sum(1 for i in items if "rule" in i and i["rule"]["chain"] == "input")
