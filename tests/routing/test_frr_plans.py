"""The FRR plugins without root: what they ask of the plan, the configurations they write,
and their options checked at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from netrig.rig.prepare import load_experiment
from netrig.routing import make
from netrig.routing._ospf_frr import FrrOspf
from netrig.routing.bgp import ASN_BASE, Bgp
from netrig.routing.isis import Isis
from netrig.routing.ospf import Ospf
from tests.model.test_fabric_topology import assert_refused_at
from tests.routing.test_routing_plans import EXAMPLES, fake_lab, plan_of

CLOS = {"kind": "clos", "spines": 2, "leaves": 2, "hosts_per_leaf": 1}


def test_frr_protocols_get_a_private_run_and_spread_flows_by_five_tuple() -> None:
    for routing in (
        {"protocol": "bgp"},
        {"protocol": "isis"},
        {"protocol": "ospf", "daemon": "frr"},
    ):
        plan = plan_of({"topology": {"kind": "pair"}, "routing": routing})
        assert plan.private_run, routing
        assert plan.sysctls["net.ipv4.fib_multipath_hash_policy"] == "1"
        assert plan.sysctls["net.ipv6.fib_multipath_hash_policy"] == "1"
    bird = plan_of({"topology": {"kind": "pair"}, "routing": {"protocol": "ospf"}})
    assert not bird.private_run  # BIRD keeps its socket in the node directory
    # the hash is the kernel's: BIRD's multipath routes are spread by it too (it had been
    # recorded in the plan and never set)
    assert bird.sysctls["net.ipv4.fib_multipath_hash_policy"] == "1"
    assert bird.sysctls["net.ipv6.fib_multipath_hash_policy"] == "1"
    l3 = plan_of({"topology": {"kind": "pair"}, "routing": {"protocol": "ospf", "hash": "l3"}})
    assert l3.sysctls["net.ipv4.fib_multipath_hash_policy"] == "0"


def test_ospf_daemon_frr_is_frr_and_bird_stays_the_default() -> None:
    assert type(make("ospf", {})) is Ospf
    frr = make("ospf", {"daemon": "frr"})
    assert isinstance(frr, FrrOspf) and frr.options.hello == 1  # lab timers unless set
    assert make("ospf", {}).options.hello == 10  # type: ignore[attr-defined]
    assert make("ospf", {"daemon": "frr", "hello": 3}).options.hello == 3  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match="bfd needs daemon: frr"):
        make("ospf", {"bfd": True})


def test_bgp_config_unnumbered_sessions_per_tier_asns_and_bfd() -> None:
    plan = plan_of({"topology": CLOS, "routing": {"protocol": "bgp"}})
    lab = fake_lab(plan)
    proto = make("bgp", {"asn": "per-tier", "keepalive": 2, "hold": 6})
    assert isinstance(proto, Bgp)
    spine, leaf = proto.config(lab, "s1", "bgpd"), proto.config(lab, "l1", "bgpd")
    assert proto.asn(lab, "s1") == proto.asn(lab, "s2") == ASN_BASE
    assert len({proto.asn(lab, n) for n in ("s1", "l1", "l2", "h1")}) == 4
    assert f"router bgp {ASN_BASE}\n" in spine
    # one unnumbered session per interface: l1 has two spines and its host
    assert [line for line in leaf.splitlines() if "interface peer-group" in line] == [
        f" neighbor eth{i} interface peer-group fabric" for i in range(3)
    ]
    assert " neighbor fabric timers 2 6" in leaf and "bfd" not in leaf
    assert " bgp bestpath as-path multipath-relax" in leaf
    assert "allowas-in origin" in spine and "allowas-in" not in leaf  # spines see each other
    assert leaf.count("redistribute connected") == 2  # IPv4 and IPv6
    # BFD: sessions on the link addresses (FRR 8.4 runs no BFD for interface peers)
    with_bfd = make("bgp", {"bfd": True})
    conf = with_bfd.config(lab, "l1", "bgpd")  # type: ignore[attr-defined]
    assert "interface peer-group" not in conf
    peer = plan.node("s1").iface(plan.node("l1").ifaces[0].peer_iface).addrs[0].split("/")[0]
    assert f" neighbor {peer} bfd\n neighbor {peer} bfd profile netrig\n" in conf
    bfdd = with_bfd._daemon_config(lab, "l1", "bfdd")  # type: ignore[attr-defined]
    assert "transmit-interval 300" in bfdd and "detect-multiplier 3" in bfdd


def test_bgp_on_link_addresses_activates_each_session_for_its_own_family() -> None:
    plan = plan_of({"topology": {"kind": "pair"}, "routing": {"protocol": "bgp"}})
    conf = make("bgp", {"unnumbered": False}).config(fake_lab(plan), "n1", "bgpd")  # type: ignore[attr-defined]
    peer = plan.node("n2").ifaces[0].addrs
    v4, v6 = (a.split("/")[0] for a in peer)
    assert (
        f" neighbor {v4} peer-group fabric" in conf and f" neighbor {v6} peer-group fabric" in conf
    )
    v4_part = conf[conf.index("address-family ipv4") : conf.index("address-family ipv6")]
    assert f"no neighbor {v6} activate" in v4_part and v4 not in v4_part


def test_ibgp_config_one_as_reflectors_above_clients_and_a_hop_count() -> None:
    plan = plan_of({"topology": CLOS, "routing": {"protocol": "bgp", "ibgp": True}})
    lab = fake_lab(plan)
    proto = make("bgp", {"ibgp": True})
    assert isinstance(proto, Bgp)
    assert proto.reflectors(lab) == ["s1", "s2"]  # the spines by default
    spine, leaf, host = (proto.config(lab, n, "bgpd") for n in ("s1", "l1", "h1"))
    assert {proto.asn(lab, n) for n in plan.nodes} == {ASN_BASE}
    for conf in (spine, leaf, host):
        assert conf.startswith("route-map hop permit 10\n set metric +1\nexit\n")  # first
        assert "multipath-relax" not in conf and "maximum-paths ibgp 64" in conf
        assert conf.count("next-hop-self force") == 2 * conf.count(" remote-as internal")
    # the spines reflect for the leaves; a leaf for its host and, since the spines have
    # no link between them, for the spines too; the host reflects for nobody
    assert " neighbor eth0 interface peer-group clients" in spine
    assert " neighbor eth1 interface peer-group clients" in spine
    assert "reflectors" not in spine
    assert [line for line in leaf.splitlines() if "interface peer-group" in line] == [
        " neighbor eth0 interface peer-group reflectors",
        " neighbor eth1 interface peer-group reflectors",
        " neighbor eth2 interface peer-group clients",
    ]
    assert leaf.count("  neighbor reflectors route-reflector-client") == 2  # per family
    assert leaf.count("  neighbor clients route-reflector-client") == 2
    assert " neighbor eth0 interface peer-group reflectors" in host
    assert "route-reflector-client" not in host
    # on link addresses (with BFD): a session per family and neighbour, in its group
    numbered = make("bgp", {"ibgp": True, "bfd": True}).config(lab, "h1", "bgpd")  # type: ignore[attr-defined]
    v4, v6 = (a.split("/")[0] for a in plan.node("l1").iface("eth2").addrs)
    assert f" neighbor {v4} peer-group reflectors\n neighbor {v4} bfd\n" in numbered
    assert f" neighbor {v6} peer-group reflectors" in numbered


def test_ibgp_reflectors_chosen_in_a_ring_and_nodes_as_far_from_them_unpaired() -> None:
    ring = {"kind": "ring", "nodes": 6}
    routing = {"protocol": "bgp", "ibgp": True, "route_reflectors": ["n1", "n3"]}
    plan = plan_of({"topology": ring, "routing": routing})
    proto, lab = make("bgp", {"ibgp": True, "route_reflectors": ["n1", "n3"]}), fake_lab(plan)
    # n2 is one hop from both reflectors; n4 and n6 one hop from one; n5 two hops from both
    conf = {n: proto.config(lab, n, "bgpd") for n in plan.nodes}  # type: ignore[attr-defined]
    assert conf["n2"].count("interface peer-group reflectors") == 2
    assert conf["n5"].count("interface peer-group reflectors") == 2
    assert "clients" not in conf["n5"] and "clients" in conf["n4"]
    assert conf["n1"].count("interface peer-group clients") == 2


def test_ibgp_refuses_reflectors_whose_routes_never_meet(
    tmp_path: Path,
) -> None:
    # in a ring of 6, n1 and n4 share no neighbour: n2's routes stop at n1, n3 hears n4
    text = (
        "name: frr\ntopology: {kind: ring, nodes: 6}\nrouting:\n  protocol: bgp\n"
        "  ibgp: true\n  route_reflectors: [n1, n4]\n"
    )
    assert_refused_at(tmp_path / "ring.yaml", text, 6, "the routes of n1 never reach n3")
    # a fat tree's cores reach every node: the aggregation and edge switches have two
    # reflectors each and reflect between them (an aggregation switch's own routes reach
    # the other cores only down and up through an edge switch)
    fat = plan_of(
        {"topology": {"kind": "fat-tree", "k": 4}, "routing": {"protocol": "bgp", "ibgp": True}}
    )
    proto, lab = make("bgp", {"ibgp": True}), fake_lab(fat)
    assert proto.reflectors(lab) == ["c1", "c2", "c3", "c4"]  # type: ignore[attr-defined]
    for node, bridges in (("a1", True), ("e1", True), ("h1", False)):
        conf = proto.config(lab, node, "bgpd")  # type: ignore[attr-defined]
        assert ("neighbor reflectors route-reflector-client" in conf) is bridges, node


SEGMENT = {
    "nodes": [{"name": "sw1", "kind": "switch"}, {"name": "sw2", "kind": "switch"}],
    "links": [
        {"a": "n1", "b": "n2"},
        {"a": "n1", "b": "sw1"},
        {"a": "n2", "b": "sw1"},
        {"a": "sw1", "b": "sw2"},
        {"a": "n3", "b": "sw2"},
        {"a": "n3", "b": "n4"},
    ],
}


def test_bgp_on_a_shared_segment_peers_with_every_router_there_by_address() -> None:
    spec = {"nodes": [*SEGMENT["nodes"], *({"name": f"n{i}"} for i in range(1, 5))]}
    plan = plan_of({**spec, "links": SEGMENT["links"], "routing": {"protocol": "bgp"}})
    lab = fake_lab(plan)
    conf = make("bgp", {}).config(lab, "n1", "bgpd")  # type: ignore[attr-defined]
    on_wire = plan.node("n1").ifaces[0].name  # the link to n2 of its own: unnumbered
    assert f" neighbor {on_wire} interface peer-group fabric" in conf
    # n2 and n3 (behind a second switch) by their addresses on the segment, per family
    for router in ("n2", "n3"):
        port = next(i for i in plan.node(router).ifaces if i.peer.startswith("sw"))
        v4, v6 = (a.split("/")[0] for a in port.addrs)
        assert f" neighbor {v4} peer-group fabric" in conf
        v4_part = conf[conf.index("address-family ipv4") : conf.index("address-family ipv6")]
        assert f"no neighbor {v6} activate" in v4_part
    assert conf.count("peer-group fabric") == 1 + 2 * 2 and "n4" not in conf
    # iBGP with n3 the reflector: n1 and n2 are one hop from it over the segment, n4 over
    # its link; n1 and n2 are as far from n3, so their own link carries no session
    ibgp = make("bgp", {"ibgp": True, "route_reflectors": ["n3"]})
    n1 = ibgp.config(lab, "n1", "bgpd")  # type: ignore[attr-defined]
    assert "interface peer-group" not in n1 and n1.count("peer-group reflectors") == 2


def test_isis_config_level_2_point_to_point_costs_and_a_passive_loopback() -> None:
    plan = plan_of(
        {
            "topology": {"kind": "ring", "nodes": 4},
            "links": [{"a": "n1", "b": "n2", "cost": 7}],
            "routing": {"protocol": "isis"},
        }
    )
    proto = make("isis", {"hello": 2, "hello_multiplier": 4})
    assert isinstance(proto, Isis)
    conf = proto.config(fake_lab(plan), "n1", "isisd")
    to_n2 = next(i.name for i in plan.node("n1").ifaces if i.peer == "n2")
    block = conf[conf.index(f"interface {to_n2}\n") :].split("exit")[0]
    assert " isis metric 7" in block and " isis network point-to-point" in block
    assert " isis hello-interval 2" in block and " isis hello-multiplier 4" in block
    assert " ip router isis netrig" in block and " ipv6 router isis netrig" in block
    assert "interface lo\n ip router isis netrig\n ipv6 router isis netrig\n isis passive" in conf
    assert " net 49.0001.0000.0000.0001.00" in conf and " is-type level-2-only" in conf
    # the first LSP is scheduled when `net` is read: the intervals must come before it
    assert conf.index("lsp-gen-interval") < conf.index(" net ")


def test_ospf_frr_config_costs_timers_and_one_daemon_per_family() -> None:
    plan = plan_of(
        {
            "topology": {"kind": "ring", "nodes": 4},
            "links": [{"a": "n1", "b": "n2", "cost": 7}],
            "routing": {"protocol": "ospf", "daemon": "frr"},
        }
    )
    proto = make("ospf", {"daemon": "frr", "hello": 2, "dead": 7, "area": 3, "bfd": True})
    lab = fake_lab(plan)
    v2, v3 = proto.config(lab, "n1", "ospfd"), proto.config(lab, "n1", "ospf6d")  # type: ignore[attr-defined]
    to_n2 = next(i.name for i in plan.node("n1").ifaces if i.peer == "n2")
    block = v2[v2.index(f"interface {to_n2}\n") :].split("exit")[0]
    for line in ("ip ospf area 0.0.0.3", "ip ospf network point-to-point", "ip ospf cost 7"):
        assert f" {line}\n" in block
    assert " ip ospf hello-interval 2" in block and " ip ospf dead-interval 7" in block
    assert " ip ospf bfd profile netrig" in block
    assert " ipv6 ospf6 cost 7" in v3 and " ospf6 router-id 198.18.0.1" in v3
    v4_only = plan_of(
        {
            "topology": {"kind": "pair"},
            "routing": {"protocol": "isis"},
            "addressing": {"ipv6": False},
        }
    )
    assert proto.node_daemons(fake_lab(v4_only), "n1") == ["ospfd"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("routing", "message"),
    [
        ("{protocol: bgp, keepalive: 3, hold: 5}", "hold (5 s) must be at least 3 × keepalive"),
        ("{protocol: bgp, asn: per-pod}", "'per-node' or 'per-tier'"),
        ("{protocol: bgp, daemon: bird}", "'frr'"),
        ("{protocol: isis, hello: 0}", "greater than or equal to 1"),
        ("{protocol: isis, bfd_interval: 5}", "greater than or equal to 10"),
        ("{protocol: ospf, bfd: true}", "bfd needs daemon: frr"),
        ("{protocol: ospf, bfd_interval: 50}", "bfd_interval needs daemon: frr"),
        ("{protocol: ospf, bfd_multiplier: 5}", "bfd_multiplier needs daemon: frr"),
        ("{protocol: ospf, daemon: quagga}", "'bird' or 'frr'"),
        ("{protocol: bgp, bfd: true, unnumbered: true}", "FRR 8.4 starts no BFD session"),
        ("{protocol: bgp, route_reflectors: [n1]}", "route_reflectors needs ibgp: true"),
        ("{protocol: bgp, ibgp: true, asn: per-tier}", "the whole lab is one AS"),
        ("{protocol: bgp, ibgp: true, route_reflectors: []}", "at least 1 item"),
        ("{protocol: bgp, ibgp: true, route_reflectors: [n9]}", "'n9' is not a router"),
        ("{protocol: bgp, ibgp: true}", "no spines (s*) or cores (c*)"),
    ],
)
def test_bad_frr_options_are_refused_at_file_and_line(
    tmp_path: Path, routing: str, message: str
) -> None:
    text = f"name: frr\ntopology: {{kind: pair}}\n\nrouting: {routing}\n"
    assert_refused_at(tmp_path / "frr.yaml", text, 4, message)


@pytest.mark.parametrize("name", ["fabric-clos.yaml", "fabric-clos-cut.yaml"])
def test_fabric_examples_validate_with_every_protocol(name: str) -> None:
    exp = load_experiment(str(EXAMPLES / name))
    points = {(p.plan.protocol, p.plan.routing_options["bfd"]) for p in exp.points}
    assert points == {(p, b) for p in ("bgp", "ospf", "isis") for b in (False, True)}
    assert all(p.plan.routing_options["daemon"] == "frr" for p in exp.points)
    assert all(len(p.plan.nodes) == 10 for p in exp.points)


@pytest.mark.parametrize("name", ["fabric-clos-ibgp.yaml", "fabric-clos-ibgp-cut.yaml"])
def test_ibgp_examples_validate_with_the_spines_as_reflectors(name: str) -> None:
    exp = load_experiment(str(EXAMPLES / name))
    assert {p.plan.routing_options["bfd"] for p in exp.points} == {False, True}
    for point in exp.points:
        options = point.plan.routing_options
        assert point.plan.protocol == "bgp" and options["ibgp"] is True
        assert options["route_reflectors"] == ["s1", "s2"] and len(point.plan.nodes) == 10


@pytest.mark.parametrize(
    ("protocol", "options"),
    [
        ("ospf", {}),
        ("ospf", {"daemon": "frr", "bfd": True}),
        ("bgp", {"asn": "per-tier", "bfd": True}),
        ("bgp", {"ibgp": True, "route_reflectors": ["n1"]}),
        ("isis", {"hello": 2}),
    ],
)
def test_options_survive_the_plans_round_trip(protocol: str, options: dict[str, object]) -> None:
    """A lab that is up is driven from its stored plan: the dumped options, every field
    set, must validate again to the same plugin and options."""
    first = make(protocol, options)
    again = make(protocol, first.options.model_dump())
    assert type(again) is type(first) and again.options == first.options
