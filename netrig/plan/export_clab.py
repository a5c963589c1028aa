"""A netrig lab written as a containerlab topology file: the plan, taken the other way.

Every node is a `kind: linux` container without a management interface (`network-mode:
none`, so netrig's eth0 stays the lab's), linked by veth pairs with netrig's interface
names and MTUs; its `exec` lines give what netrig's build gives: the addresses (loopbacks,
links, bridges), a bridge for switch nodes (and hosts that bridge), the planned routes
(multipath as several nexthops, the loopback as source), tc for rates, delay and loss, then
the node's own exec lines, quoted to split as they did. A node's `cmd` and `binds` are
kept, and a node in another's namespace is `network-mode: container:X`.
What netrig runs as daemons (a routing protocol's, services, firewalls) is named in the
header, not exported. The image is left to the user: `${NETRIG_CLAB_IMAGE:=…}`.

    text = to_clab(plan, source="ring.yaml")
"""

from __future__ import annotations

import shlex
from typing import Any

import yaml

from netrig.plan.model import BRIDGE_TIMERS, LabPlan, LinkPlan, NodePlan

DEFAULT_IMAGE = "${NETRIG_CLAB_IMAGE:=nicolaka/netshoot}"  # any image with ip, tc and sysctl


def to_clab(plan: LabPlan, source: str | None = None) -> str:
    """The containerlab file of a plan, with a header saying what was left out."""
    nodes: dict[str, Any] = {}
    for node in plan.nodes.values():
        # a node in another's namespace shares its container's (and has no links of its own)
        entry: dict[str, Any] = {
            "network-mode": f"container:{node.shares}" if node.shares else "none"
        }
        if node.cmd:
            entry["cmd"] = _line(node.cmd)
        if node.binds:
            entry["binds"] = [
                f"{host}:{inside}" + (":ro" if ro else "") for host, inside, ro in node.binds
            ]
        lines = _node_lines(plan, node)
        if lines:
            entry["exec"] = lines
        nodes[node.name] = entry
    links = [_link(link) for link in plan.links]
    topology: dict[str, Any] = {
        "defaults": {"kind": "linux", "image": DEFAULT_IMAGE, "sysctls": dict(plan.sysctls)},
        "nodes": nodes,
        "links": links,
    }
    body = yaml.dump(
        {"name": plan.name, "topology": topology}, Dumper=_Dumper, sort_keys=False, width=100
    )
    return "".join(f"# {line}\n" if line else "#\n" for line in header(plan, source)) + body


class _Dumper(yaml.SafeDumper):
    """Block style, but a link's two endpoints on one line, as containerlab's docs write them."""


def _list(dumper: yaml.SafeDumper, items: list[Any]) -> yaml.Node:
    short = len(items) == 2 and all(isinstance(i, str) and ":" in i for i in items)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=short)


_Dumper.add_representer(list, _list)


def header(plan: LabPlan, source: str | None) -> list[str]:
    """What the file is, and what netrig would run that the file does not."""
    lines = [f"containerlab topology of netrig lab {plan.name}"
             + (f", exported from {source}" if source else "") + ".",
             "Deploy with containerlab, or run here: netrig up FILE."]  # fmt: skip
    left = []
    if plan.protocol not in ("static", "none", "ecmp", "bridge"):
        left.append(f"routing {plan.protocol} (its daemons; the routes it would learn)")
    services = sorted({s.kind for n in plan.nodes.values() for s in n.services})
    if services:
        left.append(f"services {', '.join(services)}")
    if any(n.firewall for n in plan.nodes.values()):
        left.append("firewalls")
    if any(n.ovs for n in plan.nodes.values()):
        left.append("Open vSwitch (its switch nodes are Linux bridges here)")
    if left:
        lines += ["", "Not exported (netrig runs them itself): " + "; ".join(left) + "."]
    return lines


