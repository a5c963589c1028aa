"""Faults injected into a running lab: links down and up, a node's daemons (routing, services,
its cmd) stopped and started, link rates changed; by hand (`netrig link`, `netrig node`) or on a timeline of events.

    set_link(lab, "n3", "n4", up=False)      # both ends, over rtnetlink in each namespace
    stop_node(lab, "n5"); start_node(lab, "n5")
    timeline = Timeline(lab, parse_events(["link n3-n4 down @ 2s", "link n3-n4 up @ 5s"]))
    timeline.start(); ...; timeline.join()   # timeline.log: what happened, when

A link brought back up gets back what the kernel dropped when it went down: its IPv6
addresses (flushed on down unless keep_addr_on_down), its permanent neighbour entries and
the planned (static) routes through it, exactly as the plan has them, and, where no daemon
routes, every other route the kernel dropped with it (those of exec lines), so the lab is as
it was before the fault.
"""

from __future__ import annotations

import errno
import json
import os
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from ipaddress import IPv4Network

from netrig.lab import daemons, netns, nlwire, settle
from netrig.lab.build import BadInput, LabError, route_requests, set_tbf
from netrig.lab.ledger import Ledger
from netrig.lab.runtime import LabRuntime as Lab
from netrig.plan.events import Event, check_events, find_link
from netrig.plan.model import LabPlan, LinkPlan

# ------------------------------------------------------------------ links


def set_link(lab: Lab, a: str, b: str, *, up: bool) -> LinkPlan:
    """Both ends of the A–B link administratively down (or up again)."""
    link = find_link(lab.plan, a, b)
    ends = ((link.a, link.a_iface), (link.b, link.b_iface))
    # what the kernel drops with the link is kept to put back on `up`: a daemon that does
    # not do it itself, and routes no plan has (a containerlab file's exec lines)
    keep = not lab.protocol.restores_dropped_routes or not lab.protocol.runs_daemons()
    for node, ifname in ends:
        iface = lab.plan.node(node).iface(ifname)
        if keep and not up:
            save_routes(lab, node, ifname, iface.index)
        requests = [nlwire.set_link(iface.index, up=up, what=f"{ifname} of {node}")]
        if up:
            requests += restore_requests(lab.plan, node, iface.index)
        send(lab, node, requests)
    if up:  # only now: a route's nexthop is reachable once both ends are up again
        _replan_routes(lab)
        for node, ifname in ends:
            # the planned routes with their next hops out of the node's interfaces that are
            # up (one out of another link still down is refused: ENETUNREACH), each in place
            # of what the kernel kept of it (a multipath route less its dead next hops)
            plan_node = lab.plan.node(node)
            usable = admin_up(lab, node, [i.index for i in plan_node.ifaces])
            planned = route_requests(plan_node, usable, replace=True)
            send(lab, node, planned + saved_routes(lab, node, ifname))
        # a bridge's port forwards a little after its carrier comes (a switch dropped ~0.5 s
        # of traffic): returns once it does. Routed ends are left to their routing, as before
        ports = {node: {ifname} for node, ifname in ends if lab.plan.node(node).iface(ifname).master}
        if ports:
            settle.wait_carrier(lab.plan, UP_WAIT, ports)
    return link


UP_WAIT = 5.0  # s: at most, for a link brought up again to carry traffic


def admin_up(lab: Lab, node: str, indexes: list[int]) -> set[int]:
    """Which of these interfaces of NODE are administratively up (their carrier may come
    later: a route through one is accepted before it does)."""

    def ask() -> set[int]:
        with nlwire.RtnlSocket() as sock:
            answers = sock.request_each([settle.getlink(i) for i in indexes])
        return {
            index
            for index, answer in zip(indexes, answers, strict=True)
            if answer is not None and struct.unpack_from("=BxHiI", answer[1])[3] & settle.IFF_UP
        }

    return netns.in_netns(lab.ns(node), ask)


def _replan_routes(lab: Lab) -> None:
    """Give a lab attached from its saved plan (saved without routes: a 2,000-node ring's
    would take seconds to write) its planned static routes again, to put back on `up`."""
    if any(node.routes for node in lab.plan.nodes.values()):
        return
    for name, routes in lab.protocol.routes(lab.plan).items():
        lab.plan.nodes[name].routes = routes


def routes_file(lab: Lab, node: str, ifname: str) -> str:
    return os.path.join(lab.node_dir(node), f"routes-via-{ifname}.json")


def save_routes(lab: Lab, node: str, ifname: str, index: int) -> None:
    """The daemon's routes out of one interface, as the kernel dumps them, kept in the
    node's directory (`link … up` may be another netrig process) until the link is up."""

    def work() -> list[str]:
        with nlwire.RtnlSocket() as sock:
            payloads = nlwire.dump_routes(sock)
        kept = []
        for payload in payloads:
            header = nlwire.route_header(payload)
            proto, rtype = header[5], header[7]
            oif = nlwire.route_attrs(payload).get(nlwire.RTA_OIF)
            if (
                rtype == nlwire.RTN_UNICAST
                and proto != nlwire.RTPROT_KERNEL
                and oif
                and struct.unpack("=I", oif)[0] == index
            ):
                kept.append(payload.hex())
        return kept

    routes = netns.in_netns(lab.ns(node), work)
    path = routes_file(lab, node, ifname)
    # a second `down` before the `up` finds the routes gone with the first: it adds to what
    # the first kept rather than leaving `up` nothing to put back (batmand never did)
    with suppress(FileNotFoundError), open(path) as fh:
        routes = list(dict.fromkeys([*json.load(fh), *routes]))
    with open(path, "w") as fh:
        json.dump(routes, fh)


