"""A lab as a picture (graphviz): nodes by role, links with interface names and addresses.

    source = lab_graph(plan)                 # a graphviz.Graph
    svg = render(plan, "svg")                # bytes: svg, png (with graphviz's `dot`), dot

Roles: a switch node, or a node that bridges its links (`routing: bridge`), is a switch
(a box); a host node that forwards between several links,
or runs a routing daemon (FRR, a routing protocol), is a router (an ellipse); any other is
a host (a rounded box). Each link end is labelled with its interface and its addresses; a
link's rate, delay or loss is its own label. Nodes that run on several machines (a `host`
attribute of the node's plan) are drawn in one frame per machine; a node that shares
another's network namespace (containerlab's network-mode) is joined to it by a dotted line.
Needs no root: it draws the plan, not the kernel.
"""

from __future__ import annotations

import re
import shutil
import warnings
from typing import Literal

import graphviz

from netrig.plan.model import LabPlan, LinkPlan, NodePlan

Format = Literal["svg", "png", "dot"]
FORMATS: tuple[Format, ...] = ("svg", "png", "dot")
ROUTING_DAEMONS = ("batman", "babel", "ospf", "bgp", "frr")
DEFAULT_MTU = 1500
STYLE = {
    "switch": {"shape": "box", "style": "filled", "fillcolor": "#d9d9d9"},
    "router": {"shape": "ellipse", "style": "filled", "fillcolor": "#cfe2f3"},
    "host": {"shape": "box", "style": "rounded,filled", "fillcolor": "#fff2cc"},
}


def role(plan: LabPlan, node: NodePlan) -> str:
    """switch, router or host (see the module's docstring)."""
    if node.kind == "switch" or node.bridge is not None:  # `routing: bridge`: each node
        return "switch"  # bridges its links (its address sits on the bridge)
    daemons = plan.protocol in ROUTING_DAEMONS or any(s.kind == "frr" for s in node.services)
    return "router" if daemons or len(node.ifaces) > 1 else "host"


def layout_engine(plan: LabPlan) -> str:
    """graphviz's `circo` for a ring (every node on two links, all in one cycle): `dot`
    lays a cycle out in ranks, a ring of 16 as one tall column with a long edge back. `dot`
    for anything else (chains, trees, fabrics in tiers) and wherever machines are framed
    (circo draws no frames)."""
    nodes = plan.nodes
    if len(nodes) < 3 or len(plan.links) != len(nodes):
        return "dot"
    if any(getattr(node, "host", None) is not None for node in nodes.values()):
        return "dot"
    ends: dict[str, list[str]] = {name: [] for name in nodes}
    for link in plan.links:
        ends[link.a].append(link.b)
        ends[link.b].append(link.a)
    if any(len(peers) != 2 for peers in ends.values()):
        return "dot"
    first = next(iter(nodes))
    seen, todo = {first}, [first]
    while todo:  # one cycle, not several rings side by side
        for peer in ends[todo.pop()]:
            if peer not in seen:
                seen.add(peer)
                todo.append(peer)
    return "circo" if len(seen) == len(nodes) else "dot"


def lab_graph(plan: LabPlan) -> graphviz.Graph:
    graph = graphviz.Graph(plan.name, engine=layout_engine(plan))
    graph.attr(label=f"lab {plan.name} ({plan.protocol})", labelloc="t", fontname="Helvetica")
    # room for the ends' labels: at graphviz's defaults two ends of one node (a switch's
    # ports, a router's links) ran into each other ("203.0.113.4/2403.0.113.5/24")
    graph.attr(nodesep="0.9", ranksep="0.9")
    graph.attr("node", fontname="Helvetica", fontsize="11")
    graph.attr(
        "edge", fontname="Helvetica", fontsize="9", labelfontsize="8", labeldistance="2"
    )
    machines: dict[str | None, list[NodePlan]] = {}
    for node in plan.nodes.values():
        machines.setdefault(getattr(node, "host", None), []).append(node)
    for machine, nodes in machines.items():
        if machine is None:
            for node in nodes:
                _node(graph, plan, node)
            continue
        with graph.subgraph(name=f"cluster_{machine}") as frame:
            frame.attr(label=f"host {machine}", style="dashed", color="#888888")
            for node in nodes:
                _node(frame, plan, node)
    for link in plan.links:
        _link(graph, plan, link)
    for node in plan.nodes.values():
        if node.shares:
            graph.edge(node.name, node.shares, style="dotted", label="shares netns")
    return graph


