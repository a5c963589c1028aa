"""Each node's firewall resolved into the plan: rule sources (node names) become the node's
host prefixes. Whether the engine's programs exist is the preflight's question, not the plan's.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from ipaddress import ip_address, ip_interface, ip_network
from typing import Any

from netrig.model.load import LabGraph, Problem
from netrig.plan.model import NodePlan

# fillers' sources: 240.0.0.0/4 is reserved (never assigned); for IPv6 a documentation range
# (RFC 9637) that a lab may not use when it has fillers (refused at file:line)
# the largest MTU a veth takes native XDP at (kernel 6.x, 4 KiB pages: one page less XDP's
# headroom and skb_shared_info, less the Ethernet header); 3507 gave "Numerical result out
# of range" at attach, and a 9000 link failed `up` after validate had said ok
VETH_XDP_MAX_MTU = 3506
FILLER_BASE = {4: ip_address("240.0.0.1"), 6: ip_address("3fff:ff0::1")}
FILLER_RANGE = {4: ip_network("240.0.0.0/4"), 6: ip_network("3fff:ff0::/32")}


@dataclass
class FirewallPlan:
    """A node's firewall with node names resolved to addresses (stored in the lab plan)."""

    engine: str
    filler_rules: int = 0
    rules: list[tuple[str, str]] = field(default_factory=list)  # (drop|accept, cidr)
    xdp_mode: str = "native"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FirewallPlan:
        return cls(
            data["engine"],
            data.get("filler_rules", 0),
            [(a, c) for a, c in data.get("rules", [])],
            data.get("xdp_mode", "native"),
        )

    def fillers(self, family: int = 4) -> list[str]:
        """Source prefixes of the filler rules of one family (host prefixes)."""
        base, bits = FILLER_BASE[family], 32 if family == 4 else 128
        return [f"{base + i}/{bits}" for i in range(self.filler_rules)]

    def family_rules(self, family: int) -> list[tuple[str, str]]:
        """The rule list a packet of this family walks, in every engine: `filler_rules`
        fillers of its own family, then the written rules of that family in their order.
        Each family gets the same fillers so that an IPv6 measurement compares like with
        like (iptables gave IPv6 none, nftables' inet table made IPv6 walk IPv4's)."""
        mine = [(a, c) for a, c in self.rules if (":" in c) == (family == 6)]
        return [("drop", c) for c in self.fillers(family)] + mine

    def total(self) -> int:
        """Rules installed, both families: fillers of each plus the written rules."""
        return 2 * self.filler_rules + len(self.rules)

    def dropped(self, addresses: set[str]) -> set[str]:
        """Those of `addresses` a packet from which is dropped (drops() for each, the
        rules read once)."""
        rules = [(action, ip_network(cidr)) for action, cidr in self.rules]
        out = set()
        for addr in addresses:
            ip = ip_address(addr)
            for action, net in rules:
                if net.version == ip.version and ip in net:
                    if action == "drop":
                        out.add(addr)
                    break
        return out

    def drops(self, addr: str) -> bool:
        """Whether a packet from `addr` is dropped: the first written rule that matches
        decides, as in every engine (fillers are left out: they never match a lab address)."""
        return bool(self.dropped({addr}))


