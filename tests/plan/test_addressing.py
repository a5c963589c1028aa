"""Address allocation: layout, block sizes, segments, explicit addresses."""

from __future__ import annotations

from ipaddress import ip_interface, ip_network

from netrig.plan.lab import build_plan
from netrig.rig.prepare import load_text


def plan_of(text: str):  # type: ignore[no-untyped-def]
    return build_plan(load_text(text, "lab.yaml"))


def test_ring_loopbacks_and_p2p_links() -> None:
    plan = plan_of("name: r\ntopology: {kind: ring, nodes: 4}\n")
    assert [n.loopbacks[0] for n in plan.nodes.values()] == [
        "198.18.0.1/32",
        "198.18.0.2/32",
        "198.18.0.3/32",
        "198.18.0.4/32",
    ]
    assert plan.nodes["n2"].loopbacks[1] == "2001:2::2/128"
    # link k (n_k – n_k+1) is the k-th /31 of the second half of the pool
    n1 = plan.nodes["n1"]
    assert n1.iface("eth0").addrs[0] == "198.19.0.0/31"
    assert plan.nodes["n2"].iface("eth0").addrs[0] == "198.19.0.1/31"
    assert n1.iface("eth1").addrs[0] == "198.19.0.7/31"  # the closing link n4–n1, b end
    every = [ip_interface(a) for n in plan.nodes.values() for i in n.ifaces for a in i.addrs]
    assert len(every) == len({a.ip for a in every})  # no address twice


def test_aliases_get_a_larger_block_on_both_ends() -> None:
    plan = plan_of("name: r\ntopology: {kind: pair}\nlinks:\n  - {a: n1, b: n2, aliases: 4}\n")
    a = plan.nodes["n1"].iface("eth0").addrs
    b = plan.nodes["n2"].iface("eth0").addrs
    v4 = [x for x in a + b if ":" not in x]
    assert len(v4) == 10
    nets = {ip_interface(x).network for x in v4}
    assert nets == {ip_network("198.19.0.0/28")}
    assert "198.19.0.0/28" not in v4 and "198.19.0.15/28" not in v4  # network, broadcast


def test_switch_segment_is_one_subnet() -> None:
    plan = plan_of(
        "name: s\nnodes:\n  - {name: sw, kind: switch}\n"
        "  - {name: a}\n  - {name: b}\n  - {name: c}\n"
        "links:\n  - {a: a, b: sw}\n  - {a: b, b: sw}\n  - {a: c, b: sw}\n"
    )
    sw = plan.nodes["sw"]
    assert sw.bridge is not None and not sw.loopbacks
    assert all(i.master == "br0" and not i.addrs for i in sw.ifaces)
    addrs = [plan.nodes[h].iface("eth0").addrs[0] for h in "abc"]
    assert {ip_interface(x).network for x in addrs} == {ip_network("198.19.0.0/29")}
    assert len(plan.networks) == 1 and len(plan.networks[0].members) == 3


def test_shared_subnet_for_bridge_protocol() -> None:
    plan = plan_of("name: b\ntopology: {kind: ring, nodes: 5}\nrouting: {protocol: bridge}\n")
    addrs = [n.bridge.addrs[0] for n in plan.nodes.values() if n.bridge]
    assert len(addrs) == 5 and len({ip_interface(a).network for a in addrs}) == 1
    assert all(n.bridge and n.bridge.stp for n in plan.nodes.values())  # a ring has a loop
    assert not any(n.loopbacks for n in plan.nodes.values())


def test_a_two_node_mesh_subnet_still_has_a_broadcast_address() -> None:
    """batmand refuses an interface without a broadcast address: a pair's one mesh subnet
    must not be a /31 like a p2p link's."""
    plan = plan_of(
        "name: p\ntopology: {kind: pair}\nrouting: {protocol: batman}\naddressing: {ipv6: false}\n"
    )
    (a,) = plan.nodes["n1"].iface("eth0").addrs
    (b,) = plan.nodes["n2"].iface("eth0").addrs
    net = ip_interface(a).network
    assert net.prefixlen == 30 and ip_interface(b).network == net
    assert {ip_interface(a).ip, ip_interface(b).ip} == set(net.hosts())


def test_explicit_addresses_define_the_subnet() -> None:
    plan = plan_of(
        "name: e\ntopology: {kind: chain, nodes: 3}\nlinks:\n"
        "  - {a: n1, b: n2, a_addr: 203.0.113.1/30, b_addr: 203.0.113.2/30}\n"
        "addressing: {ipv6: false}\n"
    )
    assert plan.nodes["n1"].iface("eth0").addrs == ["203.0.113.1/30"]
    assert any(n.prefixes == ["203.0.113.0/30"] for n in plan.networks)
    routes = {r.dst for r in plan.nodes["n3"].routes}
    assert "203.0.113.0/30" in routes


def test_ipv6_off() -> None:
    plan = plan_of("name: r\ntopology: {kind: pair}\naddressing: {ipv6: false}\n")
    assert all(":" not in a for n in plan.nodes.values() for i in n.ifaces for a in i.addrs)
    assert plan.addr("n2") == "198.18.0.2"


TRIANGLE_WITH_A_V4_LINK = (
    "name: t\nnodes: [{name: r1}, {name: r2}, {name: r3}, {name: pc1}, {name: pc2}]\n"
    "links:\n  - {a: r1, b: r2}\n  - {a: r2, b: r3}\n  - {a: r3, b: r1, cost: 10}\n"
    "  - {a: pc1, b: r1, a_addr: 192.0.2.10/24, b_addr: 192.0.2.1/24}\n  - {a: pc2, b: r3}\n"
)


def test_a_link_given_ipv4_only_gets_its_ipv6_from_the_pool() -> None:
    """pc1's one link had no IPv6 while pc1 got an IPv6 loopback: r2 routed it via r1 and
    r1 its /48 via r2, a loop, and `up` failed its check after 10 s."""
    plan = plan_of(TRIANGLE_WITH_A_V4_LINK)
    pc1 = plan.nodes["pc1"].iface("eth0").addrs
    r1 = plan.nodes["r1"].iface("eth2").addrs
    assert pc1[0] == "192.0.2.10/24" and r1[0] == "192.0.2.1/24"
    (v6_pc1,) = [a for a in pc1 if ":" in a]
    (v6_r1,) = [a for a in r1 if ":" in a]
    assert ip_interface(v6_pc1).network == ip_interface(v6_r1).network
    assert ip_interface(v6_pc1).network.subnet_of(ip_network("2001:2::/48"))
    # (tests/lab/test_lab.py builds it: every pair talks, both families)


def test_the_other_way_round_a_link_given_ipv6_only_gets_ipv4() -> None:
    plan = plan_of(
        "name: e\ntopology: {kind: pair}\n"
        "links:\n  - {a: n1, b: n2, a_addr: '2001:db8::1/64', b_addr: '2001:db8::2/64'}\n"
    )
    addrs = plan.nodes["n1"].iface("eth0").addrs
    assert "2001:db8::1/64" in addrs and any(ip_interface(a).version == 4 for a in addrs)


def test_a_segment_with_ipv6_on_some_ports_only_is_refused() -> None:
    import pytest

    from netrig.model.problems import SpecError

    with pytest.raises(SpecError, match="n2:eth0 has no explicit IPv6 address"):
        plan_of(
            "name: e\ntopology: {kind: pair}\nlinks:\n  - {a: n1, b: n2, "
            "a_addr: [192.0.2.1/24, '2001:db8::1/64'], b_addr: 192.0.2.2/24}\n"
        )
