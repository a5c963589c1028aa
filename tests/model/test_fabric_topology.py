"""The datacenter fabric generators (clos, fat-tree): names by tier, who links to whom, and
their parameters checked at file:line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from netrig.model import topology
from tests.conftest import netrig_cli


def assert_refused_at(path: Path, text: str, line: int, message: str) -> None:
    """`netrig validate` of TEXT names the file, the line and the message; exit 2, no trace."""
    path.write_text(text)
    out = netrig_cli("validate", str(path))
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"{path}:{line}" in out.stderr and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def degrees(edges: list[tuple[str, str]]) -> Counter[str]:
    return Counter(n for e in edges for n in e)


def test_clos_links_every_leaf_to_every_spine_and_hosts_in_order() -> None:
    nodes, edges = topology.clos(2, 4, 3)
    assert nodes == ["s1", "s2", *[f"l{i}" for i in range(1, 5)], *[f"h{i}" for i in range(1, 13)]]
    links = {frozenset(e) for e in edges}
    assert len(links) == len(edges) == 2 * 4 + 4 * 3
    assert all(frozenset((f"s{s}", f"l{leaf}")) in links for s in (1, 2) for leaf in range(1, 5))
    for h in range(1, 13):  # hosts 1-3 on l1, 4-6 on l2, …
        assert [e for e in edges if f"h{h}" in e] == [(f"l{(h - 1) // 3 + 1}", f"h{h}")]
    assert degrees(edges)["s1"] == 4 and degrees(edges)["l1"] == 2 + 3


@pytest.mark.parametrize("k", [2, 4, 6])
def test_fat_tree_has_the_textbook_sizes_and_wiring(k: int) -> None:
    half = k // 2
    nodes, edges = topology.fat_tree(k)
    by_tier = Counter(n[0] for n in nodes)
    assert by_tier == {"c": half * half, "a": k * half, "e": k * half, "h": k * half * half}
    assert len({frozenset(e) for e in edges}) == len(edges) == 3 * k * half * half
    deg = degrees(edges)
    assert all(deg[n] == k for n in nodes if n[0] in "cae")  # every switch uses its k ports
    assert all(deg[n] == 1 for n in nodes if n[0] == "h")
    pod_of = {f"a{i + 1}": i // half for i in range(k * half)}
    pod_of |= {f"e{i + 1}": i // half for i in range(k * half)}
    for a, b in edges:
        if a[0] == "c":  # a core reaches every pod once
            assert sorted(pod_of[x] for c, x in edges if c == a) == list(range(k))
        if a[0] == "a":  # aggregation to edge only within a pod
            assert b[0] == "e" and pod_of[a] == pod_of[b]
    assert ("e1", "h1") in edges and (f"e{k * half}", f"h{k * half * half}") in edges


@pytest.mark.parametrize(
    ("topo", "message"),
    [
        ("{kind: clos, spines: 2, leaves: 4}", "topology 'clos' needs hosts_per_leaf"),
        ("{kind: clos, spines: 2, leaves: 4, hosts_per_leaf: 1, k: 4}", "not k"),
        ("{kind: fat-tree, k: 5}", "needs an even k"),
        ("{kind: fat-tree, k: 4, spines: 2}", "takes k, not spines"),
        ("{kind: clos, spines: 0, leaves: 4, hosts_per_leaf: 1}", "greater than or equal to 1"),
    ],
)
def test_bad_fabric_parameters_are_refused_at_file_and_line(
    tmp_path: Path, topo: str, message: str
) -> None:
    text = f"name: fab\n# a fabric\ntopology: {topo}\n"
    assert_refused_at(tmp_path / "fab.yaml", text, 3, message)
