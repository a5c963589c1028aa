"""Every engine judges a packet by the first rule written that matches: the XDP filter's
longest-prefix trie too (seed 002 compares the engines, so they must agree)."""

from __future__ import annotations

import random
from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network, ip_address, ip_network
from typing import Any

import pytest

from netrig.plan.firewall import FirewallPlan, trie_entries
from netrig.rig import Lab
from tests.conftest import requires_root

ENGINES = ["iptables", "nftables", "xdp"]
SHADOWED = [  # the lab's prefixes dropped first: the accept of n1 after them never matches
    {"src": "198.18.0.0/15", "action": "drop"},
    {"src": "2001:2::/48", "action": "drop"},
    {"src": "n1", "action": "accept"},
]
FIRST = [  # n1 accepted first, everything else of the lab dropped
    {"src": "n1", "action": "accept"},
    {"src": "198.18.0.0/15", "action": "drop"},
    {"src": "2001:2::/48", "action": "drop"},
]


def longest_prefix(entries: list[tuple[str, str]], addr: str) -> bool:
    """Whether a trie holding `entries` drops `addr` (what the XDP program looks up)."""
    ip = ip_address(addr)
    held = [(ip_network(c), a) for a, c in entries if ip in ip_network(c)]
    return bool(held) and max(held, key=lambda h: h[0].prefixlen)[1] == "drop"


def test_the_trie_gives_the_first_matching_rule_s_verdict() -> None:
    rng = random.Random(2)
    base = IPv4Network("198.18.0.0/15")
    for _ in range(300):
        rules = []
        for _ in range(rng.randint(1, 8)):
            length = rng.randint(15, 32)
            addr = IPv4Address(int(base.network_address) + rng.getrandbits(17))
            rules.append(
                (rng.choice(["drop", "accept"]), str(ip_network(f"{addr}/{length}", strict=False)))
            )
        fw = FirewallPlan("xdp", 0, rules)
        entries = trie_entries(rules)
        assert len(entries) == len({c for _, c in rules})
        for _ in range(50):
            probe = str(IPv4Address(int(base.network_address) + rng.getrandbits(17)))
            assert longest_prefix(entries, probe) == fw.drops(probe), (rules, probe)


def chain(engine: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "topology": {"kind": "chain", "nodes": 3},
        "nodes": [{"name": "n2", "firewall": {"engine": engine, "rules": rules}}],
    }


def answers(lab: Lab, src: str, addr: str) -> bool:
    done = lab.exec(src, ["ping", "-c1", "-W1", addr], capture_output=True)
    return done.returncode == 0


@requires_root
@pytest.mark.root
@pytest.mark.parametrize("engine", ENGINES)
def test_engines_agree_on_rules_whose_order_matters(
    engine: str, make_lab: Callable[..., Lab]
) -> None:
    """On n2 of a chain of 3: the lab's prefixes dropped before n1 is accepted drop n1 too
    (the XDP filter accepted it: its trie took the longer prefix); n1 accepted first passes
    while n3 is dropped. The same answers from every engine, both families."""
    shadowed = make_lab(chain(engine, SHADOWED))
    for family in (4, 6):
        assert not answers(shadowed, "n1", shadowed.addr("n2", family))
        assert not answers(shadowed, "n3", shadowed.addr("n2", family))
    first = make_lab(chain(engine, FIRST))
    for family in (4, 6):
        assert answers(first, "n1", first.addr("n2", family))
        assert not answers(first, "n3", first.addr("n2", family))
