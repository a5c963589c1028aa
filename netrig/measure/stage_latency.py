"""stage_latency: one-way latency per packet from XDP ingress on the receiver to its socket.

    - stage_latency: {sender: n1, receiver: n2, count: 1000, interval: 1ms}

Seed 002's measurement. The receiver node runs `netrig-xdp stamp-recv` (netrig/native/):
it attaches xdp_stamp.bpf.c to the receiving interface, which stores bpf_ktime_get_ns() per
packet keyed by the sequence number in the UDP payload, and receives on a UDP socket, taking
CLOCK_MONOTONIC (the same clock) as recv() returns. The sender node runs `netrig-xdp send`,
which paces `count` packets `interval` apart. latency = socket time − XDP time, in µs, one
sample per packet that reached the socket (t = its send time); a packet that did not is
counted in `lost`, never stored as a zero.

If the interface already has an XDP program (a `firewall: {engine: xdp}`), the stamp program
is attached in its place with an atomic replace and calls it by tail call, and the old program
is put back afterwards: the stamp is always taken before any XDP filter, so a packet the
filter drops still has a stamp (`stamped_dropped`). Why not libxdp's dispatcher: it keeps its
state pinned in bpffs, which each command in a node sees afresh (private mount namespace).

The stamp attaches in native (driver) mode, or in skb mode when the interface's program is
there in skb mode. Native XDP on the receiving veth needs nothing on the peer: attaching a
program turns on the veth's NAPI, so the peer's packets pass through it (checked by the
tests: every packet is stamped); a program on the peer (or GRO) is needed only for packets
redirected into a veth by XDP, which netrig does not do.

`wait: poll` (default) sleeps in poll() as a normal server would, so each latency includes
one wake-up; `wait: spin` busy-polls the socket and leaves the wake-up out (about 1–2 µs less
on an idle machine), but on a busy one the scheduler then runs the spinning receiver late
and medians grow by orders of magnitude (5 ms against 11 µs here, 2 CPUs, load 6).
"""

from __future__ import annotations

import select
import subprocess
from typing import Any, ClassVar, Literal

from pydantic import Field

from netrig.base.sample import MeasurementFailed, Sample
from netrig.lab.runtime import LabRuntime as Lab
from netrig.measure import (
    AddressChoice,
    KeyPath,
    Measurement,
    MeasureOptions,
    Result,
    end_process,
    node_problems,
    read_spool,
    register,
    spool,
    tail,
    target_address,
)
from netrig.model.models import IfName, NodeName, Seconds
from netrig.native import compile as native_compile
from netrig.plan.firewall import VETH_XDP_MAX_MTU, FirewallPlan
from netrig.plan.model import LabPlan

READY_TIMEOUT = 5.0  # seconds for the receiver to attach and bind
DRAIN = 0.5  # seconds after the sender finished for the last packets to arrive
MAX_COUNT = 65536  # stamp slots in the BPF map


class StageLatencyOptions(MeasureOptions):
    sender: NodeName = Field(description="node that sends the UDP packets")
    receiver: NodeName = Field(description="node whose XDP ingress and socket are timed")
    iface: IfName | None = Field(
        None, description="receiving interface (default: the one the sender's packets arrive on)"
    )
    count: int = Field(1000, ge=1, le=MAX_COUNT, description="packets to send")
    interval: Seconds = Field(0.001, description="seconds between packets")
    size: int = Field(64, ge=4, le=1400, description="UDP payload bytes")
    port: int = Field(9000, ge=1024, le=65535, description="UDP port of the receiver")
    family: Literal[4, 6] = Field(4, description="IPv4 or IPv6 addresses")
    address: AddressChoice = Field("auto", description="receiver address: loopback, link, auto")
    wait: Literal["poll", "spin"] = Field(
        "poll", description="receiver sleeps in poll() or busy-polls (quiet machines only)"
    )


