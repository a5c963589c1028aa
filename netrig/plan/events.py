"""Faults on a timeline, as data: `link n3-n4 down @ 2s` read into an Event and checked
against a plan (the link or node must exist). Applying them is the lab core's (lab.faults).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from netrig.model.units import parse_link_rate
from netrig.plan.model import LabPlan, LinkPlan, UnknownName


def _link_between(plan: LabPlan, a: str, b: str) -> LinkPlan | None:
    return next((link for link in plan.links if {link.a, link.b} == {a, b}), None)


def find_link(plan: LabPlan, a: str, b: str) -> LinkPlan:
    """The link between nodes A and B, whichever way round the file wrote it."""
    plan.node(a)
    plan.node(b)
    link = _link_between(plan, a, b)
    if link is not None:
        return link
    neighbours = sorted({i.peer for i in plan.node(a).ifaces})
    raise UnknownName(
        f"lab {plan.name!r} has no link between {a} and {b} "
        f"({a} is linked to {', '.join(neighbours) or 'nothing'})"
    )


_EVENT = re.compile(
    r"^\s*(?:(?P<link>link)\s+(?P<a>[\w.]+(?:-[\w.]+)*?)-(?P<b>[\w.]+(?:-[\w.]+)*)\s+"
    r"(?P<what>down|up|rate\s+(?P<rate>\d+(?:\.\d+)?\s*[a-zA-Z]*)|rate\s+off)"
    r"|(?P<node>node)\s+(?P<n>[\w.-]+)\s+(?P<verb>stop|start))"
    r"\s*@\s*(?P<at>\d+(?:\.\d+)?)\s*(?P<ms>ms|s)?\s*$"
)


@dataclass(frozen=True)
class Event:
    """One fault at `at` seconds after the timeline starts."""

    at: float
    kind: str  # link-down | link-up | link-rate | node-stop | node-start
    target: tuple[str, ...]  # (a, b) or (node,)
    rate: int | None = None  # bit/s for link-rate (None: remove the limit)

    def __str__(self) -> str:
        what = self.kind.split("-")[1]
        if self.kind == "link-rate":
            what = f"rate {_rate_text(self.rate) if self.rate else 'off'}"
        return f"{self.kind.split('-')[0]} {'-'.join(self.target)} {what} @ {self.at:g}s"


def _rate_text(bits: int) -> str:
    """10_000_000 → '10mbit', as the file would write it (tc units)."""
    for unit, size in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bits % size == 0:
            return f"{bits // size}{unit}"
    return f"{bits}bit"


def parse_event(text: str) -> Event:
    """`link n3-n4 down @ 2s`, `link n1-n2 rate 10mbit @ 500ms`, `node n5 stop @ 3`."""
    m = _EVENT.match(text)
    if not m:
        raise ValueError(
            f"cannot read event {text!r}; write `link A-B down|up|rate 10mbit|rate off @ T` "
            "or `node N stop|start @ T` (T in s or ms)"
        )
    at = float(m["at"]) / (1000 if m["ms"] == "ms" else 1)
    if m["link"]:
        what = m["what"]
        if what in ("down", "up"):
            return Event(at, f"link-{what}", (m["a"], m["b"]))
        rate = None
        if m["rate"]:  # as a link's `rate:` is read (tc units, the token bucket's bounds)
            try:
                rate = parse_link_rate(m["rate"].strip())
            except ValueError as exc:
                raise ValueError(f"event {text.strip()!r}: {exc}") from None
        return Event(at, "link-rate", (m["a"], m["b"]), rate)
    return Event(at, f"node-{m['verb']}", (m["n"],))


def parse_events(texts: list[str]) -> list[Event]:
    return sorted((parse_event(t) for t in texts), key=lambda e: e.at)


def check_events(plan: LabPlan, events: list[Event]) -> list[Event]:
    """Before anything runs: every link and node an event names exists. Returns the events
    with link ends read against the plan's node names (`r-1-r-2` is r-1 and r-2 there)."""
    out = []
    for event in events:
        if event.kind.startswith("link"):
            joined = "-".join(event.target)
            parts = joined.split("-")
            ends = [
                (a, b)
                for cut in range(1, len(parts))
                for a, b in [("-".join(parts[:cut]), "-".join(parts[cut:]))]
                if a in plan.nodes and b in plan.nodes
            ]
            linked = [(a, b) for a, b in ends if _link_between(plan, a, b)]
            if len(linked) > 1:
                both = " and ".join(f"{a}–{b}" for a, b in linked)
                raise UnknownName(
                    f"link {joined} may be {both}, both links of lab {plan.name!r}: "
                    "rename a node so that its name holds no '-'"
                )
            if linked or ends:
                event = replace(event, target=(linked or ends)[0])
            find_link(plan, *event.target)
        else:
            plan.node(event.target[0])
        out.append(event)
    return out
