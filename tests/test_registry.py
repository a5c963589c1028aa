"""The plugin registries: every module of a package registers itself, names are looked up
with a suggestion for a typo."""

from __future__ import annotations

import pytest

from netrig import firewall, measure, routing, services


def test_each_package_finds_all_its_plugins_without_a_list() -> None:
    assert {"iperf3", "ping", "command", "convergence", "pps", "wrk", "ab"} <= set(
        measure.load_plugins()
    )
    assert {"static", "ecmp", "bridge", "none", "batman", "babel", "ospf", "bgp", "isis"} == set(
        routing.load_plugins()
    )
    assert {"iptables", "nftables", "xdp"} == set(firewall.load_plugins())
    assert {"nginx", "haproxy", "pen", "frr"} == set(services.load_plugins())


def test_an_unknown_name_gets_a_suggestion_and_the_known_names() -> None:
    with pytest.raises(
        KeyError, match=r"unknown measurement 'iperf' \(did you mean 'iperf3'\?\); known: ab, "
    ):
        measure.get("iperf")
    with pytest.raises(KeyError, match=r"unknown service 'ngnix' \(did you mean 'nginx'\?\)"):
        services.get("ngnix")