@register
class StageLatency(Measurement[StageLatencyOptions]):
    name = "stage_latency"
    summary = "per-packet latency from XDP ingress to the user-space socket (µs)"
    Options = StageLatencyOptions
    summary_metrics = ("latency_min", "latency_median", "latency_p99", "lost")

    programs: ClassVar[dict[str, str]] = {"clang": "clang"}  # builds netrig-xdp and the BPF program at first use

    def check(self, options: StageLatencyOptions, plan: LabPlan) -> list[tuple[KeyPath, str]]:
        o = options
        problems = node_problems(plan, [(("sender",), o.sender), (("receiver",), o.receiver)])
        if problems:
            return problems
        if o.sender == o.receiver:
            return [(("receiver",), "sender and receiver are the same node")]
        try:
            name = receiving_iface(plan, o)
        except KeyError as exc:
            return [(("iface",), str(exc.args[0]))]
        node = plan.node(o.receiver)
        iface = node.iface(name)
        mtu = plan.links[iface.link].mtu or 1500
        fw = FirewallPlan.from_dict(node.firewall) if node.firewall else None
        skb = fw is not None and fw.engine == "xdp" and fw.xdp_mode == "skb"  # (see above)
        if mtu > VETH_XDP_MAX_MTU and not skb:  # "the XDP receiver did not start", at run time
            return [(("receiver",), (
                f"{o.receiver}:{name} has an MTU of {mtu}; the XDP stamp attaches in native "
                f"mode, which a veth takes up to MTU {VETH_XDP_MAX_MTU}: lower the link's mtu"))]
        return []

    def timeout(self, options: StageLatencyOptions) -> float:
        o = options
        return float(o.timeout or o.count * o.interval + READY_TIMEOUT + 10.0)

    def udp_arrives(self, options: StageLatencyOptions) -> list[tuple[str, int]]:
        return [(options.receiver, options.family)]

    def length(self, options: StageLatencyOptions) -> float:
        return options.count * options.interval

    def run(self, lab: Lab, options: StageLatencyOptions, timeout: float) -> Result:
        sent, got = exchange(lab, options, timeout)
        return samples(sent, {seq: (x, r) for seq, (x, r, _) in got.items()})


