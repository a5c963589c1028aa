"""The FIB-walk check (netrig.lab.fibcheck): it passes exactly when pinging every pair would,
and fails, naming the cause, when a route, a forwarding switch or a link is broken."""

from __future__ import annotations

import subprocess
from pathlib import Path

from netrig.lab import check, fibcheck
from netrig.rig import Lab
from netrig.rig.prepare import load_text, plan_lab
from tests.conftest import netrig_cli, requires_root


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def gateway_routes(lab: Lab, node: str, family: str = "-4") -> list[str]:
    out = ip(family, "-n", lab.plan.nodes[node].ns, "route")
    return [line.split()[0] for line in out.splitlines() if " via " in line]


def covering(lab: Lab, node: str, addr: str) -> str:
    """The destination of `node`'s route that carries packets to addr."""
    family = "-6" if ":" in addr else "-4"
    out = ip(family, "-n", lab.plan.nodes[node].ns, "route", "get", addr)
    via = out.split()[2]
    for line in ip(family, "-n", lab.plan.nodes[node].ns, "route").splitlines():
        if f"via {via} " in line + " ":
            dst = line.split()[0]
            if _contains(dst, addr):
                return dst
    raise AssertionError(f"no route to {addr} in {node}")


def _length(dst: str) -> int:
    """A route's prefix length (ip writes a host route without one)."""
    from ipaddress import ip_network

    return ip_network(dst).prefixlen


def _contains(cidr: str, addr: str) -> bool:
    from ipaddress import ip_address, ip_network

    return ip_address(addr) in ip_network(cidr, strict=False)


