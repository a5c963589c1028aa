#!/usr/bin/env python3
"""Seed 002: latency from XDP ingress to the socket against firewall rules, and vs tcpdump.

1. For each engine (iptables legacy, nftables, netrig's XDP filter) and number of filler
   rules, a pair lab with the firewall in the receiver runs stage_latency; prints the median
   of the runs' median latency and the runs' minimum, and both as a ratio against the same
   engine with 0 rules.
2. The by-hand way of the seed: a tcpdump in the receiver, its packet timestamps against the
   receiving program's wall-clock time, on the same packets as our XDP stamps. Prints both
   medians and spreads, what running tcpdump adds to every packet's latency, then the seed's
   finding: with an XDP filter dropping the sender, tcpdump captures nothing while every
   packet still gets an XDP stamp.
3. What our XDP programs cost per packet on their own (the kernel's BPF_PROG_TEST_RUN): the
   timestamp, and the filter with 0, 512 and 2000 rules.

Absolute times depend on the machine and its load; nothing here asserts them.

    sudo python3 benchmarks/firewall_latency.py            # 5 rule counts, 3 runs of 2000 packets
    sudo python3 benchmarks/firewall_latency.py --quick    # CI smoke: 0 and 512 rules, 1 run of 300
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from netrig.base.sample import MeasurementFailed, Sample
from netrig.measure import end_process, read_spool, spool
from netrig.measure.stage_latency import StageLatencyOptions, exchange, percentile, samples
from netrig.rig import Lab

TAG = f"{os.getpid() % 10000}"
ENGINES = ("iptables", "nftables", "xdp")


def make_lab(suffix: str, fw: dict[str, Any] | None) -> Lab:
    nodes = [{"name": "n2", "firewall": fw}] if fw else []
    spec = {"name": f"bfl{TAG}{suffix}", "topology": {"kind": "pair"}, "nodes": nodes}
    lab = Lab.from_spec(spec)
    lab.up(check_reachability=False)
    return lab


def options(count: int) -> StageLatencyOptions:
    return StageLatencyOptions(sender="n1", receiver="n2", count=count, interval=0.0005)


def summary(result: list[Any]) -> dict[str, float]:
    return {s.metric: s.value for s in result if isinstance(s, Sample) and s.t is None}


def sweep(rule_counts: list[int], reps: int, count: int) -> None:
    print(f"latency XDP ingress → socket, {reps} run(s) of {count} packets, pair lab (µs)")
    print(
        f"{'engine':<9} {'rules':>5} {'median':>8} {'min':>7} {'ratio median':>13} "
        f"{'ratio min':>10} {'lost':>5}"
    )
    for engine in ENGINES:
        base: tuple[float, float] | None = None
        for rules in rule_counts:
            lab = make_lab(f"{engine[0]}{rules}", {"engine": engine, "filler_rules": rules})
            try:
                runs = [
                    summary(samples(*_pairs(exchange(lab, options(count), 60.0))))
                    for _ in range(reps)
                ]
            finally:
                lab.down()
            med = statistics.median(r["latency_median"] for r in runs)
            low = min(r["latency_min"] for r in runs)
            lost = sum(r["lost"] for r in runs)
            if base is None:
                base = (med, low)
            print(
                f"{engine:<9} {rules:>5} {med:>8.2f} {low:>7.2f} {med / base[0]:>12.2f}× "
                f"{low / base[1]:>9.2f}× {lost:>5.0f}"
            )


def _pairs(raw: tuple[dict[int, int], dict[int, tuple[int, int, int]]]) -> tuple[Any, Any]:
    sent, got = raw
    return sent, {seq: (x, r) for seq, (x, r, _) in got.items()}


def read_pcap(path: Path) -> dict[int, int]:
    """seq → capture time (ns, wall clock) from a nanosecond pcap of our UDP packets."""
    data = path.read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    order = "<" if magic in (0xA1B23C4D, 0xA1B2C3D4) else ">"
    nano = struct.unpack(order + "I", data[:4])[0] == 0xA1B23C4D
    out, pos = {}, 24
    while pos + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(order + "IIII", data[pos : pos + 16])
        pkt = data[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
        if len(pkt) >= 46:
            seq = struct.unpack(">I", pkt[42:46])[0]
            out[seq] = sec * 1_000_000_000 + (frac if nano else frac * 1000)
    return out


def with_tcpdump(lab: Lab, count: int) -> tuple[dict[int, int], Any, Any]:
    pcap = Path(lab.node_dir("n2")) / "capture.pcap"
    err = spool()
    argv = [
        "tcpdump",
        "-i",
        "eth0",
        "-nn",
        "-U",
        "--immediate-mode",
        "-Z",
        "root",
        "--time-stamp-precision=nano",
        "-w",
        str(pcap),
        "udp",
        "port",
        "9000",
    ]
    dump = lab.popen("n2", argv, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 5
    while "listening on" not in read_spool(err) and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        sent, got = exchange(lab, options(count), 60.0)
    finally:
        time.sleep(0.2)
        end_process(dump)
    return read_pcap(pcap), sent, got


def by_hand(count: int) -> None:
    lab = make_lab("h", None)
    try:
        _sent, alone = exchange(lab, options(count), 60.0)  # no tcpdump: what its tap costs
        captured, _sent, got = with_tcpdump(lab, count)
    finally:
        lab.down()
    without = sorted((r - x) / 1e3 for x, r, _ in alone.values() if x and r)
    ours = sorted((r - x) / 1e3 for x, r, _ in got.values() if x and r)
    hand = sorted(
        (real - captured[seq]) / 1e3 for seq, (_x, r, real) in got.items() if r and seq in captured
    )
    print(f"\nthe same {count} packets, no firewall, tcpdump running in the receiver (µs)")
    print(f"{'stamp':<28} {'packets':>7} {'median':>8} {'p10':>7} {'p90':>7}")
    for name, vals in (("XDP stamp → socket (ours)", ours), ("tcpdump → socket (by hand)", hand)):
        if vals:
            print(
                f"{name:<28} {len(vals):>7} {percentile(vals, 50):>8.2f} "
                f"{percentile(vals, 10):>7.2f} {percentile(vals, 90):>7.2f}"
            )
    if ours and hand:
        print(
            f"ratio of medians, by hand / ours: {percentile(hand, 50) / percentile(ours, 50):.2f}"
            " (tcpdump stamps later in the stack, and on another clock: wall time)"
        )
    if ours and without:
        print(
            f"cost of the by-hand way: XDP → socket median {percentile(without, 50):.2f} µs "
            f"without tcpdump, {percentile(ours, 50):.2f} µs with it "
            f"({percentile(ours, 50) / percentile(without, 50):.2f}×)"
        )
    lab = make_lab("d", {"engine": "xdp", "rules": [{"src": "n1"}]})
    try:
        captured, sent, got = with_tcpdump(lab, count)
    except MeasurementFailed as exc:
        print(f"filtered run failed: {exc}")
        return
    finally:
        lab.down()
    stamped = sum(1 for x, r, _ in got.values() if x and not r)
    print(
        f"\nXDP filter dropping the sender: {len(sent)} sent, {stamped} stamped by XDP "
        f"before the filter, {len(captured)} seen by tcpdump"
    )


def program_costs(repeat: int) -> None:
    """What the BPF programs themselves cost per packet, by BPF_PROG_TEST_RUN (no load noise)."""
    from netrig.native import compile as native_compile

    print(f"\nper-packet cost of the BPF programs alone (BPF_PROG_TEST_RUN, {repeat} runs)")
    for name, rules in (
        ("xdp_stamp", 0),
        ("xdp_filter", 0),
        ("xdp_filter", 512),
        ("xdp_filter", 2000),
    ):
        argv = [native_compile.helper(), "test-run", native_compile.bpf_object(name), str(repeat), str(rules)]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        ns = out.split()[1]
        label = f"{name} ({rules} rules)" if name == "xdp_filter" else f"{name} (our timestamp)"
        print(f"{label:<28} {ns:>5} ns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="0 and 512 rules, 1 short run")
    parser.add_argument("--reps", type=int, default=3, help="runs per point (default 3)")
    parser.add_argument("--count", type=int, default=2000, help="packets per run")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("firewall_latency: run as root (namespaces)")
    rule_counts = [0, 512] if args.quick else [0, 32, 128, 512, 2000]
    reps = 1 if args.quick else args.reps
    count = 300 if args.quick else args.count
    sweep(rule_counts, reps, count)
    by_hand(count)
    program_costs(100_000 if args.quick else 1_000_000)


if __name__ == "__main__":
    main()