def saved_routes(lab: Lab, node: str, ifname: str) -> list[nlwire.Request]:
    """The routes saved at `down`, to add again (EEXIST: the daemon has one already)."""
    path = routes_file(lab, node, ifname)
    try:
        with open(path) as fh:
            payloads = json.load(fh)
    except FileNotFoundError:
        return []
    os.unlink(path)
    return [nlwire.new_route_like(bytes.fromhex(p), f"route back via {ifname}") for p in payloads]


def restore_requests(plan: LabPlan, node: str, index: int) -> list[nlwire.Request]:
    """The plan's addresses and permanent neighbours of one interface (EEXIST is fine)."""
    plan_node = plan.node(node)
    iface = next(i for i in plan_node.ifaces if i.index == index)
    out = []
    for cidr in iface.addrs:
        addr, plen = cidr.split("/")
        brd = None
        if ":" not in addr and int(plen) < 31:
            brd = str(IPv4Network(cidr, strict=False).broadcast_address)
        out.append(nlwire.new_addr(index, addr, int(plen), broadcast=brd))
    for nindex, addr, mac in plan_node.neighbors:
        if nindex == index:
            out.append(nlwire.new_neighbor(index, addr, mac))
    return out


def send(
    lab: Lab, node: str, requests: list[nlwire.Request], ignore: tuple[int, ...] = (errno.EEXIST,)
) -> None:
    """One netlink batch in a node of a running lab; LabError for an error not in `ignore`
    (EEXIST by default: putting back what is there already is fine)."""
    if not requests:
        return

    def work() -> list[nlwire.NetlinkError]:
        with nlwire.RtnlSocket() as sock:
            return sock.send_batch(requests)

    errors = [e for e in netns.in_netns(lab.ns(node), work) if e.code not in ignore]
    if errors:
        raise LabError(f"in {lab.ns(node)}: {errors[0]}")


def set_rate(lab: Lab, a: str, b: str, rate: int | None) -> LinkPlan:
    """A token-bucket rate limit (bit/s) on both ends of A–B, replacing any; None removes it."""
    link = find_link(lab.plan, a, b)
    burst = link.burst if rate == link.rate else None  # the planned rate: its own burst
    for node, ifname in ((link.a, link.a_iface), (link.b, link.b_iface)):
        index = lab.plan.node(node).iface(ifname).index
        try:
            replace_rate(lab.ns(node), index, rate, burst, link.mtu)
        except Exception as exc:  # pyroute2's NetlinkError
            raise LabError(f"rate on {node}:{ifname}: {exc}") from exc
    return link


def replace_rate(
    ns: str, index: int, rate: int | None, burst: int | None = None, mtu: int | None = None
) -> None:
    """A token bucket of RATE bit/s as the root qdisc of one interface of namespace NS,
    replacing any; None removes ours (a veth end, or a cluster's tunnel end)."""
    from pyroute2 import IPRoute
    from pyroute2.netlink.exceptions import NetlinkError

    def apply() -> None:
        with IPRoute() as ipr:
            # removed and added, not replaced: a replaced bucket keeps the packets queued
            # under the old one, and a GSO packet larger than the new burst can never leave
            # (1gbit → 10mbit stalled TCP for good: 4 packets, 48 kB, stuck)
            try:
                ipr.tc("del", index=index, root=True)
            except NetlinkError as exc:  # no qdisc of ours there: nothing to remove
                if exc.code not in (errno.ENOENT, errno.EINVAL):
                    raise
            if rate is not None:
                set_tbf(ipr, index, rate, burst, mtu=mtu)

    netns.in_netns(ns, apply)


# ------------------------------------------------------------------ nodes


def stop_node(lab: Lab, node: str) -> list[str]:
    """Stop NODE's daemons by PID (routing daemons, services, its cmd: whatever it runs
    that netrig started); returns what was stopped."""

    lab.plan.node(node)
    if not daemons.recorded(lab, node):
        raise _no_daemon(lab, node)
    return daemons.stop(lab, node, reason="stopped by hand")


def start_node(lab: Lab, node: str) -> tuple[list[str], list[str]]:
    """Start NODE's daemons again with the command lines they had, and what `up` ran once
    they started (FRR's `vtysh -b`, loading frr.conf: see daemons.start); a service does
    not wait to listen, as at `up`: a request right after may be refused. Returns (started,
    already running)."""

    lab.plan.node(node)
    known = daemons.recorded(lab, node)
    if not known:
        raise _no_daemon(lab, node)
    alive = daemons.running(lab, node)
    started, skipped = [], []
    for name, argv in known.items():
        if name in alive:
            skipped.append(f"{node}/{name} (pid {alive[name]})")
            continue
        daemons.start(lab, node, name, argv)  # waiting for what it needs, as at first
        started.append(f"{node}/{name}")
    daemons.restarts_then(lab, node, [s.removeprefix(f"{node}/") for s in started])
    return started, skipped


