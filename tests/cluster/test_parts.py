"""Splitting a plan over hosts: cut links become tunnels, routes through them wait for them."""

from __future__ import annotations

from netrig.cluster import parts
from netrig.cluster.placement import cut_links, partition
from netrig.rig import Lab


def _ring(n: int, **extra: object) -> Lab:
    return Lab.from_spec({"name": "prt", "topology": {"kind": "ring", "nodes": n}, **extra})


def test_a_ring_over_three_hosts_is_cut_three_times_evenly() -> None:
    plan = _ring(60).plan
    where = partition(list(plan.nodes), [(lk.a, lk.b) for lk in plan.links], ["a", "b", "c"])
    assert sorted(list(where.values()).count(h) for h in "abc") == [20, 20, 20]
    assert cut_links([(lk.a, lk.b) for lk in plan.links], where) == 3


def test_split_turns_each_cut_link_into_two_tunnel_ends() -> None:
    plan = _ring(12).plan
    where = partition(list(plan.nodes), [(lk.a, lk.b) for lk in plan.links], ["a", "b"])
    split = parts.split(plan, where)
    tunnels = [t for p in split.values() for t in p.tunnels]
    assert len(tunnels) == 4  # 2 cut links, one end on each side
    assert {t.mtu for t in tunnels} == {1450}
    assert len({t.vni for t in tunnels}) == 2  # one VNI per link, shared by its two ends
    for host, part in split.items():
        assert set(part.plan.nodes) == {n for n, h in where.items() if h == host}
        assert all(where[lk.a] == where[lk.b] == host for lk in part.plan.links)
        for name, node in part.plan.nodes.items():
            ends = {t.index for t in part.tunnels if t.node == name}
            assert not ends & {i.index for i in node.ifaces}
            kept = [r for r in node.routes if any(ix in ends for _, ix in r.nexthops)]
            assert kept == []  # routes through a tunnel wait for it
            full = plan.nodes[name].routes
            assert len(node.routes) + len(part.deferred_routes[name]) == len(full)
            for i in node.ifaces:  # link numbers point into the part's own links
                link = part.plan.links[i.link]
                assert name in (link.a, link.b)


def test_a_daemons_part_starts_its_own_nodes_and_can_look_up_its_peers() -> None:
    plan = _ring(6, routing={"protocol": "ospf"}).plan
    where = {n: "a" if i < 3 else "b" for i, n in enumerate(plan.nodes)}
    part = parts.split(plan, where)["a"]
    assert part.plan.protocol == "none"  # the lab core builds it without daemons ...
    assert part.daemons is not None and part.daemons.protocol == "ospf"  # ... they come after
    assert set(part.daemons.nodes) == {"n1", "n2", "n3"}
    assert part.daemons.node("n4").name == "n4" and part.daemons.node("n6").name == "n6"
    assert {i.name for i in part.daemons.nodes["n3"].ifaces} == {
        i.name for i in plan.nodes["n3"].ifaces
    }  # the tunnel end is one of the daemon's interfaces


def test_batman_splits_with_its_daemons_started_after_the_tunnels() -> None:
    """batmand across hosts: each part builds without the protocol, and its daemons start
    once the tunnels exist, on every interface of its nodes (tunnel ends included); a
    tunnel end's IPv4 address gets the broadcast address batmand sends to."""
    plan = _ring(6, routing={"protocol": "batman"}).plan
    split = parts.split(plan, {n: "a" if i < 3 else "b" for i, n in enumerate(plan.nodes)})
    assert {p.plan.protocol for p in split.values()} == {"none"}
    assert all(p.daemons is not None and p.daemons.protocol == "batman" for p in split.values())
    ends = [t for p in split.values() for t in p.tunnels]
    assert len(ends) == 4  # two cut links, two ends each
    for t in ends:
        cidr = next(a for a in t.addrs if ":" not in a)
        assert parts._broadcast(cidr) not in (None, cidr.split("/")[0])
    assert parts._broadcast("198.19.0.0/31") is None and parts._broadcast("2001:2::1/64") is None


def test_pinned_nodes_go_to_their_hosts_the_others_are_partitioned() -> None:
    """`host: NAME` of a node: it goes there, whatever the partition said; a pin of a node
    the lab has not is refused."""
    import pytest

    from netrig.cluster.placement import place
    from netrig.cluster.sweep import placed

    nodes = [f"n{i}" for i in range(1, 7)]
    ring = [(f"n{i}", f"n{i % 6 + 1}") for i in range(1, 7)]
    free = partition(nodes, ring, ["h1", "h2"])
    moved = next(n for n in nodes if free[n] == "h1")
    where = place(nodes, ring, ["h1", "h2"], {moved: "h3"})
    assert where[moved] == "h3"
    assert {n: h for n, h in where.items() if n != moved} == {
        n: h for n, h in free.items() if n != moved}
    with pytest.raises(ValueError, match="n9"):
        place(nodes, ring, ["h1"], {"n9": "h1"})
    assert placed({"name": "x", "topology": {"kind": "ring"}}) is None
    doc = {"nodes": [{"name": "n1", "host": "h2"}, {"name": "n2"}]}
    assert (placed(doc).hosts, placed(doc).pins) == (0, {"n1": "h2"})  # type: ignore[union-attr]
    assert placed({"placement": {"hosts": 3}}).hosts == 3  # type: ignore[union-attr]


def test_a_switched_lab_is_bad_input_before_a_sweep_spreads_it() -> None:
    """`run --cluster` with placement had stored one failed run per point for it."""
    import pytest

    from netrig.lab.build import BadInput

    switched = Lab.from_spec({"name": "sw", "nodes": [{"name": "s", "kind": "switch"},
                              {"name": "a"}, {"name": "b"}],
                              "links": [{"a": "a", "b": "s"}, {"a": "b", "b": "s"}]})  # fmt: skip
    with pytest.raises(BadInput, match="switch node s: a switched segment across hosts"):
        parts.check_spreadable(switched.plan)
    parts.check_spreadable(_ring(6).plan)  # a routed ring spreads
