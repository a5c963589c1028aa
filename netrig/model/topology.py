"""Topology generators: a kind and a size in, plain node names and node pairs out.

Nodes are named n1 … nN in a fixed order, so a lab file can name them (`client: n1`).
"""

from __future__ import annotations

from netrig.model.models import Topology

Edge = tuple[str, str]


def _n(i: int) -> str:
    return f"n{i}"


def pair() -> tuple[list[str], list[Edge]]:
    return [_n(1), _n(2)], [(_n(1), _n(2))]


def chain(n: int) -> tuple[list[str], list[Edge]]:
    return [_n(i) for i in range(1, n + 1)], [(_n(i), _n(i + 1)) for i in range(1, n)]


def ring(n: int) -> tuple[list[str], list[Edge]]:
    nodes, edges = chain(n)
    return nodes, [*edges, (_n(n), _n(1))]


def ladder(n: int) -> tuple[list[str], list[Edge]]:
    """A ring 1…N plus rungs 2–N, 3–(N-1), … between nodes that are not ring neighbours.

    Seed 000's 16-node ladder: ring plus 2–16, 3–15, …, 8–10; nodes 1 and 9 are the ends.
    """
    nodes, edges = ring(n)
    rungs = []
    i, j = 2, n
    while j - i >= 2:
        rungs.append((_n(i), _n(j)))
        i, j = i + 1, j - 1
    return nodes, edges + rungs


def star(leaves: int) -> tuple[list[str], list[Edge]]:
    """Hub n1 with leaves n2 … n(leaves+1)."""
    nodes = [_n(i) for i in range(1, leaves + 2)]
    return nodes, [(_n(1), _n(i)) for i in range(2, leaves + 2)]


def grid(rows: int, cols: int) -> tuple[list[str], list[Edge]]:
    """Row-major numbering: row r, column c is n(r*cols + c + 1)."""
    nodes = [_n(i) for i in range(1, rows * cols + 1)]
    edges = []
    for r in range(rows):
        for c in range(cols):
            here = r * cols + c + 1
            if c + 1 < cols:
                edges.append((_n(here), _n(here + 1)))
            if r + 1 < rows:
                edges.append((_n(here), _n(here + cols)))
    return nodes, edges


def tree(depth: int, fanout: int) -> tuple[list[str], list[Edge]]:
    """Root n1; children numbered breadth first; `depth` levels below the root."""
    nodes = [_n(1)]
    edges: list[Edge] = []
    level = [1]
    next_id = 2
    for _ in range(depth):
        new_level = []
        for parent in level:
            for _ in range(fanout):
                nodes.append(_n(next_id))
                edges.append((_n(parent), _n(next_id)))
                new_level.append(next_id)
                next_id += 1
        level = new_level
    return nodes, edges


def full_mesh(n: int) -> tuple[list[str], list[Edge]]:
    nodes = [_n(i) for i in range(1, n + 1)]
    return nodes, [(_n(i), _n(j)) for i in range(1, n + 1) for j in range(i + 1, n + 1)]


def generate(topo: Topology) -> tuple[list[str], list[Edge]]:
    match topo.kind:
        case "pair":
            return pair()
        case "chain":
            return chain(topo.nodes or 0)
        case "ring":
            return ring(topo.nodes or 0)
        case "ladder":
            return ladder(topo.nodes or 0)
        case "star":
            return star(topo.leaves or 0)
        case "grid":
            return grid(topo.rows or 0, topo.cols or 0)
        case "tree":
            return tree(topo.depth or 0, topo.fanout or 0)
        case "full-mesh":
            return full_mesh(topo.nodes or 0)
    raise ValueError(f"unknown topology {topo.kind}")