def trie_entries(rules: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The rules as longest-prefix-match entries that give the verdict first match gives.

    Every engine must judge a packet by the first rule that matches, in the order written
    (seed 002 compares them): a trie takes the longest prefix instead. Giving each prefix the
    action of the first rule whose prefix contains it makes the two agree (the longest prefix
    holding an address lies inside every earlier rule that also holds it), keeps one entry per
    rule (a repeated prefix once) and keeps the trie's constant cost per packet."""
    first: dict[tuple[int, int, int], int] = {}  # (version, network, length) → first index
    keys = []
    for i, (_action, cidr) in enumerate(rules):
        net = ip_network(cidr)
        key = (net.version, int(net.network_address), net.prefixlen)
        first.setdefault(key, i)
        keys.append((key, net.max_prefixlen, str(net)))
    lengths = {v: sorted({k[2] for k in first if k[0] == v}) for v in (4, 6)}
    out = []
    for i, ((version, addr, length), bits, cidr) in enumerate(keys):
        if first[(version, addr, length)] != i:
            continue  # the same prefix again: its first rule decides
        winner = i
        for shorter in lengths[version]:  # every rule whose prefix holds this one
            if shorter >= length:
                break
            mask = ((1 << shorter) - 1) << (bits - shorter)
            winner = min(winner, first.get((version, addr & mask, shorter), winner))
        out.append((rules[winner][0], cidr))
    return out


def resolve(graph: LabGraph, nodes: dict[str, NodePlan], problems: list[Problem]) -> None:
    """Put each node's firewall into its NodePlan, rule sources as host prefixes."""
    for name, spec_node in graph.nodes.items():
        fw = spec_node.firewall
        if fw is None:
            continue
        path = (*graph.node_paths[name], "firewall")
        if nodes[name].kind != "host":
            problems.append(Problem(graph.where(path), "a firewall applies to host nodes"))
            continue
        owner = nodes[name].shares
        if owner:  # its rules would be applied to no interface, or replace the owner's
            problems.append(
                Problem(graph.where(path), f"{name} runs in {owner}'s network namespace "
                        f"(netns: {owner}), whose packets pass {owner}'s one firewall: "
                        f"put the firewall on {owner}")
            )  # fmt: skip
            continue
        rules: list[tuple[str, str]] = []
        for j, rule in enumerate(fw.rules):
            where = graph.where((*path, "rules", j, "src"))
            if rule.src in nodes:
                prefixes = _host_prefixes(nodes[rule.src])
                if not prefixes:  # it had become no rule at all, without a word
                    source = nodes[rule.src]
                    why = (f"it shares {source.shares}'s namespace: name {source.shares}"
                           if source.shares else "it is a switch" if source.kind == "switch"
                           else "the lab gives it none")  # fmt: skip
                    problems.append(Problem(where, f"{rule.src} has no address of its own to "
                                                   f"match ({why})"))  # fmt: skip
                rules += [(rule.action, c) for c in prefixes]
                continue
            try:
                net = ip_network(rule.src, strict=False)
            except ValueError:
                close = difflib.get_close_matches(rule.src, list(nodes), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(
                    Problem(where, f"src {rule.src!r} is neither a node{hint} nor a CIDR")
                )
                continue
            rules.append((rule.action, str(net)))
        if fw.filler_rules:
            _refuse_filler_addresses(graph.where((*path, "filler_rules")), nodes, problems)
        if fw.engine == "xdp" and fw.xdp_mode == "native":
            big = [i for i in nodes[name].ifaces if _mtu(graph, i.link) > VETH_XDP_MAX_MTU]
            if big:
                problems.append(Problem(graph.where((*path, "engine")), (
                    f"native XDP on a veth takes an MTU of at most {VETH_XDP_MAX_MTU}; "
                    f"{name}:{big[0].name} has {_mtu(graph, big[0].link)}: lower the link's "
                    "mtu, or xdp_mode: skb")))  # fmt: skip
        plan = FirewallPlan(fw.engine, fw.filler_rules, rules, fw.xdp_mode)
        nodes[name].firewall = asdict(plan)


def _refuse_filler_addresses(
    where: str, nodes: dict[str, NodePlan], problems: list[Problem]
) -> None:
    """Fillers must never match: a lab address in their range is refused."""
    for node in nodes.values():
        for cidr in _host_prefixes(node):
            net = ip_network(cidr)
            if net.subnet_of(FILLER_RANGE[net.version]):  # type: ignore[arg-type]
                problems.append(
                    Problem(where, f"filler rules drop sources in {FILLER_RANGE[net.version]}, "
                            f"which holds {node.name}'s address {net.network_address}: choose "
                            "another address pool")
                )  # fmt: skip
                return


def _host_prefixes(node: NodePlan) -> list[str]:
    cidrs = [*node.loopbacks, *(node.bridge.addrs if node.bridge else [])]
    for iface in node.ifaces:
        cidrs += iface.addrs
    out = []
    for cidr in cidrs:
        addr = ip_interface(cidr)
        out.append(f"{addr.ip}/{addr.max_prefixlen}")
    return out


def _mtu(graph: LabGraph, link: int) -> int:
    """A link's MTU as the file gives it (1500 when it gives none)."""
    return graph.links[link].attrs.mtu or 1500
