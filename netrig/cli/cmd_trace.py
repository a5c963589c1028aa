"""netrig trace: the path packets of a flow take, from each node's FIB."""

from __future__ import annotations

import click
from rich.table import Table

from netrig.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    complete_lab,
    complete_node,
    console,
    counted,
    fail,
    reports_errors,
    require_root,
)
from netrig.cli.group import cli
from netrig.lab.daemons import stopped_switches
from netrig.lab.trace import FIRST_SPORT, IPPROTO, Tracer, count_paths
from netrig.rig import Lab

SPORT = 40000  # the source port of one traced flow


@cli.command("trace")
@click.argument("lab", shell_complete=complete_lab)
@click.argument("src", shell_complete=complete_node)
@click.argument("dst", shell_complete=complete_node)
@click.option(
    "--count",
    "flows",
    type=click.IntRange(1, 65535),
    default=None,
    help="Trace N flows (source ports --sport, --sport+1, …; 32768… unless given) and count "
    "how often each path is used (with --cluster: across the hosts).",
)
@click.option("--proto", type=click.Choice(sorted(IPPROTO)), default="tcp", show_default=True)
@click.option("--sport", type=click.IntRange(1, 65535), default=None,
              help=f"Source port [default: {SPORT}]; with --count the first of the N flows' "
              f"ports [default: {FIRST_SPORT}], e.g. pps's: --sport 10000 --count 256 "
              "--proto udp --dport 9.")
@click.option("--dport", type=click.IntRange(1, 65535), default=5201, show_default=True)
@click.option("-6", "ipv6", is_flag=True,
              help="Trace to DST's IPv6 address (the only one of a node without IPv4).")
@click.option("--cluster", metavar="tcp://HOST:PORT", help="LAB is spread over this Dask "
              "scheduler's hosts (DST an address): the flow's hops host by host.")
@reports_errors
def trace(
    lab: str, src: str, dst: str, flows: int | None, proto: str, sport: int | None,
    dport: int, ipv6: bool, cluster: str | None,
) -> None:
    """Show the hops from node SRC to DST (a node name or an address) in LAB.

    Each hop is the kernel's own forwarding decision for the flow, multipath hash
    included, so `--count` shows how equal-cost paths share the traffic.
    """
    if proto == "icmp" and flows is not None:  # it had counted "16 icmp flows" on one path
        fail("--count varies the flows' source ports, and ICMP has none: every ICMP packet "
             "between two addresses takes one path; trace it without --count", EXIT_BAD_INPUT)
    if sport is None:
        sport = SPORT if flows is None else FIRST_SPORT
    if flows is not None and sport + flows - 1 > 65535:  # the ports must exist
        fail(f"--count {flows} from source port {sport} would go past port 65535 (the last "
             f"is {sport + flows - 1}): at most {65536 - sport} flows from --sport {sport}",
             EXIT_BAD_INPUT)
    if cluster:
        _trace_on_cluster(lab, src, dst, cluster, proto, sport, dport, 6 if ipv6 else 4, flows)
        return
    require_root("trace")
    running = Lab.attach(lab)
    plan = running.plan
    plan.node(src)
    if dst in plan.nodes and plan.node(dst).kind == "switch":
        fail(f"{dst} is a switch, which has no address: trace to a host behind it",
             EXIT_BAD_INPUT)  # fmt: skip
    only_v6 = dst in plan.nodes and not plan.node(dst).addresses(4) and plan.node(dst).addresses(6)
    family = 6 if ipv6 or only_v6 else 4
    dst_addr = plan.addr(dst, family) if dst in plan.nodes else dst  # IPv6 in an IPv6-only lab
    if ":" not in dst_addr and not dst_addr.replace(".", "").isdigit():
        fail(f"{dst!r} is neither a node of lab {lab!r} nor an address", EXIT_BAD_INPUT)
    stopped = stopped_switches(running)
    if flows is None:
        with Tracer(plan, stopped) as tracer:
            path = tracer.trace(src, dst_addr, proto, sport, dport)
        console.print(
            f"{src} → {dst} ({dst_addr}), {_flow(proto, sport, dport)}: "
            f"{counted(len(path.hops) - 1, 'hop')}"
        )
        console.print(str(path))
        if not path.reached:
            raise SystemExit(EXIT_FAILURE)
        return
    counts = count_paths(plan, src, dst_addr, flows, proto, dport, sport, stopped=stopped)
    table = Table(title=f"{counted(flows, proto + ' flow')} {src} → {dst} ({dst_addr}), "
                  f"{_ports(sport, flows, dport)}", title_justify="left")
    table.add_column("flows", justify="right")
    table.add_column("share", justify="right")
    table.add_column("hops", justify="right")
    table.add_column("path")
    for path, n in counts.most_common():
        table.add_row(str(n), f"{100 * n / flows:.1f}%", str(len(path.hops) - 1), str(path))
    console.print(table)
    if ":" in dst_addr and _hashes_v6_flow_label(plan.sysctls):
        console.print(
            "[yellow]note: these IPv6 flows differ only in their ports; where a multipath "
            "route is on the way, this lab's hash (l3) picks by each flow's label, which a "
            "socket sets at random, so real flows spread otherwise (hash: l4 follows the "
            "ports)[/]",
            soft_wrap=True,
        )
    if any(not p.reached for p in counts):
        raise SystemExit(EXIT_FAILURE)


