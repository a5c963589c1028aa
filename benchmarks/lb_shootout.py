#!/usr/bin/env python3
"""Seed 004's shootout in one lab: requests/s through each balancer, against going direct.

The lab of examples/seed004-lb-shootout.yaml (client, pen, haproxy, nginx and pen with
direct server return, in front of three nginx web servers, all on one switch). For each
balancer, and for the client asking one web server directly, netrig's wrk measurement runs
N times in interleaved order; printed: the median requests/s, and its ratio to the direct
figure (one backend, no balancer in the path). As a check that netrig's wrk measures what
wrk does, the direct case is also run by hand (`ip netns exec … wrk`), and the ratio of
the two medians printed (goal: 0.9–1.1). Nothing is asserted; figures depend on the machine.

    sudo python3 benchmarks/lb_shootout.py            # 50 connections, 3 runs of 3 s
    sudo python3 benchmarks/lb_shootout.py --quick    # CI smoke: 10 connections, 1 run of 1 s
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from netrig.base.sample import MeasurementFailed
from netrig.measure import get
from netrig.measure.parse_wrk import REPORT_LUA, parse_wrk
from netrig.rig import Lab

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "seed004-lb-shootout.yaml"
BALANCERS = ["pen", "haproxy", "nginx", "pen-dsr"]
EXPERIMENT_KEYS = ("measure", "vary", "params", "repeat", "order")


def lab_spec(name: str) -> dict:
    """The example's lab part, under a name of our own."""
    data = yaml.safe_load(EXAMPLE.read_text())
    return {**{k: v for k, v in data.items() if k not in EXPERIMENT_KEYS}, "name": name}


def netrig_wrk(lab: Lab, server: str, connections: int, duration: int) -> float | None:
    plugin = get("wrk")
    opts = plugin.Options.model_validate(
        {
            "client": "client",
            "server": server,
            "path": "/1k",
            "connections": connections,
            "duration": duration,
        }
    )
    try:
        samples = plugin.run(lab, opts, plugin.timeout(opts))
    except MeasurementFailed as exc:
        print(f"  {server}: failed: {exc.reason}", file=sys.stderr)
        return None
    return next(s.value for s in samples if s.metric == "requests_per_s")


def by_hand_wrk(lab: Lab, connections: int, duration: int) -> float:
    """What a user types: `ip netns exec NS wrk … http://web1/1k`."""
    script = Path(lab.node_dir("client")) / "bench.lua"
    script.write_text(REPORT_LUA)
    argv = ["ip", "netns", "exec", lab.ns("client"), "wrk", "-t1", f"-c{connections}"]
    argv += [f"-d{duration}s", "-s", str(script), f"http://{lab.addr('web1')}/1k"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return next(s.value for s in parse_wrk(done.stdout) if s.metric == "requests_per_s")


def median(values: list[float | None]) -> float | None:
    ok = [v for v in values if v is not None]
    return statistics.median(ok) if ok else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: a few seconds")
    parser.add_argument("--runs", type=int, help="runs per case (default 3, quick 1)")
    parser.add_argument("--connections", type=int, help="concurrency (default 50, quick 10)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    runs = args.runs or (1 if args.quick else 3)
    conns = args.connections or (10 if args.quick else 50)
    duration = 1 if args.quick else 3
    lab = Lab.from_spec(lab_spec(f"bench-lb{os.getpid() % 10000}"))
    lab.up()
    try:
        cases = ["web1", *BALANCERS]
        got: dict[str, list[float | None]] = {c: [] for c in cases}
        hand: list[float] = []
        for _ in range(runs):  # interleaved: drift hits every case alike
            for case in cases:
                got[case].append(netrig_wrk(lab, case, conns, duration))
            hand.append(by_hand_wrk(lab, conns, duration))
    finally:
        lab.down()
    direct = median(got["web1"])
    print(
        f"seed 004 shootout: wrk, {conns} connections, {runs} × {duration} s, GET /1k, "
        "3 nginx backends (1 worker each), balancers on one core"
    )
    print(f"  {'case':<16} {'req/s (median)':>15} {'vs direct':>10}")
    for case in cases:
        value = median(got[case])
        label = "direct → web1" if case == "web1" else case
        if value is None:
            print(f"  {label:<16} {'failed':>15} {'-':>10}")
            continue
        ratio = f"{value / direct:.2f}" if direct else "-"
        print(f"  {label:<16} {value:>15,.0f} {ratio:>10}")
    by_hand = statistics.median(hand)
    if direct:
        print(
            f"direct by hand (ip netns exec … wrk): {by_hand:,.0f} req/s; "
            f"netrig / by hand = {direct / by_hand:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