def both_walks_agree(lab: Lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The pure-Python walk (small labs) and the numpy one (large labs) find the same."""
    kernels = fibcheck.read_kernels(lab.plan)
    small = fibcheck.prove(lab.plan, kernels)
    with monkeypatch.context() as patch:
        patch.setattr(fibcheck, "SMALL_VERTICES", 0)
        large = fibcheck.prove(lab.plan, kernels)
    assert (small.pairs, small.failed) == (large.pairs, large.failed)
    assert small.reasons == large.reasons


def everything_pinged(lab: Lab) -> set[tuple[str, str, str]]:
    pairs = check.check_pairs(lab.plan, "all")
    return set(check.ping_pairs(lab.plan, pairs, 1.0).failed)


@requires_root
def test_a_healthy_lab_is_proven_with_few_echoes(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "grid", "rows": 4, "cols": 5}})
    result = lab.check_result
    assert result is not None and result.ok and result.method == "fib"
    every = check.check_pairs(lab.plan, "all")
    assert result.pairs == len(every) == 20 * 19 * 2  # every pair, both families, proven
    assert result.echoes == len(lab.plan.links) * 2 + 20 * 2  # each link, a sample of pairs
    assert everything_pinged(lab) == set()
    both_walks_agree(lab, monkeypatch)


@requires_root
def test_a_deleted_route_fails_the_check_on_exactly_the_pairs_pings_lose(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "grid", "rows": 4, "cols": 5}})
    for node, family in (("n7", "-4"), ("n13", "-6")):
        # the covering route (routes overlap): what only it held now has no route at all
        victim = min(gateway_routes(lab, node, family), key=lambda d: _length(d))
        ns = lab.plan.nodes[node].ns
        line = next(r for r in ip(family, "-n", ns, "route").splitlines() if r.split()[0] == victim)
        ip(family, "-n", ns, "route", "del", victim)
        result = check.verify(lab.plan, "auto", 1.0)
        assert not result.ok
        assert set(result.failed) == everything_pinged(lab)
        assert any(f"{node} has no usable route" in why for why in result.reasons.values())
        assert "has no usable route" in result.describe()
        both_walks_agree(lab, monkeypatch)
        ip(family, "-n", ns, "route", "add", *line.split())  # put back for the next case
        assert check.verify(lab.plan, "auto", 1.0).ok


@requires_root
def test_a_transit_node_that_does_not_forward_fails_the_check(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 4}})
    ns = lab.plan.nodes["n2"].ns
    subprocess.run(
        ["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=0"], check=True
    )
    result = check.verify(lab.plan, "auto", 1.0)
    assert not result.ok
    assert ("n1", "n3", lab.addr("n3", 6)) in result.failed
    assert ("n1", "n2", lab.addr("n2", 6)) not in result.failed  # n2 itself still answers
    assert all(":" in addr for _s, _d, addr in result.failed)  # IPv4 still forwards
    assert "n2 does not forward IPv6" in result.describe(limit=50)
    assert set(result.failed) == everything_pinged(lab)
    both_walks_agree(lab, monkeypatch)


@requires_root
def test_a_link_down_fails_the_check(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "ring", "nodes": 6}})
    toward_n5 = next(i.name for i in lab.plan.nodes["n4"].ifaces if i.peer == "n5")
    ip("-n", lab.plan.nodes["n4"].ns, "link", "set", toward_n5, "down")
    result = check.verify(lab.plan, "auto", 0.5)
    assert not result.ok
    assert ("n4", "n5", lab.addr("n5", 4)) in result.failed  # pinged across: no reply
    assert ("n3", "n5", lab.addr("n5", 4)) in result.failed  # and the FIB path is cut
    both_walks_agree(lab, monkeypatch)


@requires_root
def test_every_branch_of_a_multipath_route_is_walked(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "ring", "nodes": 8}, "routing": {"protocol": "ecmp"}})
    assert lab.check_result is not None and lab.check_result.method == "fib"
    # n1 reaches n5 (opposite) over n2…n4 and over n8…n6; cut only the n2 side
    victim = covering(lab, "n3", lab.addr("n5"))
    ip("-n", lab.plan.nodes["n3"].ns, "route", "del", victim)
    result = check.verify(lab.plan, "auto", 0.5)
    assert ("n1", "n5", lab.addr("n5")) in result.failed  # a flow may hash onto the cut side
    assert ("n1", "n8", lab.addr("n8")) not in result.failed
    why = result.reasons[("n1", "n5", lab.addr("n5"))]
    # with n3's route gone the packet has no route there, or (routes overlap) falls to a
    # covering prefix that sends it back
    assert "multipath" in why or "n3 has no usable route" in why or "loop: n1 → n2 → n3" in why
    both_walks_agree(lab, monkeypatch)


def kernel_routes(lab: Lab, node: str, family: str) -> list[tuple[str, str]]:
    """(destination, gateway) of each of the node's routes through a gateway."""
    out = ip(family, "-n", lab.plan.nodes[node].ns, "route")
    return [(line.split()[0], line.split()[2]) for line in out.splitlines() if " via " in line]


def more_specifics(lab: Lab, node: str, family: str) -> list[tuple[str, str]]:
    """(more-specific, covering) pairs of the node's routes that go different ways."""
    from ipaddress import ip_network

    routes = [(ip_network(d), gw) for d, gw in kernel_routes(lab, node, family)]
    return [
        (str(inner), str(outer))
        for inner, gw_in in routes
        for outer, gw_out in routes
        if inner != outer and inner.subnet_of(outer) and gw_in != gw_out  # type: ignore[arg-type]
    ]


@requires_root
def test_overlapping_tables_are_walked_by_longest_prefix(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Routes overlap (a covering prefix one way, more-specific exceptions the other): the
    walk must take the longest match, as the kernel does, and so prove every pair."""
    lab = make_lab({"topology": {"kind": "ring", "nodes": 10}})
    for node in lab.plan.nodes:
        for family in ("-4", "-6"):
            assert more_specifics(lab, node, family), (node, family)  # the tables overlap
    result = lab.check_result
    assert result is not None and result.ok and result.method == "fib"
    assert result.pairs == len(check.check_pairs(lab.plan, "all"))
    assert everything_pinged(lab) == set()
    both_walks_agree(lab, monkeypatch)


@requires_root
def test_a_missing_more_specific_route_fails_the_check(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without its more-specific route, a destination falls to the covering prefix, which
    leads the other way round the ring and back: the check fails on exactly the pairs that
    pings lose (the covering prefix alone must not pass for the exception)."""
    lab = make_lab({"topology": {"kind": "ring", "nodes": 10}})
    for node, family in (("n3", "-4"), ("n8", "-6")):
        near = {lab.addr(p, 4 if family == "-4" else 6) for p in lab.plan.nodes if p != node}
        victim = next(
            inner
            for inner, _outer in more_specifics(lab, node, family)
            if any(_contains(inner, a) for a in near)
        )
        ip(family, "-n", lab.plan.nodes[node].ns, "route", "del", victim)
        result = check.verify(lab.plan, "auto", 1.0)
        assert result.method == "fib"
        assert not result.ok
        lost = everything_pinged(lab)
        assert lost and set(result.failed) == lost
        assert any(node in pair[:2] or _contains(victim, pair[2]) for pair in lost)
        both_walks_agree(lab, monkeypatch)


@requires_root
def test_check_sample_on_a_routed_lab_proves_every_pair(tmp_path: Path, lab_name: str) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(
        f"name: {lab_name}\ntopology: {{kind: grid, rows: 6, cols: 6}}\n"
        "check: {reachability: sample}\n"
    )
    every = check.check_pairs(plan_lab(load_text(path.read_text())), "all")
    up = netrig_cli("up", "-q", str(path))
    try:
        assert up.returncode == 0, up.stderr
        assert f"{len(every)} pairs reachable" in up.stdout
    finally:
        assert netrig_cli("down", lab_name).returncode == 0


def test_what_the_fib_walk_covers() -> None:
    def plan(extra: str) -> object:
        return plan_lab(load_text(f"name: fc\ntopology: {{kind: ring, nodes: 4}}\n{extra}"))

    assert fibcheck.eligible(plan("routing: {protocol: static}\n"))  # type: ignore[arg-type]
    assert fibcheck.eligible(plan("routing: {protocol: ecmp}\n"))  # type: ignore[arg-type]
    switched = "nodes: [{name: sw1, kind: switch}]\nlinks: [{a: n1, b: sw1}, {a: n2, b: sw1}]\n"
    assert not fibcheck.eligible(plan(switched))  # type: ignore[arg-type]
    assert not fibcheck.eligible(plan("routing: {protocol: none}\n"))  # type: ignore[arg-type]
    strict = "sysctls: {net.ipv4.conf.all.rp_filter: 1}\n"  # drops asymmetric paths
    assert not fibcheck.eligible(plan(strict))  # type: ignore[arg-type]


def test_sampled_and_link_pairs_are_promised_and_stable() -> None:
    text = "name: fc2\ntopology: {kind: ring, nodes: 300}\n"
    lab_plan = plan_lab(load_text(text))
    links = fibcheck.link_pairs(lab_plan)
    assert len(links) == 300 * 2  # one per link and family
    every = set(check.check_pairs(lab_plan, "all"))
    sample = fibcheck.sample_pairs(lab_plan)
    assert len(sample) == 2 * fibcheck.SAMPLE_PAIRS
    assert set(sample) <= every
    assert fibcheck.sample_pairs(lab_plan) == sample


def test_planned_hops_of_large_labs_are_the_plans_hop_counts(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Large labs count planned hops with scipy on the graph of hosts alone (or, with a big
    network, hosts and networks); both equal the pure-Python breadth-first counts."""
    from netrig.plan.prefixes import hop_counts

    bodies = [
        "topology: {kind: grid, rows: 5, cols: 6}\n",
        "nodes: [{name: sw, kind: switch}, {name: a}, {name: b}, {name: c}, {name: d}]\n"
        "links: [{a: a, b: sw}, {a: b, b: sw}, {a: c, b: sw}, {a: c, b: d}]\n",  # a segment
        "nodes: [{name: a}, {name: b}, {name: c}, {name: d}]\nlinks: [{a: a, b: b}, {a: c, b: d}]\n",
    ]
    monkeypatch.setattr(fibcheck, "SMALL_VERTICES", 0)
    for body in bodies:
        lab_plan = plan_lab(load_text(f"name: ph\n{body}"))
        hosts = list(lab_plan.nodes)
        expected = hop_counts(lab_plan, hosts)
        for members in (16, 0):  # hosts alone / hosts and networks
            monkeypatch.setattr(fibcheck, "HOST_GRAPH_MEMBERS", members)
            got = fibcheck.planned_hops(lab_plan, hosts)(list(range(len(hosts))))
            assert got.tolist() == expected, (body, members)


@requires_root
def test_a_forked_child_reads_half_the_kernels_and_the_walk_runs_in_another(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """From FORK_WALK_FROM nodes the check reads half the namespaces in a forked child and
    walks the FIBs in another: what it reads and finds is what one process does."""
    lab = make_lab({"topology": {"kind": "ring", "nodes": 12}})
    monkeypatch.setattr(check, "FORK_WALK_FROM", 2)
    forked_read = check.read_kernels(lab.plan)
    assert forked_read == fibcheck.read_kernels(lab.plan)
    assert set(forked_read) == set(lab.plan.nodes)
    ip("-n", lab.plan.nodes["n3"].ns, "link", "set", lab.plan.nodes["n3"].ifaces[0].name, "down")
    forked_check = check.verify(lab.plan, "auto", 0.5)
    with monkeypatch.context() as patch:
        patch.setattr(check, "FORK_WALK_FROM", 10**6)
        one_process = check.verify(lab.plan, "auto", 0.5)
    assert not forked_check.ok and forked_check.failed == one_process.failed
    assert forked_check.reasons == one_process.reasons


@requires_root
def test_check_sample_walks_toward_a_sample_of_destinations(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`check: sample` walks every node's FIB path toward SAMPLE_DESTINATIONS destinations
    per family; what it finds broken there, the full walk finds too."""
    lab = make_lab({"topology": {"kind": "grid", "rows": 4, "cols": 4}}, check=False)
    monkeypatch.setattr(check, "SAMPLE_DESTINATIONS", 3)
    full = check.verify(lab.plan, "auto", 1.0)
    sampled = check.verify(lab.plan, "sample", 1.0)
    assert full.ok and sampled.ok and full.method == sampled.method == "fib"
    assert 0 < sampled.pairs < full.pairs
    kernels = fibcheck.read_kernels(lab.plan)
    kernels["n6"].routes[4].clear()  # as if n6 had lost every IPv4 route
    every = fibcheck.prove(lab.plan, kernels)
    some = fibcheck.prove(lab.plan, kernels, destinations=3)
    assert every.failed  # pairs from, to and through n6
    assert some.failed and set(some.failed) <= set(every.failed) and some.pairs < every.pairs
    all_of_them = fibcheck.prove(lab.plan, kernels, destinations=10**6)
    assert (all_of_them.pairs, all_of_them.failed) == (every.pairs, every.failed)


def test_a_large_lab_out_of_time_is_told_how_to_give_it_longer() -> None:
    """A 4,000-leaf star's check takes ~15 s: past the default 10 s its unanswered echoes
    come with the setting that gives it longer; a failure the FIBs explain, or a small
    lab, gets no such hint."""
    from netrig.lab.check import NO_REPLY, CheckResult
    from netrig.rig.lab import LARGE_LAB, _longer_hint

    pair = ("n1", "n2402", "198.19.18.193")
    late = CheckResult(8002, [pair], 10.0, "fib", 8002, {pair: NO_REPLY})
    assert _longer_hint(LARGE_LAB, 10.0, late) == (
        f"; a lab of {LARGE_LAB} nodes may need longer to answer every echo: try "
        "`check: {timeout: 60}`"
    )
    assert _longer_hint(LARGE_LAB - 1, 10.0, late) == ""
    broken = CheckResult(8002, [pair], 10.0, "fib", 8002, {pair: "no route in n1"})
    assert _longer_hint(LARGE_LAB, 10.0, broken) == ""
