"""Topology generators: a kind and a size in, plain node names and node pairs out.

Nodes are named n1 … nN in a fixed order, so a lab file can name them (`client: n1`);
datacenter fabrics name them by tier instead: spines s*, leaves l*, hosts h* (clos), and
cores c*, aggregation a*, edges e*, hosts h* (fat-tree).
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


def clos(spines: int, leaves: int, hosts_per_leaf: int) -> tuple[list[str], list[Edge]]:
    """A two-tier leaf-spine fabric: every leaf linked to every spine; hosts 1…H on l1,
    the next H on l2 and so on. Spines s1…, leaves l1…, hosts h1… (in that order)."""
    spine = [f"s{i}" for i in range(1, spines + 1)]
    leaf = [f"l{i}" for i in range(1, leaves + 1)]
    host = [f"h{i}" for i in range(1, leaves * hosts_per_leaf + 1)]
    edges = [(s, lf) for lf in leaf for s in spine]
    edges += [
        (lf, host[i * hosts_per_leaf + j])
        for i, lf in enumerate(leaf)
        for j in range(hosts_per_leaf)
    ]
    return spine + leaf + host, edges


def fat_tree(k: int) -> tuple[list[str], list[Edge]]:
    """A k-ary fat tree (Al-Fares et al. 2008): k pods of k/2 aggregation and k/2 edge
    switches, every edge linked to every aggregation switch of its pod; (k/2)² cores, core
    group j (c(j·k/2+1) … c((j+1)·k/2)) linked to aggregation switch j of every pod; k/2
    hosts per edge switch. Numbering runs pod by pod: pod 1 has a1…a(k/2), e1…e(k/2)."""
    half = k // 2
    core = [f"c{i}" for i in range(1, half * half + 1)]
    agg = [f"a{i}" for i in range(1, k * half + 1)]
    edge = [f"e{i}" for i in range(1, k * half + 1)]
    host = [f"h{i}" for i in range(1, k * half * half + 1)]
    edges: list[Edge] = []
    for pod in range(k):
        for j in range(half):
            a = agg[pod * half + j]
            edges += [(core[j * half + m], a) for m in range(half)]
    for pod in range(k):
        for j in range(half):
            e = edge[pod * half + j]
            edges += [(agg[pod * half + m], e) for m in range(half)]
    for i, e in enumerate(edge):
        edges += [(e, host[i * half + m]) for m in range(half)]
    return core + agg + edge + host, edges


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
        case "clos":
            return clos(topo.spines or 0, topo.leaves or 0, topo.hosts_per_leaf or 0)
        case "fat-tree":
            return fat_tree(topo.k or 0)
    raise ValueError(f"unknown topology {topo.kind}")
