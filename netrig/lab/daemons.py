"""Daemon supervision for plugins (routing daemons, switches, services): one place.

- `start`: a supervised daemon in a node, its command line kept in the node's directory
  (`daemons.json`) so `netrig node LAB N start` can start it again exactly the same way;
- `stop`: SIGTERM by PID and start time from the ledger, SIGKILL after a grace period, and
  the record dropped, so a daemon stopped on purpose is not reported as crashed;
- `Reachability`: which nodes have a kernel route to which other nodes' addresses, read
  over rtnetlink from every namespace in one pass (what `converged()` polls).

    start(lab, "n1", "bird", ["bird", "-f", "-c", conf])
    reach = Reachability(lab)
    reach.missing()        # [("n1", "n4", "198.18.0.4"), …] until routes are in

`netrig.routing._daemon.DaemonProtocol` puts these together for a routing plugin.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from ipaddress import ip_address
from typing import TYPE_CHECKING, Any

from netrig.lab import netns, nlwire
from netrig.lab.build import LabError
from netrig.lab.ledger import ObjectRecord, process_alive
from netrig.lab.teardown import end_processes

if TYPE_CHECKING:
    import subprocess

    from netrig.lab.runtime import LabRuntime as Lab

DAEMONS_FILE = "daemons.json"
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL (bird and batmand clean up routes)
SOCKET_WAIT = 10.0  # seconds a daemon waits for the sockets it needs (start(needs=…))
RTN_UNICAST = nlwire.RTN_UNICAST
RTPROT_KERNEL = nlwire.RTPROT_KERNEL  # connected routes the kernel adds: not the protocol's
RTA_DST, RTA_OIF, RTA_GATEWAY = nlwire.RTA_DST, nlwire.RTA_OIF, nlwire.RTA_GATEWAY
RTA_MULTIPATH, RTA_TABLE = nlwire.RTA_MULTIPATH, nlwire.RTA_TABLE


# ------------------------------------------------------------------ daemons


def require_tools(*tools: str, package: str) -> None:
    """A clear error before anything starts, instead of a FileNotFoundError per node."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise LabError(f"{', '.join(missing)} not found; install it: apt-get install -y {package}")


def write_file(lab: Lab, node: str, name: str, text: str) -> str:
    """A config file in the node's directory; returns its path."""
    path = os.path.join(lab.node_dir(node), name)
    with open(path, "w") as fh:
        fh.write(text)
    return path


def start(
    lab: Lab,
    node: str,
    name: str,
    argv: list[str],
    needs: Sequence[str] | None = None,
    then: Sequence[str] | None = None,
) -> subprocess.Popen[Any]:
    """Start daemon NAME in NODE and remember its command line for a later restart.

    NEEDS: Unix sockets (paths as the host sees them) that must accept connections before
    the daemon starts, such as FRR's watchfrr, which restarts every daemon it finds not
    answering as its own (PIDs netrig does not know). THEN: a command run in the node once
    the daemon is started, which must succeed (FRR's `vtysh -b`, which loads frr.conf into
    the running daemons). Both are remembered with the command line, so a restart (`netrig
    node … start`, a service started again) waits and loads as the first start did; None:
    those remembered, if any."""
    path = os.path.join(lab.node_dir(node), DAEMONS_FILE)
    known = _records(lab, node)
    if needs is None:
        needs = known.get(name, {}).get("needs", [])
    if then is None:
        then = known.get(name, {}).get("then", [])
    known[name] = {"argv": argv, "needs": list(needs), "then": list(then)}
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(known, fh)
    os.replace(tmp, path)
    if needs:
        wait_until(lab, lambda: all(answers(s) for s in needs), SOCKET_WAIT,
                   f"{node}: {name} waits for {', '.join(needs)}: nothing answered")  # fmt: skip
    _note(lab, node, name, "started: " + shlex.join(argv))
    proc = lab.start_daemon(node, argv, name)
    if then:
        run_then(lab, node, name, list(then))
    return proc