def _link(link: LinkPlan) -> dict[str, Any]:
    ends = [f"{link.a}:{link.a_iface}", f"{link.b}:{link.b_iface}"]
    if link.mtu:
        return {"type": "veth", "mtu": link.mtu, "endpoints": [
            {"node": link.a, "interface": link.a_iface},
            {"node": link.b, "interface": link.b_iface},
        ]}  # fmt: skip
    return {"endpoints": ends}


def _node_lines(plan: LabPlan, node: NodePlan) -> list[str]:
    lines = [f"ip addr add {cidr} dev lo" for cidr in node.loopbacks]
    bridge = node.bridge or (None if node.ovs is None else "br0")
    if bridge is not None:
        name = node.bridge.name if node.bridge else "br0"
        timers = " ".join(f"{key} {value}" for key, value in BRIDGE_TIMERS.items())
        stp = (  # with netrig's timers: the kernel's defaults forward only after ~30 s
            f" stp_state 1 {timers}"
            if (node.bridge and node.bridge.stp) or (node.ovs and node.ovs.stp)
            else ""
        )
        lines.append(f"ip link add {name} type bridge{stp}")
        lines.append(f"ip link set {name} up")
        for iface in node.ifaces:
            lines.append(f"ip link set {iface.name} master {name}")
        if node.bridge:
            lines += [f"ip addr add {cidr} dev {name}" for cidr in node.bridge.addrs]
    for iface in node.ifaces:
        lines += [f"ip addr add {cidr} dev {iface.name}" for cidr in iface.addrs]
    lines += _tc_lines(plan, node)
    lines += _route_lines(node)
    lines += [_line(argv) for argv in node.exec]
    return lines


def _line(argv: list[str]) -> str:
    """A command line that splits back into `argv` (quoted as a shell would need it), its
    `$` written `$$`: containerlab substitutes `$VAR` in the whole file before reading it
    (`sh -c 'echo a b > f'` had been written unquoted and ran `sh -c echo`)."""
    return shlex.join(argv).replace("$", "$$")


def _tc_lines(plan: LabPlan, node: NodePlan) -> list[str]:
    out = []
    for link in plan.links:
        for end, ifname in ((link.a, link.a_iface), (link.b, link.b_iface)):
            if end != node.name:
                continue
            if link.delay or link.jitter or link.loss:
                out.append(f"tc qdisc add dev {ifname} root netem {_netem_args(link)}")
            elif link.rate:
                burst = link.burst or max(16 * 1024, link.rate // 8 // 200)
                out.append(
                    f"tc qdisc add dev {ifname} root tbf rate {link.rate}bit burst {burst} "
                    "latency 50ms"
                )
    return out


def _netem_args(link: LinkPlan) -> str:
    """`delay 5ms 1ms loss 1% rate 10000000bit`: netem does rate too, in one qdisc."""
    delay = f"delay {(link.delay or 0) * 1000:g}ms" if link.delay or link.jitter else ""
    jitter = f"{link.jitter * 1000:g}ms" if link.jitter else ""
    loss = f"loss {link.loss:g}%" if link.loss else ""
    rate = f"rate {link.rate}bit" if link.rate else ""
    return " ".join(part for part in (delay, jitter, loss, rate) if part)


def _route_lines(node: NodePlan) -> list[str]:
    names = {iface.index: iface.name for iface in node.ifaces}
    if node.bridge:
        names[node.bridge.index] = node.bridge.name
    source = {":" in c: c.split("/")[0] for c in reversed(node.loopbacks)}
    out = []
    for route in node.routes:
        src = source.get(":" in route.dst)
        tail = f" src {src}" if src else ""
        hops = [
            (f"via {gw} " if gw else "") + f"dev {names.get(index, index)}"
            for gw, index in route.nexthops
        ]
        if len(hops) == 1:
            out.append(f"ip route add {route.dst} {hops[0]}{tail}")
        else:
            nexthops = " ".join(f"nexthop {hop}" for hop in hops)
            out.append(f"ip route add {route.dst}{tail} {nexthops}")
    return out