def exchange(
    lab: Lab, o: StageLatencyOptions, timeout: float
) -> tuple[dict[int, int], dict[int, tuple[int, int, int]]]:
    """Run receiver and sender once: (seq → send_ns, seq → (xdp_ns, recv_ns, recv_real_ns))."""

    try:
        helper, obj = native_compile.helper(), native_compile.bpf_object("xdp_stamp")
    except native_compile.BuildError as exc:
        raise MeasurementFailed(str(exc)) from None
    iface = receiving_iface(lab.plan, o)
    dst = target_address(lab.plan, o.sender, o.receiver, o.family, o.address)
    _undo_leftover(lab, o.receiver, iface, helper)
    argv = [helper, "stamp-recv", iface, str(o.port), str(o.count), obj]
    err = spool()
    rx = lab.popen(
        o.receiver,
        [*argv, "spin"] if o.wait == "spin" else argv,
        stdout=subprocess.PIPE,
        stderr=err,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        _wait_ready(rx, err)
        interval_us = str(max(int(o.interval * 1e6), 0))
        tx_argv = [helper, "send", dst, str(o.port), str(o.count), interval_us, str(o.size)]
        try:
            tx = lab.exec(o.sender, tx_argv, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise MeasurementFailed(f"the sender did not finish within {timeout:g} s") from None
        if tx.returncode != 0:
            raise MeasurementFailed("the sender failed", stderr=tail(tx.stderr))
        try:
            rx.wait(DRAIN)
        except subprocess.TimeoutExpired:
            rx.terminate()  # SIGTERM: it prints what it has and restores the interface
        out = rx.communicate(timeout=10.0)[0]
    finally:
        end_process(rx)
    if rx.returncode != 0:
        raise MeasurementFailed("the XDP receiver failed", stderr=tail(read_spool(err)))
    return parse_pairs(tx.stdout), parse_receiver(out)


def _undo_leftover(lab: Lab, node: str, iface: str, helper: str) -> None:
    """Remove a stamp program a killed receiver left on the interface (SIGKILL skips its
    restore) and put the node's XDP firewall back: the kernel empties a program array when
    its last user goes, so the leftover calls nothing and the firewall it replaced is gone."""

    shown = lab.exec(node, [helper, "filter-count", iface], capture_output=True).stdout
    if "prog netrig_stamp" not in shown:
        return
    lab.exec(node, ["ip", "link", "set", "dev", iface, "xdp", "off"], capture_output=True)
    planned = lab.plan.node(node).firewall
    fw = FirewallPlan.from_dict(planned) if planned else None
    if fw is not None and fw.engine == "xdp" and lab.catalog is not None:
        lab.catalog.firewall.lookup("xdp")().apply_iface(lab, node, fw, iface)


def receiving_iface(plan: LabPlan, o: StageLatencyOptions) -> str:
    """The receiver's interface to time: as given, its only one, or the one facing the sender."""
    node = plan.node(o.receiver)
    names = [i.name for i in node.ifaces]
    if o.iface is not None:
        if o.iface not in names:
            raise KeyError(f"{o.receiver} has no interface {o.iface!r} (it has {', '.join(names)})")
        return o.iface
    if len(names) == 1:
        return names[0]
    facing = [i.name for i in node.ifaces if i.peer == o.sender]
    if len(facing) == 1:
        return facing[0]
    raise KeyError(f"{o.receiver} has several interfaces ({', '.join(names)}); choose one: iface")


def _wait_ready(rx: subprocess.Popen[str], err: Any) -> None:
    assert rx.stdout is not None
    ready, _, _ = select.select([rx.stdout], [], [], READY_TIMEOUT)
    line = rx.stdout.readline() if ready else ""
    if line.strip() != "ready":
        end_process(rx)
        raise MeasurementFailed(
            "the XDP receiver did not start", stderr=tail(line + read_spool(err))
        )


def parse_pairs(text: str) -> dict[int, int]:
    """The sender's `seq send_ns` lines (0 = not sent)."""
    out = {}
    for line in text.splitlines():
        seq, ns = line.split()
        out[int(seq)] = int(ns)
    return out


def parse_triples(text: str) -> dict[int, tuple[int, int]]:
    """The receiver's `seq xdp_ns recv_ns recv_realtime_ns` lines as seq → (xdp_ns, recv_ns)
    (0 = no stamp / not received)."""
    return {seq: (xdp, recv) for seq, (xdp, recv, _) in parse_receiver(text).items()}


def parse_receiver(text: str) -> dict[int, tuple[int, int, int]]:
    """Every column of the receiver's lines: seq → (xdp_ns, recv_ns, recv_realtime_ns)."""
    out = {}
    for line in text.splitlines():
        if line.strip() == "ready":
            continue
        seq, xdp, recv, real = line.split()
        out[int(seq)] = (int(xdp), int(recv), int(real))
    return out


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ordered list (q in 0..100)."""
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def samples(sent: dict[int, int], got: dict[int, tuple[int, int]]) -> Result:
    """Per-packet latency samples and the summary; MeasurementFailed if none arrived."""
    start = min((ns for ns in sent.values() if ns), default=0)
    per_packet: list[Sample] = []
    stamped_dropped = unstamped = 0
    for seq, send_ns in sorted(sent.items()):
        xdp_ns, recv_ns = got.get(seq, (0, 0))
        if not send_ns:
            continue
        if recv_ns and xdp_ns:
            t = (send_ns - start) / 1e9
            per_packet.append(Sample("latency", (recv_ns - xdp_ns) / 1e3, "us", t=t))
        elif recv_ns:
            unstamped += 1
        elif xdp_ns:
            stamped_dropped += 1
    n_sent = sum(1 for ns in sent.values() if ns)
    received = sum(1 for seq, ns in sent.items() if ns and got.get(seq, (0, 0))[1])
    counts = [
        Sample("sent", n_sent, "packets"),
        Sample("received", received, "packets"),
        Sample("lost", n_sent - received, "packets"),
        Sample("stamped_dropped", stamped_dropped, "packets"),
        Sample("unstamped", unstamped, "packets"),
    ]
    if not per_packet:
        raise MeasurementFailed(
            f"no packet reached the socket with an XDP stamp ({n_sent} sent, "
            f"{received} received, {stamped_dropped} stamped but dropped)",
            counts,
        )
    values = sorted(s.value for s in per_packet)
    summary = [
        Sample("latency_min", values[0], "us"),
        Sample("latency_median", percentile(values, 50), "us"),
        Sample("latency_p99", percentile(values, 99), "us"),
        Sample("latency_mean", sum(values) / len(values), "us"),
        Sample("latency_max", values[-1], "us"),
    ]
    return [*per_packet, *summary, *counts]