def run_then(lab: Lab, node: str, name: str, then: list[str] | None = None) -> None:
    """The command remembered to run after daemon NAME starts (see `start`), now; LabError
    with its output if it fails. Nothing when there is none."""
    if then is None:
        then = _records(lab, node).get(name, {}).get("then", [])
    if not then:
        return
    import subprocess  # here: the module imports it only for typing

    done = lab.exec(node, then, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    _note(lab, node, name, f"then: {shlex.join(then)} (exit {done.returncode})")
    if done.returncode != 0:
        raise LabError(f"{node}/{name}: {shlex.join(then)} failed (exit {done.returncode}):\n"
                       f"{done.stdout.strip()}")  # fmt: skip


def restarts_then(lab: Lab, node: str, started: Sequence[str]) -> list[str]:
    """After some of NODE's daemons (STARTED) were started again while others ran on: the
    running ones' `then` commands, run again (FRR's `vtysh -b` in watchfrr's record loads
    frr.conf into a zebra or ospfd restarted under a watchfrr that kept running); returns
    the names whose command ran."""
    if not started:
        return []
    ran = []
    for name, record in _records(lab, node).items():
        if name not in started and record.get("then"):
            run_then(lab, node, name, list(record["then"]))
            ran.append(name)
    return ran


def answers(path: str) -> bool:
    """Something accepts connections on the Unix socket at PATH (a socket file alone may
    be what a stopped daemon left behind)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(path)
        except OSError:
            return False
    return True


def wait_until(lab: Lab, ready: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `ready` until it holds; LabError naming a daemon of the lab that exited (with
    its log tail) or, after `timeout` seconds, saying `what` did not happen."""
    deadline = time.monotonic() + timeout
    while not ready():
        crashed = lab.daemon_failures()
        if crashed:
            label, tail = crashed[0]
            raise LabError(f"{label} exited; last log lines:\n{tail}")
        if time.monotonic() > deadline:
            raise LabError(f"{what} after {timeout:g} s")
        time.sleep(0.05)


def recorded(lab: Lab, node: str) -> dict[str, list[str]]:
    """The daemons start() ran in NODE: name → command line."""
    return {name: record["argv"] for name, record in _records(lab, node).items()}


def _records(lab: Lab, node: str) -> dict[str, dict[str, list[str]]]:
    """daemons.json: name → {"argv": command line, "needs": sockets}; a lab built before
    `needs` kept name → command line."""
    try:
        with open(os.path.join(lab.node_dir(node), DAEMONS_FILE)) as fh:
            data: dict[str, Any] = json.load(fh)
    except FileNotFoundError:
        return {}
    return {
        name: record if isinstance(record, dict) else {"argv": record, "needs": []}
        for name, record in data.items()
    }


def processes(lab: Lab, node: str | None = None) -> list[ObjectRecord]:
    """The ledger's records of the daemons start() ran in the lab (in one node), running or
    not; other processes of the lab (a measurement's iperf3 server, say) are not among them."""
    daemons: dict[str, set[str]] = {}
    out = []
    for o in lab.ledger.objects(lab.name, "process"):
        if o.node is None or (node is not None and o.node != node):
            continue
        if o.node not in daemons:
            daemons[o.node] = set(recorded(lab, o.node))
        if daemon_name(lab, o) in daemons[o.node]:
            out.append(o)
    return out


def daemon_name(lab: Lab, obj: ObjectRecord) -> str:
    """`bird` from the record label `lab/node/bird`."""
    return obj.name.removeprefix(f"{lab.name}/{obj.node}/")


def running(lab: Lab, node: str) -> dict[str, int]:
    """name → PID of the daemons of NODE that are alive."""
    return {
        daemon_name(lab, o): o.pid
        for o in processes(lab, node)
        if o.pid and process_alive(o.pid, o.starttime)
    }


def stopped_switches(lab: Lab) -> frozenset[str]:
    """Switch nodes that forward in their daemons (Open vSwitch's userspace datapath) of
    which one recorded is not running: such a switch forwards nothing, its links up."""
    return frozenset(
        node.name
        for node in lab.plan.nodes.values()
        if node.kind == "switch"
        and (known := recorded(lab, node.name))
        and set(known) - set(running(lab, node.name))
    )


def stop(
    lab: Lab, node: str | None = None, reason: str = "stopped", names: set[str] | None = None
) -> list[str]:
    """End the daemons of the lab (or of one node; or only those called one of `names`)
    gently, all at once, and drop their records (dead ones too: stopped on purpose is not
    crashed); returns `node/name` of those that were running."""
    objs = processes(lab, node)
    if names is not None:
        objs = [o for o in objs if daemon_name(lab, o) in names]
    victims = {o.pid: o.starttime for o in objs if o.pid and process_alive(o.pid, o.starttime)}
    end_processes(victims, STOP_GRACE)
    labels = []
    for o in objs:
        if o.node is not None and o.pid in victims:
            _note(lab, o.node, daemon_name(lab, o), f"{reason} (pid {o.pid})")
            labels.append(o.name.removeprefix(f"{lab.name}/"))
        lab.ledger.forget_object(o.id)
    return labels


def _note(lab: Lab, node: str, name: str, what: str) -> None:
    """A line of netrig's own in the daemon's log, so restarts and stops show there."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with open(os.path.join(lab.node_dir(node), f"{name}.log"), "a") as fh:
        fh.write(f"# netrig {stamp}: {name} {what}\n")


# ------------------------------------------------------------------ routes


@dataclass(frozen=True, order=True)
class Route:
    family: int  # 4 or 6
    dst: int  # network address as an integer
    plen: int
    table: int
    protocol: int  # rtm_protocol: 2 kernel, 4 static (batmand), 12 bird, 42 babel
    nexthop: bytes = b""  # gateway, interface and multipath attributes, as the kernel sent them


def dump_routes(lab: Lab, nodes: list[str]) -> dict[str, list[Route]]:
    """Every unicast route of every table of each node, from one worker thread."""

    def work() -> dict[str, list[Route]]:
        out: dict[str, list[Route]] = {}
        for node in nodes:
            with netns.entered(lab.ns(node)), nlwire.RtnlSocket() as sock:
                payloads = nlwire.dump_routes(sock)
            out[node] = [r for payload in payloads if (r := _route(payload))]
        return out

    return netns.run_in_thread(work)


def _route(payload: bytes) -> Route | None:
    family, plen, _src, _tos, table, proto, _scope, rtype, _flags = nlwire.route_header(payload)
    if rtype != RTN_UNICAST or family not in (socket.AF_INET, socket.AF_INET6):
        return None
    attrs = nlwire.route_attrs(payload)
    if RTA_TABLE in attrs:
        table = struct.unpack("=I", attrs[RTA_TABLE])[0]
    dst = int.from_bytes(attrs[RTA_DST], "big") if RTA_DST in attrs else 0
    hop = b"".join(attrs.get(k, b"") for k in (RTA_GATEWAY, RTA_OIF, RTA_MULTIPATH))
    return Route(4 if family == socket.AF_INET else 6, dst, plen, table, proto, hop)


def protocol_route(route: Route) -> bool:
    """A route a routing protocol put there: not connected, not a default route."""
    return route.protocol != RTPROT_KERNEL and route.plen > 0


class Reachability:
    """Which (source, target, address) pairs still lack a route: the convergence test.

    Targets are the addresses `up`'s ping check uses (each node's loopback, else its first
    address), so "converged" means the check that follows can pass. A route counts when
    `accept(route)` says it is the protocol's own (by default: any non-connected one).

    Having a route is not having the best one: babeld, for one, keeps moving routes to
    shorter paths for tens of seconds. `settled(seconds)` also asks that none of the
    protocol's routes (next hops included) changed for that long.
    """

    def __init__(self, lab: Lab, accept: Callable[[Route], bool] = protocol_route) -> None:
        self.lab = lab
        self.accept = accept
        plan = lab.plan
        self.nodes = [n.name for n in plan.hosts() if n.ifaces]
        self.targets: dict[str, list[tuple[int, int, str]]] = {}  # node → (family, int, text)
        for name in self.nodes:
            node = plan.node(name)
            for family in (4, 6):
                if node.addresses(family):
                    addr = plan.addr(name, family)
                    self.targets.setdefault(name, []).append((family, int(ip_address(addr)), addr))
        self.last: list[tuple[str, str, str]] = []
        self.fingerprint: int | None = None
        self.changed_at = time.monotonic()  # when the protocol's routes last changed
        self.unsettled = False

    def missing(self) -> list[tuple[str, str, str]]:
        routes = dump_routes(self.lab, self.nodes)
        ours = {node: sorted(r for r in routes[node] if self.accept(r)) for node in self.nodes}
        fingerprint = hash(tuple((node, tuple(rs)) for node, rs in ours.items()))
        if fingerprint != self.fingerprint:
            self.fingerprint, self.changed_at = fingerprint, time.monotonic()
        out = []
        for src in self.nodes:
            # per family and prefix length, the set of routed network addresses
            have: dict[tuple[int, int], set[int]] = {}
            for r in ours[src]:
                have.setdefault((r.family, r.plen), set()).add(r.dst)
            for dst in self.nodes:
                if dst == src:
                    continue
                for family, value, text in self.targets.get(dst, []):
                    bits = 32 if family == 4 else 128
                    if not any(
                        (value >> (bits - plen)) << (bits - plen) in nets
                        for (fam, plen), nets in have.items()
                        if fam == family
                    ):
                        out.append((src, dst, text))
        self.last = out
        return out

    def settled(self, seconds: float) -> bool:
        """Every target routed and no route of the protocol changed for `seconds`, as far
        as the polls so far saw (poll well within the window for it to mean something)."""
        if self.missing():
            return False
        self.unsettled = time.monotonic() - self.changed_at < seconds
        return not self.unsettled

    def describe(self, limit: int = 6) -> str:
        """`no route for n1→n4 (198.18.0.4), … and 7 more` for the last check."""
        if not self.last:
            return "routes still changing" if self.unsettled else ""
        shown = ", ".join(f"{s}→{d} ({a})" for s, d, a in self.last[:limit])
        more = f" and {len(self.last) - limit} more" if len(self.last) > limit else ""
        return f"no route for {shown}{more}"
