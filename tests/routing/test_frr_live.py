"""FRR in real namespaces: BGP, IS-IS and OSPF (daemon: frr) converge on a leaf-spine
fabric and on a ring, spread flows over both spines, reroute around a cut leaf-spine link in
seconds, answer vtysh per node, restart with `netrig node`, and leave no daemon behind (the
`daemon_lab` fixture checks every PID the lab ever recorded after `down`)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from netrig.lab import faults
from netrig.lab.trace import count_paths
from netrig.rig import Lab
from tests.conftest import netrig_cli, requires_root, requires_tool
from tests.routing.test_frr_plans import SEGMENT
from tests.routing.test_routing_live import Probe, daemon_lab, path_nodes, wait_for

pytestmark = [requires_root, requires_tool("vtysh"), pytest.mark.root]
assert daemon_lab  # a fixture, used by name

CLOS = {"kind": "clos", "spines": 2, "leaves": 4, "hosts_per_leaf": 1}
PROTOCOLS = {
    "bgp": {"protocol": "bgp"},
    "ibgp": {"protocol": "bgp", "ibgp": True},
    "isis": {"protocol": "isis"},
    "ospf-frr": {"protocol": "ospf", "daemon": "frr"},
}
FLOWS = 64


def spines_used(lab: Lab, src: str, dst: str) -> Counter[tuple[str, ...]]:
    """How many of 64 TCP flows from src to dst's loopback cross each sequence of spines
    (("s1",) for a valley-free path over s1; ("unreached",) for flows that are dropped)."""
    used: Counter[tuple[str, ...]] = Counter()
    for path, flows in count_paths(lab.plan, src, lab.addr(dst), FLOWS).items():
        spines = tuple(n for n in path.nodes() if n.startswith("s"))
        used[spines if path.reached else ("unreached",)] += flows
    return used


def both_spines_installed(lab: Lab, leaf: str, dst: str) -> bool:
    """Whether the leaf's kernel has its multipath route to dst over both spines. `up`
    promises reachability, not every equal-cost path: under load (CI) the second path of a
    reflected route came a moment after the check had passed."""
    out = lab.exec(leaf, ["ip", "route", "show", lab.addr(dst)], capture_output=True).stdout
    return out.count("nexthop via") == 2


def vtysh(lab: Lab, node: str, command: str) -> str:
    """vtysh by hand, as a user runs it: through `netrig exec`."""
    out = netrig_cli("exec", lab.name, node, "--", "vtysh", "-c", command, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


@requires_tool("ping")
def test_bgp_clos_converges_spreads_flows_over_both_spines_and_answers_vtysh(daemon_lab) -> None:  # type: ignore[no-untyped-def]
    lab = daemon_lab({"topology": CLOS, "routing": {"protocol": "bgp", "asn": "per-tier"}})
    assert lab.check_result is not None and lab.check_result.ok  # every host pings every host
    assert lab.check_result.pairs == 10 * 9 * 2
    assert wait_for(lambda: both_spines_installed(lab, "l1", "h4"), 10) is not None
    used = spines_used(lab, "h1", "h4")
    assert set(used) == {("s1",), ("s2",)} and min(used.values()) >= FLOWS // 5, used
    out = netrig_cli("trace", lab.name, "h1", "h4", "--count", str(FLOWS))
    assert out.returncode == 0 and "s1 (" in out.stdout and "s2 (" in out.stdout, out.stdout
    # the leaf's own bgpd answers: three unnumbered sessions (two spines, its host), each
    # established with prefixes received; the spines share one AS (RFC 7938)
    summary = vtysh(lab, "l1", "show bgp ipv4 unicast summary")
    sessions = re.findall(r"^(eth\d)\s+4\s+(\d+)\s+.*\s(\d+)\s+(\d+)\s+N/A$", summary, re.M)
    assert sorted(s[0] for s in sessions) == ["eth0", "eth1", "eth2"], summary
    spine_as = {asn for name, asn, _rcvd, _sent in sessions if name in ("eth0", "eth1")}
    assert len(spine_as) == 1, summary
    assert all(int(rcvd) > 0 for _n, _a, rcvd, _s in sessions), summary
    # IPv4 routes over IPv6 link-local next hops would be RFC 8950; here the links have
    # IPv4 addresses too, so the kernel routes name the spines' link addresses
    routes = lab.exec("l1", ["ip", "route", "show", lab.addr("h4")], capture_output=True).stdout
    assert "proto bgp" in routes and routes.count("nexthop via") == 2, routes


@requires_tool("ping")
def test_ibgp_clos_reflects_through_the_spines_over_both_of_them(daemon_lab) -> None:  # type: ignore[no-untyped-def]
    lab = daemon_lab({"topology": CLOS, "routing": {"protocol": "bgp", "ibgp": True}})
    assert lab.check_result is not None and lab.check_result.ok
    assert lab.check_result.pairs == 10 * 9 * 2
    assert wait_for(lambda: both_spines_installed(lab, "l1", "h4"), 10) is not None
    used = spines_used(lab, "h1", "h4")
    assert set(used) == {("s1",), ("s2",)} and min(used.values()) >= FLOWS // 5, used
    # one AS: l1's three sessions (two spines, its host) are internal, with prefixes
    summary = vtysh(lab, "l1", "show bgp ipv4 unicast summary")
    assert "local AS number 4200000000" in summary, summary
    sessions = re.findall(r"^(eth\d)\s+4\s+(\d+)\s+.*\s(\d+)\s+(\d+)\s+N/A$", summary, re.M)
    assert sorted(s[0] for s in sessions) == ["eth0", "eth1", "eth2"], summary
    assert {asn for _n, asn, _r, _s in sessions} == {"4200000000"}, summary
    assert all(int(rcvd) > 0 for _n, _a, rcvd, _s in sessions), summary
    # h4's loopback reached l1 through both spines, reflected by each (cluster lists)
    entry = vtysh(lab, "l1", f"show bgp ipv4 unicast {lab.addr('h4')}/32")
    assert entry.count("Cluster list: ") == 2 and entry.count("multipath") == 2, entry
    assert "Route-Reflector Client" in vtysh(lab, "s1", "show bgp neighbors eth0")
    routes = lab.exec("l1", ["ip", "route", "show", lab.addr("h4")], capture_output=True).stdout
    assert "proto bgp" in routes and routes.count("nexthop via") == 2, routes
    out = lab.exec("h1", ["ping", "-c10", "-i0.05", "-W2", lab.addr("h4")], capture_output=True)
    assert " 0% packet loss" in out.stdout, out.stdout


@requires_tool("ping")
@pytest.mark.slow
def test_ibgp_fat_tree_reflected_by_its_cores_reaches_every_node(daemon_lab) -> None:  # type: ignore[no-untyped-def]
    lab = daemon_lab(
        {"topology": {"kind": "fat-tree", "k": 4}, "routing": {"protocol": "bgp", "ibgp": True}}
    )
    assert lab.check_result is not None and lab.check_result.ok
    assert lab.check_result.pairs == 36 * 35 * 2
    # h1 → h16: up through both aggregation switches of pod 1, over two cores
    hops = count_paths(lab.plan, "h1", lab.addr("h16"), FLOWS)
    cores = {n for path in hops for n in path.nodes() if n.startswith("c")}
    assert len(cores) >= 2 and all(path.reached and len(path.nodes()) == 7 for path in hops)


@requires_tool("ping")
def test_ibgp_with_a_chosen_reflector_on_link_addresses_with_bfd(daemon_lab) -> None:  # type: ignore[no-untyped-def]
    routing = {"protocol": "bgp", "ibgp": True, "route_reflectors": ["n3"], "bfd": True}
    lab = daemon_lab({"topology": {"kind": "chain", "nodes": 4}, "routing": routing})
    assert lab.check_result is not None and lab.check_result.ok
    assert path_nodes(lab, "n1", "n4") == ["n1", "n2", "n3", "n4"]
    assert path_nodes(lab, "n1", "n4", family=6) == ["n1", "n2", "n3", "n4"]
    # n2 reflects n1's routes up to n3; sessions on the link addresses, one per family
    summary = vtysh(lab, "n2", "show bgp summary")
    assert summary.count("4200000000") >= 4 and "eth" not in summary.split("Neighbor")[1]
    peers = vtysh(lab, "n2", "show bfd peers brief")
    assert len(re.findall(r"\bup\b", peers)) >= 2, peers


@requires_tool("ping")
@pytest.mark.parametrize(
    "routing",
    [{"protocol": "bgp"}, {"protocol": "bgp", "ibgp": True, "route_reflectors": ["n3"]}],
    ids=["ebgp", "ibgp"],
)
def test_bgp_on_a_shared_segment_of_two_switches(daemon_lab, routing) -> None:  # type: ignore[no-untyped-def]
    spec = {"nodes": [*SEGMENT["nodes"], *({"name": f"n{i}"} for i in range(1, 5))]}
    lab = daemon_lab({**spec, "links": SEGMENT["links"], "routing": routing})
    assert lab.check_result is not None and lab.check_result.ok
    # n1 reaches n4 across the segment (n3 is one hop away there, the switches hidden)
    assert path_nodes(lab, "n1", "n4") == ["n1", "n3", "n4"]
    # (IPv6 goes by link-local next hops, which the tracer maps on links only: ping)
    v6 = lab.addr("n4", 6)
    out = lab.exec("n1", ["ping", "-c5", "-i0.05", "-W2", v6], capture_output=True)
    assert " 0% packet loss" in out.stdout, out.stdout
    summary = vtysh(lab, "n2", "show bgp summary")
    n3_port = next(i for i in lab.plan.node("n3").ifaces if i.peer.startswith("sw"))
    v4 = n3_port.addrs[0].split("/")[0]
    assert re.search(rf"^{re.escape(v4)}\s+4\s.*\s\d+\s+\d+\s+N/A$", summary, re.M), summary


@requires_tool("fping")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_cut_leaf_spine_link_is_routed_around_within_seconds(daemon_lab, protocol) -> None:  # type: ignore[no-untyped-def]
    lab = daemon_lab({"topology": CLOS, "routing": PROTOCOLS[protocol]})
    # towards h1, l4 spreads flows over both spines; once l1-s1 is down, s1 cannot reach
    # h1 any more, and only the protocol can tell l4 so (the kernel of l4 sees no change)
    both = {("s1",), ("s2",)}
    assert wait_for(lambda: set(spines_used(lab, "h4", "h1")) == both, 30) is not None
    probe = Probe(lab, "h4", "h1")
    assert wait_for(lambda: probe.answered_since(20), 5) is not None
    faults.set_link(lab, "l1", "s1", up=False)
    took = wait_for(lambda: set(spines_used(lab, "h4", "h1")) == {("s2",)}, 10)
    assert took is not None, f"{protocol}: h4 → h1 still crosses s1 10 s after the cut"
    sent = len(probe.seqs)
    assert wait_for(lambda: probe.answered_since(sent + 50), 5) is not None
    outage, _sent, _received = probe.stop()
    assert outage < 3.0, f"{protocol}: h4 → h1 lost {outage:.2f} s of echoes"
    faults.set_link(lab, "l1", "s1", up=True)
    back = wait_for(lambda: set(spines_used(lab, "h4", "h1")) == both, 30, step=0.5)
    assert back is not None, f"{protocol}: s1 unused 30 s after l1-s1 came back"
    # and l1's own kernel, whose port flapped, spreads over both spines again (FRR 8.4
    # kept one spine there while its RIB had two, until nexthop objects were turned off)
    back = wait_for(lambda: set(spines_used(lab, "h1", "h4")) == both, 30, step=0.5)
    assert back is not None, f"{protocol}: h1 → h4 on one spine 30 s after l1-s1 came back"


@requires_tool("ping")
@pytest.mark.parametrize("protocol", ["isis", "ospf-frr"])
def test_ring_of_6_takes_the_cheap_way_round_and_carries_traffic(daemon_lab, protocol) -> None:  # type: ignore[no-untyped-def]
    lab = daemon_lab(
        {
            "topology": {"kind": "ring", "nodes": 6},
            "links": [{"a": "n1", "b": "n2", "cost": 10}],  # 5 hops of cost 1 are cheaper
            "routing": PROTOCOLS[protocol],
        }
    )
    assert lab.check_result is not None and lab.check_result.ok
    # routed is not yet shortest: a first SPF may run before every LSP or LSA is in, on
    # each node by itself (the echo's reply follows n2's routes: n2 -> n1 is waited for too)
    cheap = ["n1", "n6", "n5", "n4", "n3", "n2"]
    for family in (4, 6):
        for src, dst, want in (("n1", "n2", cheap), ("n2", "n1", cheap[::-1])):
            took = wait_for(
                lambda f=family, s=src, d=dst, w=want: path_nodes(lab, s, d, family=f) == w, 10
            )
            assert took is not None, (family, src, path_nodes(lab, src, dst, family=family))
    out = lab.exec("n1", ["ping", "-c20", "-i0.05", "-W2", lab.addr("n2")], capture_output=True)
    assert " 0% packet loss" in out.stdout, out.stdout
    assert int(re.search(r"ttl=(\d+)", out.stdout).group(1)) == 60  # type: ignore[union-attr]
    if protocol == "isis":
        neighbours = vtysh(lab, "n4", "show isis neighbor")
        assert neighbours.count(" Up ") == 2 and "n3" in neighbours and "n5" in neighbours
    else:
        neighbours = vtysh(lab, "n4", "show ip ospf neighbor")
        assert neighbours.count("Full/") == 2, neighbours
    logs = netrig_cli("logs", lab.name, "n4")
    assert logs.returncode == 0 and "zebra" in logs.stdout


def test_node_stop_and_start_restart_every_frr_daemon_with_bfd(daemon_lab) -> None:  # type: ignore[no-untyped-def]
    lab = daemon_lab(
        {"topology": {"kind": "chain", "nodes": 3}, "routing": {"protocol": "bgp", "bfd": True}}
    )

    # `up` promises routes; BFD's sessions come up beside them (in CI one was still in
    # init just after `up`): one per link at least, waited for
    def bfd_up() -> bool:
        return len(re.findall(r"\bup\b", vtysh(lab, "n2", "show bfd peers brief"))) >= 2

    assert wait_for(bfd_up, 10) is not None, vtysh(lab, "n2", "show bfd peers brief")
    stopped = netrig_cli("node", lab.name, "n2", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert all(d in stopped.stdout for d in ("n2/zebra", "n2/bfdd", "n2/bgpd")), stopped.stdout
    gone = wait_for(lambda: path_nodes(lab, "n1", "n3") is None, 10)
    assert gone is not None, "n1 still routes to n3 with n2's daemons stopped"
    started = netrig_cli("node", lab.name, "n2", "start")
    assert started.returncode == 0, started.stderr
    lab.remember()  # the restarted daemons' PIDs must be gone after down too
    took = lab.wait_converged("after a restart")
    assert took < 10, f"restarted FRR took {took:.1f} s to converge"  # zebra's retry is 10 s
    assert path_nodes(lab, "n1", "n3") == ["n1", "n2", "n3"]
