"""How many nodes a lab file asks for, read from its YAML alone: no model, no validation.

`netrig up` starts making unnamed namespaces (netrig.lab.netns.SpareNamespaces) while it
still imports pydantic and checks the file, and needs a count before either is done. The
count is a hint: a wrong file or a wrong count only costs namespaces made in vain (freed
with the process); the checked plan decides what is built.

    lab_file_nodes("ring100.yaml")      # 100 (topology: {kind: ring, nodes: 100})
    topology_nodes({"kind": "grid", "rows": 3, "cols": 4})   # 12
    topology_links({"kind": "grid", "rows": 3, "cols": 4})   # 17

The model bounds a generated topology's size with the same two counts, before anything is
generated: a full mesh of 10,000 nodes would be 49,995,000 links.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

MAX_HINT_BYTES = 4 << 20  # a larger file is read by the model only (no hint)


def topology_nodes(topo: Any) -> int | None:
    """Nodes of a generated topology (as model.topology.generate makes them), or None."""
    if not isinstance(topo, dict):
        return None
    get: Callable[[str], Any] = topo.get  # a missing key's None fails int(): no hint
    try:
        match get("kind"):
            case "pair":
                return 2
            case "chain" | "ring" | "ladder" | "full-mesh":
                return int(get("nodes"))
            case "star":
                return int(get("leaves")) + 1
            case "grid":
                return int(get("rows")) * int(get("cols"))
            case "tree":
                fanout, depth = int(get("fanout")), int(get("depth"))
                return sum(fanout**level for level in range(min(depth, 20) + 1))
            case "clos":
                leaves = int(get("leaves"))
                return int(get("spines")) + leaves * (1 + int(get("hosts_per_leaf")))
            case "fat-tree":
                half = int(get("k")) // 2
                return half * half + 4 * half * half + 2 * half**3
    except (TypeError, ValueError, ArithmeticError):  # e.g. `nodes: .inf`: int() overflows
        pass
    return None


def topology_links(topo: Any) -> int | None:
    """Links of a generated topology (as model.topology.generate makes them), or None."""
    nodes = topology_nodes(topo)
    if nodes is None:
        return None
    get: Callable[[str], Any] = topo.get
    match get("kind"):
        case "pair":
            return 1
        case "chain" | "star" | "tree":
            return nodes - 1
        case "ring":
            return nodes
        case "ladder":
            return nodes + (nodes - 2) // 2  # the ring and its rungs
        case "grid":
            rows, cols = int(get("rows")), int(get("cols"))
            return rows * (cols - 1) + cols * (rows - 1)
        case "full-mesh":
            return nodes * (nodes - 1) // 2
        case "clos":
            leaves = int(get("leaves"))
            return leaves * (int(get("spines")) + int(get("hosts_per_leaf")))
        case "fat-tree":
            half = int(get("k")) // 2
            return 3 * 2 * half * half * half  # core-aggregation, aggregation-edge, edge-host
    return None


def lab_nodes(data: Any) -> int | None:
    """Nodes of a lab (or experiment) file's parsed YAML: its topology's, or its `nodes:`
    list's if longer; None where it cannot tell (a size that is an {expression} of a
    sweep, a containerlab topology, nothing to count)."""
    if not isinstance(data, dict):
        return None
    count = topology_nodes(data.get("topology")) or 0
    listed = data.get("nodes")
    if isinstance(listed, list):
        count = max(count, len(listed))
    return count if count > 0 else None


def lab_file_nodes(path: str) -> int | None:
    """lab_nodes of a netrig lab or experiment file (.yaml/.yml, not *.clab.yml); None if
    it cannot tell."""
    if not path.endswith((".yaml", ".yml")) or path.endswith((".clab.yml", ".clab.yaml")):
        return None
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_HINT_BYTES + 1)
        if len(text) > MAX_HINT_BYTES:
            return None
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return lab_nodes(yaml.load(text, Loader=loader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError, ArithmeticError):
        return None
