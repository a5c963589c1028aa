"""Topology generators: node names, link sets, sizes."""

from __future__ import annotations

import pytest

from netrig.model import topology


def links(edges: list[tuple[str, str]]) -> set[frozenset[str]]:
    return {frozenset(e) for e in edges}


def test_pair() -> None:
    assert topology.pair() == (["n1", "n2"], [("n1", "n2")])


def test_chain_and_ring() -> None:
    nodes, edges = topology.chain(4)
    assert nodes == ["n1", "n2", "n3", "n4"]
    assert links(edges) == links([("n1", "n2"), ("n2", "n3"), ("n3", "n4")])
    _, ring = topology.ring(4)
    assert links(ring) == links(edges) | {frozenset(("n4", "n1"))}


def test_ladder_16_matches_seed_000() -> None:
    """Ring 1…16 plus shortcuts 2–16, 3–15, …, 8–10 (seed 000's ladder)."""
    nodes, edges = topology.ladder(16)
    assert len(nodes) == 16
    rungs = links(edges) - links(topology.ring(16)[1])
    assert rungs == links([(f"n{i}", f"n{18 - i}") for i in range(2, 9)])


def test_star_hub_is_n1() -> None:
    nodes, edges = topology.star(5)
    assert nodes[0] == "n1" and len(nodes) == 6
    assert all("n1" in e for e in edges) and len(edges) == 5


def test_grid_row_major() -> None:
    nodes, edges = topology.grid(2, 3)
    assert len(nodes) == 6
    # 2 rows × 2 horizontal + 3 vertical
    assert len(edges) == 7
    assert frozenset(("n1", "n4")) in links(edges) and frozenset(("n3", "n4")) not in links(edges)


def test_tree_breadth_first() -> None:
    nodes, edges = topology.tree(2, 3)
    assert len(nodes) == 1 + 3 + 9
    assert links(edges) >= links([("n1", "n2"), ("n1", "n4"), ("n2", "n5"), ("n4", "n13")])


@pytest.mark.parametrize("n", [2, 3, 7])
def test_full_mesh(n: int) -> None:
    nodes, edges = topology.full_mesh(n)
    assert len(nodes) == n and len(links(edges)) == n * (n - 1) // 2
