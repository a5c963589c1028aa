"""xdp: netrig's own XDP filter (netrig/native/xdp_filter.bpf.c) on every interface of the node.

Rules are entries of a longest-prefix-match trie per family, like xdp-filter's address maps:
a packet costs one lookup whatever the number of rules. The trie takes the longest prefix,
the other engines the first rule written: each entry gets the action of the first rule whose
prefix holds it (netrig.plan.firewall.trie_entries), so all engines give the same verdict. We load our own program rather than
xdp-filter because xdp-filter keeps its state pinned in bpffs, which a node's private mount
namespace does not share between commands, and takes one process per rule. Loaded with one
`netrig-xdp filter-load` per interface (rules on stdin); counted back from the trie the
attached program uses. Native mode by default (`xdp_mode: skb` for generic XDP).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from netrig.firewall import Engine, FirewallError, FirewallPlan, register, run_checked
from netrig.native import compile as native_compile
from netrig.plan.firewall import trie_entries

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab


@register
class Xdp(Engine):
    name = "xdp"
    summary = "netrig's XDP program, rules in an LPM trie (constant cost per packet)"

    def missing(self) -> str | None:
        lacking = native_compile.missing()
        if lacking:
            return (
                f"firewall engine 'xdp' builds its BPF program with {', '.join(lacking)}; "
                f"install with: apt-get install {' '.join(lacking)}"
            )
        return None

    def apply(self, lab: Lab, node: str, fw: FirewallPlan) -> None:
        for iface in lab.plan.node(node).ifaces:
            self.apply_iface(lab, node, fw, iface.name)

    def apply_iface(self, lab: Lab, node: str, fw: FirewallPlan, iface: str) -> None:
        """Load the filter with every rule onto one interface (which must have no XDP program)."""
        try:
            helper, obj = native_compile.helper(), native_compile.bpf_object("xdp_filter")
        except native_compile.BuildError as exc:
            raise FirewallError(str(exc)) from None
        rules = fw.family_rules(4) + fw.family_rules(6)
        lines = [f"{a} {c}" for a, c in trie_entries(rules)]
        argv = [helper, "filter-load", iface, fw.xdp_mode, obj]
        run_checked(lab, node, argv, "\n".join(lines) + "\n", what=f"XDP filter on {iface}")

    def counts(self, lab: Lab, node: str) -> dict[int, int]:
        """Entries of each family's trie, read from the program on the first interface."""
        ifaces = lab.plan.node(node).ifaces
        if not ifaces:
            return {4: 0, 6: 0}
        out = run_checked(lab, node, [native_compile.helper(), "filter-count", ifaces[0].name])
        found = dict(re.findall(r"^rules_v([46]) (\d+)$", out, re.M))
        if "prog none" in out:
            return {4: 0, 6: 0}
        if len(found) != 2:
            raise FirewallError(f"unexpected netrig-xdp output: {out!r}")
        return {int(f): int(n) for f, n in found.items()}


def dropped(lab: Lab, node: str, iface: str) -> int:
    """Packets the XDP filter on `iface` dropped (from its per-CPU counters)."""
    out = run_checked(lab, node, [native_compile.helper(), "filter-count", iface])
    m = re.search(r"^dropped (\d+)$", out, re.M)
    return int(m.group(1)) if m else 0
