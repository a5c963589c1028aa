"""nftables: one rule per entry in the input and forward chains of an `ip netrig` and an
`ip6 netrig` table.

Each filler is its own rule (`ip saddr 240.0.0.7 drop`), not an element of a set, so a packet
walks them one by one as in iptables: the seed's "useless rules" as written by hand. One table
per family, not one `inet` table, so that a packet walks only its own family's rules, as with
iptables and ip6tables (in an inet table IPv6 packets walked every IPv4 filler: 512 of them
made IPv6's fastest packet 10× slower). Installed with one `nft -f -` (one transaction);
counted back from `nft -j list table ip|ip6 netrig`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, ClassVar

from netrig.firewall import Engine, FirewallError, FirewallPlan, register, run_checked

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

TABLE = "netrig"
FAMILIES = {4: "ip", 6: "ip6"}


def ruleset(rules: list[tuple[str, str]], family: int = 4) -> str:
    """One family's table: `rules` (all of that family) in its input and forward chains."""
    table = FAMILIES[family]
    body = [f"        {table} saddr {cidr} {action}" for action, cidr in rules]
    chains = []
    for chain in ("input", "forward"):
        chains += [
            f"    chain {chain} {{",
            f"        type filter hook {chain} priority filter; policy accept;",
            *body,
            "    }",
        ]
    return "\n".join([f"table {table} {TABLE} {{", *chains, "}", ""])


@register
class Nftables(Engine):
    name = "nftables"
    summary = "nftables, one rule per entry (nft -f)"
    programs: ClassVar[dict[str, str]] = {"nft": "nftables"}

    def apply(self, lab: Lab, node: str, fw: FirewallPlan) -> None:
        script = "".join(ruleset(fw.family_rules(f), f) for f in FAMILIES)
        run_checked(lab, node, ["nft", "-f", "-"], script)

    def counts(self, lab: Lab, node: str) -> dict[int, int]:
        out = {}
        for family, table in FAMILIES.items():
            listed = run_checked(lab, node, ["nft", "-j", "list", "table", table, TABLE])
            try:
                items = json.loads(listed)["nftables"]
            except (ValueError, KeyError) as exc:
                raise FirewallError(f"cannot read nft's JSON: {exc}") from None
            out[family] = sum(1 for i in items if "rule" in i and i["rule"]["chain"] == "input")
        return out
