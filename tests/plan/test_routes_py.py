"""Small labs are routed in pure Python (netrig.plan.routes_py), large ones with numpy and
scipy (netrig.plan.routes): both must give exactly the same routes, in the same order."""

from __future__ import annotations

import pytest

from netrig.plan import routes, routes_py
from netrig.plan.lab import build_plan
from netrig.plan.model import LabPlan
from netrig.rig.prepare import load_text

LABS = {
    "ring": "topology: {kind: ring, nodes: 9}",
    "odd ring": "topology: {kind: ring, nodes: 16}",
    "grid": "topology: {kind: grid, rows: 4, cols: 5}",
    "ladder": "topology: {kind: ladder, nodes: 12}",
    "tree": "topology: {kind: tree, depth: 3, fanout: 3}",
    "clos": "topology: {kind: clos, spines: 2, leaves: 4, hosts_per_leaf: 2}",
    "fat-tree": "topology: {kind: fat-tree, k: 4}",
    "full mesh": "topology: {kind: full-mesh, nodes: 6}",
    "star": "topology: {kind: star, leaves: 5}",
    "costs": (
        "topology: {kind: ring, nodes: 8}\n"
        "links: [{a: n1, b: n2, cost: 7}, {a: n4, b: n5, cost: 60000}]"
    ),
    "switch": (
        "nodes: [{name: sw, kind: switch}, {name: a}, {name: b}, {name: c}, {name: d}]\n"
        "links: [{a: a, b: sw}, {a: b, b: sw}, {a: c, b: sw}, {a: c, b: d}]"
    ),
    "two islands": (
        "nodes: [{name: a}, {name: b}, {name: c}, {name: d}]\nlinks: [{a: a, b: b}, {a: c, b: d}]"
    ),
}


def plan_of(body: str, protocol: str) -> LabPlan:
    return build_plan(load_text(f"name: r\n{body}\nrouting: {{protocol: {protocol}}}\n"))


@pytest.mark.parametrize("protocol", ["static", "ecmp"])
@pytest.mark.parametrize("lab", list(LABS))
def test_python_and_numpy_next_hops_agree(lab: str, protocol: str) -> None:
    plan = plan_of(LABS[lab], protocol)
    multipath = protocol == "ecmp"
    expected = routes.compute_routes(plan, multipath)
    assert sum(len(r) for r in expected.values()) > 0
    assert routes_py.python_routes(plan, multipath) == expected
    assert routes_py.compute_routes(plan, multipath) == expected


STUBS = {
    # a stub reached over a link and a switch: its step is the cheaper of the two
    "two ways to one neighbour": (
        "nodes: [{name: a}, {name: b}, {name: c}, {name: d}, {name: s}, {name: sw, kind: switch}]\n"
        "links: [{a: a, b: b}, {a: b, b: c}, {a: c, b: a}, {a: c, b: d},"
        " {a: s, b: a, cost: 5}, {a: s, b: sw}, {a: a, b: sw}]"
    ),
    "pair": "topology: {kind: pair}",  # two stubs of each other: neither is derived
    "islands with stubs": (
        "nodes: [{name: a}, {name: b}, {name: c}, {name: d}, {name: e}, {name: f}]\n"
        "links: [{a: a, b: b}, {a: b, b: c}, {a: d, b: e}, {a: e, b: f}, {a: f, b: d}]"
    ),
    "chain": "topology: {kind: chain, nodes: 7}",  # a stub's neighbour is itself one's too
}


@pytest.mark.parametrize("protocol", ["static", "ecmp"])
@pytest.mark.parametrize("lab", [*LABS, *STUBS])
def test_large_lab_ways_give_the_small_lab_routes(
    monkeypatch: pytest.MonkeyPatch, lab: str, protocol: str
) -> None:
    """What only large labs take, forced on small ones: scipy on the graph of hosts, a
    stub's distances from its neighbour's, and a hub's gateways a block at a time (more
    gateways than DIST_CHUNK): the routes are those of the Python planner."""
    plan = plan_of({**LABS, **STUBS}[lab], protocol)
    multipath = protocol == "ecmp"
    expected = routes_py.python_routes(plan, multipath)
    monkeypatch.setattr(routes, "SCIPY_FROM_VERTICES", 0)
    monkeypatch.setattr(routes, "DIST_CHUNK", 2)
    assert routes.compute_routes(plan, multipath) == expected
    assert sum(len(r) for r in expected.values()) > 0


def test_large_distances_pick_next_hops_as_numpy_does() -> None:
    """Beyond 10**5 numpy.isclose holds for distances 1 apart; the Python way says the same."""
    body = "topology: {kind: ring, nodes: 6}\nlink_defaults: {cost: 60000}"
    for protocol in ("static", "ecmp"):
        plan = plan_of(body, protocol)
        expected = routes.compute_routes(plan, protocol == "ecmp")
        assert routes_py.python_routes(plan, protocol == "ecmp") == expected


def test_the_size_picks_the_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below PYTHON_BELOW vertices in Python; from there on netrig.plan.routes."""
    plan = plan_of(LABS["grid"], "static")  # 20 hosts, 31 links
    calls: list[str] = []
    monkeypatch.setattr(routes_py, "python_routes", lambda p, m: calls.append("python") or {})
    monkeypatch.setattr(routes, "compute_routes", lambda p, m: calls.append("numpy") or {})
    routes_py.compute_routes(plan, False)
    monkeypatch.setattr(routes_py, "PYTHON_BELOW", 51)
    routes_py.compute_routes(plan, False)
    assert calls == ["python", "numpy"]


def test_small_labs_never_import_numpy() -> None:
    import subprocess
    import sys

    text = f"name: r\n{LABS['clos']}\nrouting: {{protocol: ecmp}}\n"
    code = (  # not through this module, which imports numpy itself
        "import sys\n"
        "from netrig.plan.lab import build_plan\n"
        "from netrig.rig.prepare import load_text\n"
        f"plan = build_plan(load_text({text!r}))\n"
        "assert plan.route_count() > 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