def _node(graph: graphviz.Graph, plan: LabPlan, node: NodePlan) -> None:
    kind = role(plan, node)
    lines = [node.name, kind if node.kind != "switch" or not node.ovs else "switch (ovs)"]
    lines += [f"lo {cidr}" for cidr in node.loopbacks]
    if node.bridge and node.bridge.addrs:
        lines += [f"{node.bridge.name} {cidr}" for cidr in node.bridge.addrs]
    lines += [f"{s.kind}" for s in node.services]
    graph.node(node.name, "\n".join(lines), **STYLE[kind])


def _end(plan: LabPlan, node: str, ifname: str) -> str:
    iface = plan.node(node).iface(ifname)
    # the first address of each family (aliases after them had hidden the IPv6 one)
    first = [next((a for a in iface.addrs if (":" in a) == v6), None) for v6 in (False, True)]
    shown = [a for a in first if a]
    shown += ["…"] if len(iface.addrs) > len(shown) else []
    return "\n".join([ifname, *shown])


def _link(graph: graphviz.Graph, plan: LabPlan, link: LinkPlan) -> None:
    shown = [
        _rate(link.rate) if link.rate else "",
        f"{link.delay * 1000:g} ms" if link.delay else "",
        f"{link.loss:g}% loss" if link.loss else "",
        f"mtu {link.mtu}" if link.mtu and link.mtu != DEFAULT_MTU else "",  # (every link's
        # label had said "mtu 1500" when link_defaults wrote it)
    ]
    label = " ".join(part for part in shown if part) or None
    graph.edge(
        link.a,
        link.b,
        label=label,
        taillabel=_end(plan, link.a, link.a_iface),
        headlabel=_end(plan, link.b, link.b_iface),
        # twice as long where its middle is labelled too: on a link of one rank the label
        # ran into an end's ("200 Mbit/sth0")
        minlen="2" if label else None,
    )


def _rate(bits: int) -> str:
    for unit, size in (("Gbit/s", 10**9), ("Mbit/s", 10**6), ("kbit/s", 10**3)):
        if bits >= size:
            return f"{bits / size:g} {unit}"
    return f"{bits} bit/s"


class GraphvizMissing(RuntimeError):
    """graphviz's `dot` program is not installed (svg and png need it; dot does not)."""


def render(plan: LabPlan, fmt: Format) -> bytes:
    """The picture in FMT: the dot source as is, or laid out by graphviz's `dot`."""
    graph = lab_graph(plan)
    if fmt == "dot":
        return graph.source.encode()
    if shutil.which("dot") is None:
        raise GraphvizMissing(
            f"drawing {fmt} needs graphviz's dot: apt-get install -y graphviz (or use .dot)"
        )
    return graph.pipe(format=fmt)


def svg_inline(plan: LabPlan) -> str:
    """The SVG element alone (no XML prolog), to put inside an HTML page."""
    text = render(plan, "svg").decode()
    text = text[text.index("<svg") :]
    return re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", text, count=2)  # HTML needs none: no URL


def experiment_svg(text: str, file: str = "<stored>") -> tuple[str | None, str]:
    """The picture of an experiment's lab from the file's text as the results store keeps
    it (with the run's --set values), for the HTML report: (svg or None, why there is none,
    or which sweep point it shows when the points' labs differ)."""
    from netrig.model.experiment import load_experiment_model_text
    from netrig.model.load import SpecError
    from netrig.model.overrides import stored_overrides
    from netrig.model.problems import Note
    from netrig.model.yamlmarks import YamlSyntaxError
    from netrig.plan.experiment import plan_experiment
    from netrig.rig.prepare import catalog

    source, overrides, repeat = stored_overrides(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Note)  # said when the experiment ran
            model = load_experiment_model_text(source, file, overrides, repeat)
            points = plan_experiment(model, catalog()).points
    except (SpecError, YamlSyntaxError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"the lab could not be planned again from the stored file ({first})"
    labs = {point.network for point in points}
    which = f"the lab of the first sweep point ({points[0].label})" if len(labs) > 1 else ""
    try:
        return svg_inline(points[0].plan), which
    except GraphvizMissing as exc:
        return None, str(exc)
