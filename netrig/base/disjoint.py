"""Disjoint sets of names (union–find with path halving): which nodes a lab's links join."""

from __future__ import annotations

from collections.abc import Iterable


class DisjointSets:
    """Each name starts in its own set, or in `joined_to`'s where given."""

    def __init__(self, names: Iterable[str], joined_to: dict[str, str] | None = None) -> None:
        self.parent = {name: name for name in names}
        for name, other in (joined_to or {}).items():
            self.union(name, other)

    def find(self, name: str) -> str:
        """The name that stands for NAME's set."""
        parent = self.parent
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    def union(self, a: str, b: str) -> bool:
        """Join the sets of A and B; False if they were one already (a cycle)."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[ra] = rb
        return True
