"""Routes are checked by forwarding packets through the planned tables in Python.

For every source and destination: follow longest-prefix matches hop by hop; static must
reach every destination on a shortest path, ECMP must list every equal-cost next hop.
"""

from __future__ import annotations

import functools
from collections import deque
from ipaddress import ip_address, ip_network

import pytest

from netrig.plan.lab import build_plan
from netrig.plan.model import LabPlan
from netrig.rig.prepare import load_text


def plan_of(kind: str, protocol: str, **size: int) -> LabPlan:
    topo = ", ".join(f"{k}: {v}" for k, v in {"kind": kind, **size}.items())
    return build_plan(
        load_text(f"name: r\ntopology: {{{topo}}}\nrouting: {{protocol: {protocol}}}\n")
    )


def hop_distances(plan: LabPlan, src: str) -> dict[str, int]:
    adj: dict[str, set[str]] = {n: set() for n in plan.nodes}
    for link in plan.links:
        adj[link.a].add(link.b)
        adj[link.b].add(link.a)
    dist = {src: 0}
    queue = deque([src])
    while queue:
        u = queue.popleft()
        for v in adj[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def lookup(plan: LabPlan, node: str, dst: str) -> list[str] | None:
    """Next-hop nodes for dst at node (longest prefix match); [] if delivered locally."""
    n = plan.nodes[node]
    addr = ip_address(dst)
    if any(ip_address(c.split("/")[0]) == addr for c in n.loopbacks):
        return []
    best: tuple[int, list[str]] | None = None
    for iface in n.ifaces:  # connected subnets
        for cidr in iface.addrs:
            net = ip_network(cidr, strict=False)
            if addr in net and (best is None or net.prefixlen > best[0]):
                peer = plan.nodes[iface.peer]
                best = (net.prefixlen, [peer.name])
    owner = {
        a.split("/")[0]: name for name, p in plan.nodes.items() for i in p.ifaces for a in i.addrs
    }
    for route in n.routes:
        net = ip_network(route.dst)
        if addr in net and (best is None or net.prefixlen > best[0]):
            best = (net.prefixlen, [owner[gw] for gw, _ in route.nexthops])
    return None if best is None else best[1]


def walk(plan: LabPlan, src: str, dst_addr: str) -> int:
    node, hops = src, 0
    while True:
        nxt = lookup(plan, node, dst_addr)
        assert nxt is not None, f"{node} has no route to {dst_addr}"
        if not nxt:
            return hops
        node, hops = nxt[0], hops + 1
        assert hops < 1000


@pytest.mark.parametrize(
    "kind,size",
    [
        ("ring", {"nodes": 9}),
        ("ring", {"nodes": 10}),
        ("ladder", {"nodes": 16}),
        ("grid", {"rows": 3, "cols": 4}),
        ("tree", {"depth": 2, "fanout": 3}),
        ("full-mesh", {"nodes": 5}),
        ("star", {"leaves": 6}),
    ],
)
@pytest.mark.parametrize("family", [4, 6])
def test_static_routes_follow_shortest_paths(kind: str, size: dict[str, int], family: int) -> None:
    plan = plan_of(kind, "static", **size)
    for src in plan.nodes:
        dist = hop_distances(plan, src)
        for dst in plan.nodes:
            assert walk(plan, src, plan.addr(dst, family)) == dist[dst], (src, dst)


def test_ecmp_lists_every_equal_cost_next_hop() -> None:
    plan = plan_of("grid", "ecmp", rows=3, cols=3)
    for src in plan.nodes:
        dist = hop_distances(plan, src)
        for dst in plan.nodes:
            if dst == src:
                continue
            nxt = lookup(plan, src, plan.addr(dst))
            assert nxt is not None
            d_dst = hop_distances(plan, dst)
            expected = {
                v for v in hop_distances(plan, src) if dist[v] == 1 and d_dst[v] == dist[dst] - 1
            }
            assert set(nxt) == expected, (src, dst)


def test_aggregation_keeps_tables_small() -> None:
    """A 100-node ring: ~200 destinations per family collapse to a covering prefix each way
    and a few more-specific exceptions (disjoint aligned blocks took ~55 routes a node)."""
    plan = plan_of("ring", "static", nodes=100)
    per_node = [len(n.routes) for n in plan.nodes.values()]
    assert max(per_node) <= 24
    assert plan.route_count() < 100 * 20
    nets = [ip_network(r.dst) for r in plan.nodes["n1"].routes]
    assert any(a != b and a.overlaps(b) for a in nets for b in nets)  # tables overlap


@pytest.mark.parametrize("protocol", ["static", "ecmp"])
def test_unreachable_and_outside_the_pools_is_never_routed(protocol: str) -> None:
    """Two islands: neither routes the other's addresses, and nothing outside 198.18.0.0/15
    and 2001:2::/48 is routed (a covering prefix may hold unused space inside them only)."""
    text = (
        "name: r\nnodes: [{name: a}, {name: b}, {name: c}, {name: d}, {name: e}]\n"
        "links: [{a: a, b: b}, {a: b, b: c}, {a: d, b: e}]\n"
        f"routing: {{protocol: {protocol}}}\n"
    )
    plan = build_plan(load_text(text))
    pools = [ip_network("198.18.0.0/15"), ip_network("2001:2::/48")]
    for name in "abc":
        for route in plan.nodes[name].routes:
            net = ip_network(route.dst)
            assert any(net.subnet_of(p) for p in pools if p.version == net.version)
            for other in "de":
                for family in (4, 6):
                    assert ip_address(plan.addr(other, family)) not in net, (name, route)
    for src in "abc":
        for dst in "abc":
            for family in (4, 6):
                assert walk(plan, src, plan.addr(dst, family)) == hop_distances(plan, src)[dst]


def test_none_and_bridge_install_no_routes() -> None:
    assert plan_of("ring", "none", nodes=5).route_count() == 0
    assert plan_of("ring", "bridge", nodes=5).route_count() == 0


def test_python_and_scipy_shortest_paths_agree(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Small labs use a Python Dijkstra, large ones scipy: both must give the same routes."""
    from netrig.plan import routes

    small = plan_of("grid", "ecmp", rows=4, cols=5)
    monkeypatch.setattr(routes, "SCIPY_FROM_VERTICES", 0)
    big_way = plan_of("grid", "ecmp", rows=4, cols=5)
    assert [n.routes for n in small.nodes.values()] == [n.routes for n in big_way.nodes.values()]


def test_large_labs_planned_in_forked_children_get_the_same_routes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """From PARALLEL_FROM_HOSTS hosts, forked children plan shares of the sources; the
    routes are those one process plans (a 12x12 grid here, with the thresholds lowered)."""
    from netrig.plan import routes

    plan = plan_of("grid", "static", rows=12, cols=12)
    serial = routes.compute_routes(plan, False)
    monkeypatch.setattr(routes, "DIST_CHUNK", 16)
    monkeypatch.setattr(routes, "PARALLEL_FROM_HOSTS", 100)
    monkeypatch.setattr(routes.os, "cpu_count", lambda: 3)
    forked = routes.compute_routes(plan, False)
    assert forked == serial and sum(len(r) for r in serial.values()) > 0


@pytest.mark.parametrize("protocol", ["static", "ecmp"])
def test_large_lab_tables_route_shortest_paths(monkeypatch, protocol: str) -> None:  # type: ignore[no-untyped-def]
    """What large labs get (scipy on the graph of hosts, runs merged before the smallest
    table), forced on a 6x6 grid with a costly link: every pair still takes a shortest path,
    and ECMP still lists every equal-cost next hop."""
    from netrig.plan import routes

    text = (
        "name: r\ntopology: {kind: grid, rows: 6, cols: 6}\n"
        f"links: [{{a: n8, b: n9, cost: 3}}]\nrouting: {{protocol: {protocol}}}\n"
    )
    plan = build_plan(load_text(text))
    monkeypatch.setattr(routes, "SCIPY_FROM_VERTICES", 0)
    monkeypatch.setattr(routes, "MERGE_FROM_VERTICES", 0)
    for name, planned in routes.compute_routes(plan, protocol == "ecmp").items():
        plan.nodes[name].routes = planned
    weight = {frozenset((link.a, link.b)): link.cost for link in plan.links}

    def cost_from(src: str) -> dict[str, int]:
        import heapq

        best, heap = {src: 0}, [(0, src)]
        while heap:
            d, u = heapq.heappop(heap)
            for link in plan.links:
                if u in (link.a, link.b):
                    v = link.b if u == link.a else link.a
                    if d + link.cost < best.get(v, 10**9):
                        best[v] = d + link.cost
                        heapq.heappush(heap, (best[v], v))
        return best

    costs = {n: cost_from(n) for n in plan.nodes}
    hops_at = functools.lru_cache(maxsize=None)(lambda node, addr: lookup(plan, node, addr))
    for src in plan.nodes:
        for dst in plan.nodes:
            for family in (4, 6):
                node, total = src, 0
                while node != dst:
                    nxt = hops_at(node, plan.addr(dst, family))
                    assert nxt, (src, dst, node)
                    for hop in nxt:  # every branch is a shortest way on
                        step = weight[frozenset((node, hop))]
                        assert step + costs[hop][dst] == costs[node][dst], (src, dst, node, hop)
                    if protocol == "ecmp":
                        expected = {
                            v for v in costs if frozenset((node, v)) in weight
                            and weight[frozenset((node, v))] + costs[v][dst] == costs[node][dst]
                        }  # fmt: skip
                        assert set(nxt) == expected, (src, dst, node)
                    total += weight[frozenset((node, nxt[0]))]
                    node = nxt[0]
                assert total == costs[src][dst]