def _no_daemon(lab: Lab, node: str) -> BadInput:
    return BadInput(
        f"node {node} of lab {lab.name!r} runs no routing daemon (protocol {lab.plan.protocol}), "
        "no service and no cmd"
    )


# ------------------------------------------------------------------ timeline


def apply(lab: Lab, event: Event) -> None:
    """One event, now. A lab that acts on its nodes elsewhere (a lab spread over hosts:
    `apply_event`) applies it itself, on the hosts of the event's nodes."""
    elsewhere = getattr(lab, "apply_event", None)
    if elsewhere is not None:
        elsewhere(event)
        return
    if event.kind in ("link-down", "link-up"):
        set_link(lab, *event.target, up=event.kind == "link-up")
    elif event.kind == "link-rate":
        a, b = event.target
        set_rate(lab, a, b, event.rate)
    elif event.kind == "node-stop":
        stop_node(lab, event.target[0])
    else:
        start_node(lab, event.target[0])


@dataclass
class Timeline:
    """Applies events at their times in a background thread; `log` records (planned time,
    actual time: when applying it began, event, error or None), times in seconds from
    `start()`. `undo()` puts the
    lab back as it was: links up, stopped daemons started, rates as the plan has them.

    The thread uses its own Lab object on the same plan: the ledger's SQLite connection
    belongs to the thread that opened it.
    """

    lab: Lab
    events: list[Event]
    log: list[tuple[float, float, Event, str | None]] = field(default_factory=list)
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    started_at: float = 0.0

    def start(self) -> None:
        self.events = check_events(self.lab.plan, self.events)
        if any(e.kind == "link-rate" for e in self.events):
            # imported now, before the clock starts: on first use inside the timeline
            # pyroute2's import (~0.2 s) made the first rate event that much late
            from pyroute2 import IPRoute  # noqa: F401
        if any(e.kind.startswith("link") for e in self.events):
            self.lab.protocol  # noqa: B018 -- its plugin's import (~0.2 s in a new process), now
        self.started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="netrig-timeline", daemon=True)
        self._thread.start()

    def _run(self) -> None:

        ledger = Ledger(self.lab.ledger.state_dir)
        lab = self.lab.with_ledger(ledger)
        try:
            for event in sorted(self.events, key=lambda e: e.at):
                delay = self.started_at + event.at - time.monotonic()
                if delay > 0 and self._stop.wait(delay):
                    return
                error = None
                # when the event began: a node's stop waits for its daemons to exit and a
                # link's up for the carrier, but traffic is hit from the first signal or
                # netlink request on (stamped after them, a stop's first lost probes fell
                # before its event)
                began = time.monotonic() - self.started_at
                try:
                    apply(lab, event)
                except Exception as exc:  # recorded, not raised: the measurement goes on
                    error = str(exc)
                self.log.append((event.at, began, event, error))
        finally:
            ledger.close()

    def cancel(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def undo(self) -> list[str]:
        """Reverse what the applied events left changed; returns what was done."""
        down: dict[tuple[str, str], bool] = {}
        stopped: dict[str, bool] = {}
        rated: set[tuple[str, str]] = set()
        for _at, _actual, event, error in self.log:
            if error:
                continue
            key = tuple(sorted(event.target))
            if event.kind in ("link-down", "link-up"):
                down[key] = event.kind == "link-down"  # type: ignore[index]
            elif event.kind == "link-rate":
                rated.add(key)  # type: ignore[arg-type]
            else:
                stopped[event.target[0]] = event.kind == "node-stop"
        undo = [Event(0.0, "link-up", key) for key, is_down in down.items() if is_down]
        undo += [Event(0.0, "link-rate", key, find_link(self.lab.plan, *key).rate) for key in rated]
        undo += [
            Event(0.0, "node-start", (node,)) for node, is_stopped in stopped.items() if is_stopped
        ]
        for event in undo:
            apply(self.lab, event)
        return [
            f"link {'-'.join(e.target)} " + ("rate as planned" if e.kind == "link-rate" else "up")
            if e.kind.startswith("link")
            else f"node {e.target[0]} start"
            for e in undo
        ]


@contextmanager
def during(lab: Lab, events: list[Event], restore: bool = True) -> Iterator[Timeline]:
    """Run a timeline of faults while the body runs (a measurement, say); afterwards stop
    it and, with `restore`, undo what it changed.

        with faults.during(lab, faults.parse_events(["link n3-n4 down @ 2s"])) as tl:
            run_iperf3(...)
        tl.log      # when each event really happened
    """
    timeline = Timeline(lab, events)
    timeline.start()
    try:
        yield timeline
    finally:
        timeline.cancel()
        timeline.join()
        if restore:
            timeline.undo()
