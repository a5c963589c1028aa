"""Have the lab's links settled? Carriers up, bridge ports forwarding, spanning tree done.

What `netrig up --no-check` waits for before the lab is used, and a link brought back up
before it is; the reachability check (netrig.lab.check) runs after it. Netlink in-process
only, so a lab that is not checked does not load the check's modules.
"""

from __future__ import annotations

import struct
import time

from netrig.lab import netns, nlwire
from netrig.plan.model import LabPlan

AF_BRIDGE = 7
IFLA_PROTINFO = 12
IFLA_BRPORT_STATE = 1
BR_STATE_LISTENING, BR_STATE_LEARNING, BR_STATE_FORWARDING = 1, 2, 3
IFF_UP = 0x1
IFF_RUNNING = 0x40  # operationally up: what a bridge acts on, a little after the carrier


def getlink(index: int) -> tuple[int, bytes]:
    """The RTM_GETLINK request of one interface, by index."""
    return nlwire.RTM_GETLINK, nlwire.ifinfo(index)


def running_ports(sock: nlwire.RtnlSocket, indexes: list[int]) -> set[int]:
    """Which of these interfaces are up and running. Asked one by one (in one round trip),
    not dumped: the kernel then applies a pending carrier change first (linkwatch_sync_dev),
    where a dump reports what its link watcher has got round to, up to a second late (a
    veth whose two ends share an ifindex is never urgent to it)."""
    return running_of(indexes, sock.request_each([getlink(i) for i in indexes]))


def running_of(indexes: list[int], answers: list[tuple[int, bytes] | None]) -> set[int]:
    """The interfaces whose RTM_GETLINK answer says up and running."""
    up = set()
    for index, answer in zip(indexes, answers, strict=True):
        if answer is not None:
            flags = struct.unpack_from("=BxHiI", answer[1])[3]
            if flags & IFF_UP and flags & IFF_RUNNING:
                up.add(index)
    return up


def wait_bridges(plan: LabPlan, timeout: float) -> list[str]:
    """Wait until no STP port is listening or learning; return the bridges still settling."""
    stp_nodes = [n for n in plan.nodes.values() if n.bridge and n.bridge.stp]
    deadline = time.monotonic() + timeout
    pending = [n.ns for n in stp_nodes]
    while pending and time.monotonic() < deadline:
        pending = [ns for ns in pending if _ports_settling(ns)]
        if pending:
            time.sleep(0.2)
    return pending


def _ports_settling(ns: str) -> bool:
    def dump() -> bool:
        with nlwire.RtnlSocket() as sock:
            body = nlwire.ifinfo(family=AF_BRIDGE)
            replies = sock.request(nlwire.RTM_GETLINK, nlwire.NLM_F_DUMP, body)
        for _mtype, payload in replies:
            attrs = nlwire.parse_attrs(payload, 16)
            info = attrs.get(IFLA_PROTINFO)
            if info:
                state = nlwire.parse_attrs(info).get(IFLA_BRPORT_STATE)
                if state and state[0] in (BR_STATE_LISTENING, BR_STATE_LEARNING):
                    return True
        return False

    return netns.in_netns(ns, dump)


def wait_carrier(
    plan: LabPlan, timeout: float, only: dict[str, set[str]] | None = None
) -> list[str]:
    """Wait until every link interface (or `only` these: node → interface names) is
    operationally up and every port of a bridge without STP forwards (the kernel reports
    a new veth's carrier a little later, and a bridge acts on it later still); return
    `node:iface` still not there. What a lab without a ping check waits for before it is
    used, and a link brought up again before it is."""
    waiting = {n.ns: {i.index: f"{n.name}:{i.name}" for i in n.ifaces
                      if only is None or i.name in only.get(n.name, ())}
               for n in plan.nodes.values() if n.ifaces and not n.shares}  # fmt: skip
    waiting = {ns: ports for ns, ports in waiting.items() if ports}
    bridged = {n.ns for n in plan.nodes.values() if n.bridge and not n.bridge.stp}
    deadline = time.monotonic() + timeout

    def poll() -> None:  # one thread visits every namespace
        while waiting:
            for ns in list(waiting):
                with netns.entered(ns):
                    ready = _ready_ports(ns in bridged, list(waiting[ns]))
                waiting[ns] = {i: label for i, label in waiting[ns].items() if i not in ready}
                if not waiting[ns]:
                    del waiting[ns]
            if not waiting or time.monotonic() > deadline:
                break
            time.sleep(0.02)

    netns.run_in_thread(poll)
    return [label for ports in waiting.values() for label in ports.values()]


def _ready_ports(bridged: bool, indexes: list[int]) -> set[int]:
    """Which of these interfaces of the calling thread's namespace are running (and, in a
    bridge's namespace, whose bridge port forwards). Asked by index, which applies a
    pending carrier change first (see running_ports)."""
    with nlwire.RtnlSocket() as sock:
        running = running_ports(sock, indexes)
        ports = sock.request(
            nlwire.RTM_GETLINK, nlwire.NLM_F_DUMP, nlwire.ifinfo(family=AF_BRIDGE)
        ) if bridged else []  # fmt: skip
    if not bridged:
        return running
    forwarding = set()
    for _mtype, payload in ports:
        index = struct.unpack_from("=BxHiI", payload)[2]
        info = nlwire.parse_attrs(payload, 16).get(IFLA_PROTINFO)
        state = nlwire.parse_attrs(info).get(IFLA_BRPORT_STATE) if info else None
        if state and state[0] == BR_STATE_FORWARDING:
            forwarding.add(index)
    return running & forwarding
