"""The node count `netrig up` reads from a file's YAML alone, to make namespaces ahead: it
agrees with the generators and the plan, and says nothing where it cannot tell."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrig.model.models import _TOPOLOGY_PARAMS, Topology, TopologyKind
from netrig.model.nodecount import lab_file_nodes, lab_nodes, topology_links, topology_nodes
from netrig.model.topology import generate
from netrig.rig.prepare import is_experiment_file, load_experiment, plan_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = {"nodes": 7, "leaves": 3, "rows": 3, "cols": 5, "depth": 3, "fanout": 2,
         "spines": 2, "hosts_per_leaf": 2, "k": 4}  # fmt: skip


@pytest.mark.parametrize("kind", typing.get_args(TopologyKind))
def test_every_kind_counts_what_its_generator_makes(kind: str) -> None:
    params = {p: SMALL[p] for p in _TOPOLOGY_PARAMS[kind]}
    nodes, links = generate(Topology(kind=kind, **params))  # type: ignore[arg-type]
    assert topology_nodes({"kind": kind, **params}) == len(nodes)
    assert topology_links({"kind": kind, **params}) == len(links)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(
        ["chain", "ring", "ladder", "star", "grid", "tree", "full-mesh", "clos", "fat-tree"]
    ),
    a=st.integers(4, 12),
    b=st.integers(1, 4),
    c=st.integers(1, 3),
)
def test_counts_agree_with_the_generators_at_any_size(kind: str, a: int, b: int, c: int) -> None:
    values = {"nodes": a, "leaves": a, "rows": a, "cols": b, "depth": b, "fanout": c,
              "spines": b, "hosts_per_leaf": c, "k": 2 * c}  # fmt: skip
    params = {p: values[p] for p in _TOPOLOGY_PARAMS[kind]}
    nodes, links = generate(Topology(kind=kind, **params))  # type: ignore[arg-type]
    assert topology_nodes({"kind": kind, **params}) == len(nodes)
    assert topology_links({"kind": kind, **params}) == len(links)


def test_what_it_cannot_tell_is_none() -> None:
    assert topology_nodes({"kind": "ring"}) is None  # no size: the model says why
    assert topology_nodes({"kind": "ring", "nodes": "many"}) is None
    assert topology_nodes({"kind": "moebius", "nodes": 4}) is None
    assert topology_nodes("ring") is None
    assert topology_links({"kind": "grid", "rows": 3}) is None
    assert lab_nodes(["not", "a", "mapping"]) is None
    # an experiment file's lab: literal sizes count, a sweep's {expression} does not
    assert lab_nodes({"topology": {"kind": "ring", "nodes": 4}, "measure": []}) == 4
    assert lab_nodes({"topology": {"kind": "ring", "nodes": "{size}"}, "measure": []}) is None
    assert lab_nodes({"name": "x"}) is None
    assert lab_nodes({"nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}) == 3
    # listed nodes on top of a topology: the larger of the two (a lower bound)
    assert lab_nodes({"topology": {"kind": "pair"}, "nodes": [{"name": "n1"}]}) == 2


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 10**400, -7, True])
def test_no_size_makes_it_fail(value: object) -> None:
    """A hint only: a size the model will refuse (`nodes: .inf` overflows int()) is None
    or a number, never an exception before the model can say where it is wrong."""
    for kind, params in _TOPOLOGY_PARAMS.items():
        for count in (topology_nodes, topology_links):
            got = count({"kind": kind, **{p: value for p in params}})
            assert got is None or isinstance(got, int)


def test_files_it_does_not_read(tmp_path: Path) -> None:
    (tmp_path / "lab.clab.yml").write_text("name: x\ntopology: {kind: ring, nodes: 3}\n")
    (tmp_path / "bad.yaml").write_text("name: x\ntopology: {kind: ring, nodes: 3\n")
    (tmp_path / "lab.yaml").write_text("name: x\ntopology: {kind: ring, nodes: 3}\n")
    assert lab_file_nodes(str(tmp_path / "lab.clab.yml")) is None
    assert lab_file_nodes(str(tmp_path / "bad.yaml")) is None
    assert lab_file_nodes(str(tmp_path / "missing.yaml")) is None
    assert lab_file_nodes(str(EXAMPLES / "mininet-bw.py")) is None
    assert lab_file_nodes(str(tmp_path / "lab.yaml")) == 3


HINTED = sorted(p for p in EXAMPLES.glob("*.yaml") if lab_file_nodes(str(p)) is not None)


def test_examples_give_hints() -> None:
    assert len(HINTED) >= 15


@pytest.mark.parametrize("path", HINTED, ids=lambda p: p.name)
def test_the_hint_never_asks_for_more_than_the_plan_builds(path: Path) -> None:
    """What `netrig up FILE` builds: the lab, or an experiment's first point's."""
    if is_experiment_file(str(path)):
        plan = load_experiment(str(path)).points[0].plan
    else:
        plan = plan_file(str(path))
    namespaces = sum(1 for n in plan.nodes.values() if not n.shares)
    hint = lab_file_nodes(str(path))
    assert hint is not None and 0 < hint <= namespaces
