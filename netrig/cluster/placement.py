"""Which host a node of a lab goes to: few cut links, balanced node counts.

Recursive bisection: a part of n nodes for k hosts is split into two parts for ⌈k/2⌉ and
⌊k/2⌋ hosts, of sizes in that ratio; the first split follows a breadth-first order from a
far node (a contiguous region: for rings and grids already a minimal cut), then
Kernighan–Lin (networkx) swaps pairs of nodes across the split while the cut shrinks,
which keeps the sizes. Pure: unit-tested without a cluster.

    >>> plan_nodes = [f"n{i}" for i in range(1, 7)]
    >>> ring = [(f"n{i}", f"n{i % 6 + 1}") for i in range(1, 7)]
    >>> where = partition(plan_nodes, ring, ["h1", "h2"])
    >>> sorted(where.values()).count("h1"), cut_links(ring, where)
    (3, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import networkx as nx
from networkx.algorithms.community import kernighan_lin_bisection

KL_MAX_NODES = 600  # above this, the breadth-first split alone (KL is quadratic per pass)


def partition(
    nodes: Sequence[str], links: Iterable[tuple[str, str]], hosts: Sequence[str]
) -> dict[str, str]:
    """node → host, for len(hosts) balanced parts with few links between them."""
    if not hosts:
        raise ValueError("no hosts to place the nodes on")
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(links)
    where: dict[str, str] = {}
    for part, host in zip(_split(graph, list(nodes), len(hosts)), hosts, strict=True):
        where.update(dict.fromkeys(part, host))
    return where


def place(
    nodes: Sequence[str], links: Iterable[tuple[str, str]], hosts: Sequence[str],
    pins: dict[str, str] | None = None,
) -> dict[str, str]:
    """`partition`, then every pinned node (`host:` in the lab file) on its host. The
    hosts are those given plus the pins' own; a pin naming no host is a ValueError."""
    pins = pins or {}
    unknown = sorted(set(pins) - set(nodes))
    if unknown:
        raise ValueError(f"host: given for {', '.join(unknown)}, which the lab has no node of")
    links = list(links)
    where = partition(nodes, links, list(hosts))
    where.update(pins)
    return where


def cut_links(links: Iterable[tuple[str, str]], where: dict[str, str]) -> int:
    return sum(1 for a, b in links if where[a] != where[b])


def _split(graph: nx.Graph, members: list[str], k: int) -> list[list[str]]:
    if k == 1:
        return [members]
    k1 = (k + 1) // 2
    size1 = round(len(members) * k1 / k)
    sub = graph.subgraph(members)
    order = _bfs_order(sub, members)
    first, second = set(order[:size1]), set(order[size1:])
    if 0 < size1 < len(members) and len(members) <= KL_MAX_NODES:
        a, b = kernighan_lin_bisection(sub, (first, second), max_iter=10, seed=1)
        first, second = (a, b) if len(a) == size1 else (b, a)  # its order is not the input's
    keep = {n: i for i, n in enumerate(members)}  # the file's order inside each part
    return [
        *_split(graph, sorted(first, key=keep.__getitem__), k1),
        *_split(graph, sorted(second, key=keep.__getitem__), k - k1),
    ]


def _bfs_order(graph: nx.Graph, members: list[str]) -> list[str]:
    """Breadth-first from a far node of each component (two sweeps), components in turn."""
    order: list[str] = []
    seen: set[str] = set()
    for node in members:
        if node in seen:
            continue
        far = list(nx.bfs_tree(graph, node))[-1]
        component = list(nx.bfs_tree(graph, far))
        order += component
        seen.update(component)
    return order