def _hashes_v6_flow_label(sysctls: dict[str, str]) -> bool:
    """Policy 0 (L3, the kernel's default) hashes an IPv6 packet's flow label with its
    addresses; a trace's route lookups carry no label."""
    return sysctls.get("net.ipv6.fib_multipath_hash_policy", "0") == "0"


def _trace_on_cluster(lab: str, src: str, dst: str, address: str, proto: str, sport: int,
                      dport: int, family: int, flows: int | None) -> None:
    """netrig trace --cluster: each host traces its part; tunnels lead to the next host.
    With --count, every host traces all the flows that are on its nodes at once."""
    from netrig.cluster import labs

    dst_addr = dst
    if ":" not in dst and not dst.replace(".", "").isdigit():  # a node: its host knows it
        dst_addr = labs.node_addr(lab, dst, address, family)
    shown_dst = dst if dst == dst_addr else f"{dst} ({dst_addr})"
    if flows is not None:
        counts = labs.count_paths(lab, src, dst_addr, flows, address, proto, dport, sport)
        table = Table(title=f"{counted(flows, proto + ' flow')} {src} → {shown_dst}, "
                      f"{_ports(sport, flows, dport)}, across hosts",
                      title_justify="left")
        table.add_column("flows", justify="right")
        table.add_column("share", justify="right")
        table.add_column("hops", justify="right")
        table.add_column("path (\\[host] where the path enters it)")
        for (path_hops, reached, error), n in counts.most_common():
            table.add_row(str(n), f"{100 * n / flows:.1f}%", str(len(path_hops) - 1),
                          _hops_text(list(path_hops), reached, error))
        console.print(table)
        if any(not reached for _hops, reached, _e in counts):
            raise SystemExit(EXIT_FAILURE)
        return
    hops, reached, error = labs.trace(lab, src, dst_addr, address, proto, sport, dport)
    console.print(f"{src} → {shown_dst}, {_flow(proto, sport, dport)}: "
                  f"{counted(len(hops) - 1, 'hop')}")
    console.print(_hops_text(hops, reached, error), soft_wrap=True)
    if not reached:
        raise SystemExit(EXIT_FAILURE)


def _ports(first: int, flows: int, dport: int) -> str:
    """`source ports 10000–10255 → 9`: which flows were counted."""
    last = first + flows - 1
    return f"source ports {first}–{last} → {dport}" if flows > 1 else f"source port {first} → {dport}"


def _flow(proto: str, sport: int, dport: int) -> str:
    """`tcp 40000→5201`; ICMP has no ports: `icmp`."""
    return proto if proto == "icmp" else f"{proto} {sport}→{dport}"


def _hops_text(hops: list[tuple[str, str, str | None]], reached: bool, error: str | None) -> str:
    shown, previous = [], None
    for host, node, out in hops:  # the host named where the path enters it
        where = f"\\[{host}] " if host != previous else ""
        shown.append(where + node + (f" ({out})" if out else ""))
        previous = host
    text = " → ".join(shown)
    return text if reached else f"{text} ✘ {error or 'not reached'}"
