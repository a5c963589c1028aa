"""How long does each routing protocol take to converge from a cold start, and how much of
`netrig up` is netrig's own work?

For each protocol (static as the zero baseline, batman, babel, ospf) and topology (a 16-node
ring and a 5×10 grid; --quick: a 6-node ring), one lab is brought up with the protocol's
default options and timed in parts:

- setup: namespaces, links, addresses (netrig's build);
- start: writing configs and spawning the daemons (netrig);
- converge: from the last daemon started to the first poll that found every node with a
  route to every other node's loopback (the protocol; resolution ± one poll interval);
  this is when `netrig up` goes on;
- settled: from the same start to the last change of any of the protocol's routes (next
  hops included), watched after `up` until nothing changed for --quiet seconds (babeld
  keeps moving routes to shorter paths long after every node is reachable);
- polls: how many convergence polls ran and the time they took in all (netrig, included
  in the converge column's wall time, shown apart);
- check: the all-pairs ping check after convergence (netrig).

    python benchmarks/convergence.py [--quick] [--protocols babel,ospf] [--topologies ring16]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from netrig.rig import Lab
from netrig.routing import RoutingProtocol

TOPOLOGIES: dict[str, dict[str, Any]] = {
    "ring6": {"kind": "ring", "nodes": 6},
    "ring16": {"kind": "ring", "nodes": 16},
    "grid50": {"kind": "grid", "rows": 5, "cols": 10},
}
PROTOCOLS = ("static", "batman", "babel", "ospf")


@dataclass
class Row:
    protocol: str
    topology: str
    nodes: int
    setup: float = 0.0
    start: float = 0.0
    converge: float = 0.0
    polls: int = 0
    poll_time: float = 0.0
    check: float = 0.0
    total: float = 0.0
    settled: float | None = None  # None: still changing when the watch ended
    error: str = ""


def timed(fn: Callable[..., Any], box: list[float]) -> Callable[..., Any]:
    """fn, with each call's duration appended to box."""

    def wrapper(*args: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args)
        finally:
            box.append(time.perf_counter() - t)

    return wrapper


def watch_settling(
    proto: RoutingProtocol, started: float, quiet: float, cap: float
) -> float | None:
    """Poll the protocol's routes until none changed for `quiet` s; seconds from `started`
    (monotonic) to the last change, or None if they still changed after `cap` s."""
    reach = getattr(proto, "reach", None)
    if reach is None:
        return 0.0  # static routes are in place before anything is polled
    while time.monotonic() - reach.changed_at < quiet:
        if time.monotonic() - started > cap:
            return None
        reach.missing()
        time.sleep(0.25)
    return float(reach.changed_at - started)


def measure(protocol: str, topology: str, index: int, quiet: float, cap: float) -> Row:
    spec = {
        "name": f"cvb{os.getpid() % 1000}{index}",
        "topology": TOPOLOGIES[topology],
        "routing": {"protocol": protocol},
        "check": {"timeout": 30},
    }
    lab = Lab.from_spec(spec)
    row = Row(protocol, topology, len(lab.plan.nodes))
    proto = lab.protocol
    starts: list[float] = []
    polls: list[float] = []
    started = [0.0]  # monotonic time the last daemon was started
    uses_daemons = type(proto).start is not RoutingProtocol.start
    if uses_daemons:  # instance attributes shadow the class's methods; Lab calls these
        start = timed(proto.start, starts)

        def start_and_mark(lab: Lab) -> None:
            start(lab)
            started[0] = time.monotonic()

        proto.start = start_and_mark  # type: ignore[method-assign]
        proto.converged = timed(proto.converged, polls)  # type: ignore[method-assign]
    began = time.perf_counter()
    try:
        timings = lab.up(check_reachability=True)
        row.total = time.perf_counter() - began
        row.setup = timings.total
        row.start = sum(starts)
        row.polls = len(polls)
        row.poll_time = sum(polls)
        row.converge = timings.extra.get("converged", 0.0) - row.start
        row.check = timings.extra.get("usable", 0.0)
        row.settled = watch_settling(proto, started[0], quiet, cap) if uses_daemons else 0.0
    except Exception as exc:  # a protocol that does not converge is a result, not a crash
        row.total = time.perf_counter() - began
        row.error = str(exc).splitlines()[0][:100]
    finally:
        lab.down()
    time.sleep(0.3 + row.nodes * 0.004)  # let the kernel free the namespaces
    return row


def table(rows: list[Row], cap: float) -> str:
    head = (
        f"{'protocol':<8} {'topology':<8} {'nodes':>5} │ {'converge':>9} {'settled':>9} │ "
        f"{'setup':>7} {'start':>7} {'polls':>11} {'check':>7} │ {'total':>8}"
    )
    lines = [head, "─" * len(head)]
    for r in rows:
        if r.error:
            lines.append(f"{r.protocol:<8} {r.topology:<8} {r.nodes:>5} │ failed: {r.error}")
            continue
        polls = f"{r.polls}×={r.poll_time:.2f}s" if r.polls else "-"
        settled = f"{r.settled:8.2f}s" if r.settled is not None else f">{cap:.0f}s".rjust(9)
        lines.append(
            f"{r.protocol:<8} {r.topology:<8} {r.nodes:>5} │ {r.converge:>8.2f}s {settled} │ "
            f"{r.setup:>6.3f}s {r.start:>6.3f}s {polls:>11} {r.check:>6.3f}s │ {r.total:>7.2f}s"
        )
    lines.append("")
    lines.append(
        "converge: the protocol's own time (daemons started → all routes in, ± one poll);\n"
        "settled: daemons started → last change of the protocol's routes (>N s: still moving\n"
        "  when the watch gave up);\n"
        "setup/start/polls/check: netrig's work (build; configs and spawning; route polls,\n"
        "whose time is inside the converge wall time; all-pairs ping check)."
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6-node ring only")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--topologies", default=None, help="ring6, ring16, grid50")
    ap.add_argument("--quiet", type=float, default=None, help="settled: seconds without change")
    ap.add_argument("--cap", type=float, default=None, help="settled: give up after (s)")
    args = ap.parse_args()
    # a smoke run (CI) watches the settling briefly; the full run waits for real quiet
    args.quiet = args.quiet if args.quiet is not None else (3.0 if args.quick else 20.0)
    args.cap = args.cap if args.cap is not None else (15.0 if args.quick else 150.0)
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    topologies = (args.topologies or ("ring6" if args.quick else "ring16,grid50")).split(",")
    rows = []
    index = 0
    for topology in topologies:
        for protocol in args.protocols.split(","):
            row = measure(protocol, topology, index, args.quiet, args.cap)
            index += 1
            rows.append(row)
            status = row.error or f"converged {row.converge:.2f} s"
            print(f"… {protocol} on {topology}: {status}", file=sys.stderr, flush=True)
    print(table(rows, args.cap))


if __name__ == "__main__":
    main()
