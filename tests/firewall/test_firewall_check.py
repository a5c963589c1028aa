"""`up`'s reachability check with firewalls: the pairs the written rules drop are left out,
every other promised pair is still pinged, on the lab with its firewalls in place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from netrig.lab import check, netns
from netrig.rig import Lab
from tests.conftest import netrig_cli, new_lab_name, requires_root

pytestmark = [requires_root, pytest.mark.root]
ENGINES = ["iptables", "nftables", "xdp"]

README_LAB = """\
name: {name}
topology: {{kind: pair}}
check: {{reachability: {mode}}}
nodes:
  - name: n2
    firewall: {{engine: {engine}, filler_rules: 512, rules: [{{src: n1, action: drop}}]}}
"""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", ["auto", "sample"])
def test_the_readme_firewall_comes_up(engine: str, mode: str, tmp_path: Path) -> None:
    """The README's firewall on a pair: both directions dropped, so nothing to ping."""
    name = new_lab_name("fc")
    path = tmp_path / "lab.yaml"
    path.write_text(README_LAB.format(name=name, engine=engine, mode=mode))
    try:
        up = netrig_cli("up", "-q", str(path))
        assert up.returncode == 0, up.stderr
        assert "4 pairs the firewalls drop, not checked" in up.stdout
        ping = netrig_cli("exec", name, "n1", "--", "ping", "-c1", "-W1", "198.18.0.2")
        assert ping.returncode != 0  # and the firewall is really there
    finally:
        netrig_cli("down", name)
    assert not [ns for ns in netns.list_names() if ns.startswith(name + "-")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_router_firewall_leaves_out_only_the_pairs_it_drops(
    engine: str, make_lab: Callable[..., Lab]
) -> None:
    """n2 forwards between n1 and n3 and drops n1: n1's 8 pairs (to and from n2 and n3, v4
    and v6) are left out, n2↔n3 are pinged and answer."""
    lab = make_lab(
        {
            "topology": {"kind": "chain", "nodes": 3},
            "nodes": [
                {"name": "n2", "firewall": {"engine": engine, "filler_rules": 16,
                                            "rules": [{"src": "n1", "action": "drop"}]}}
            ],
        }
    )  # fmt: skip
    result = lab.check_result
    assert result is not None and result.ok
    assert (result.pairs, result.blocked) == (4, 8)
    prepared = check.prepare(lab.plan, "all")
    assert prepared.pairs is not None
    assert {(s, d) for s, d, _ in prepared.pairs} == {("n2", "n3"), ("n3", "n2")}
    # the check still catches what the rules do not say: n3 made unreachable by hand
    lab.exec("n3", ["ip", "link", "set", "eth0", "down"], check=True)
    failed = check.verify(lab.plan, "all", 1.0, prepared)
    assert {(s, d) for s, d, _ in failed.failed} == {("n2", "n3"), ("n3", "n2")}


def test_an_accept_before_a_drop_is_still_checked(make_lab: Callable[..., Lab]) -> None:
    """First match decides: n1 accepted before the lab's prefix is dropped stays checked."""
    lab = make_lab(
        {
            "topology": {"kind": "pair"},
            "nodes": [
                {"name": "n2", "firewall": {"engine": "iptables", "rules": [
                    {"src": "n1", "action": "accept"},
                    {"src": "198.18.0.0/15", "action": "drop"},
                ]}}
            ],
        }
    )  # fmt: skip
    result = lab.check_result
    assert result is not None and result.ok
    assert (result.pairs, result.blocked) == (4, 0)


def test_a_firewall_on_the_least_cost_path_counts_where_the_fewest_hops_do_not() -> None:
    """A ring of 4 whose n1–n2 link costs 10: n1 reaches n2 through n4, whose firewall drops
    n1. The pair had been kept (hops, not costs, decided the path) and `up` failed."""
    from netrig.rig.prepare import load_text, plan_lab

    plan = plan_lab(load_text(
        "name: c\ntopology: {kind: ring, nodes: 4}\nlinks: [{a: n1, b: n2, cost: 10}]\n"
        "nodes: [{name: n4, firewall: {engine: iptables, rules: [{src: n1}]}}]\n"))  # fmt: skip
    kept = check.prepare(plan, "all").pairs
    assert kept is not None
    assert not [p for p in kept if {p[0], p[1]} == {"n1", "n2"}]  # through n4: dropped
    assert [p for p in kept if {p[0], p[1]} == {"n2", "n3"}]  # n2–n3 does not pass n4
    assert not [p for p in kept if "n1" in p[:2] and "n4" in p[:2]]
