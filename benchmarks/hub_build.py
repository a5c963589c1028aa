"""How fast is a lab with a hub built: a star of 1,000 leaves, hubs' rule on and off?

Every carrier that comes up in a namespace makes the kernel walk all of that namespace's
IPv6 routes (rt6_sync_up). A hub whose ports come up after its addresses and routes are in
(each leaf's batch brings its end up while the hub's table is full) is built in quadratic
time. netrig.lab.build.HUB_PORTS: a veth pair is born up at its end that is no hub's, and
hubs are configured after the other nodes. This benchmark builds the same star both ways
in one run, interleaved (the other way: HUB_PORTS set beyond any node's interfaces, so no
node counts as a hub: netrig's order before 29 Nov), through the Python API, and prints
netrig's own build figures (the configuration phase is what the rule changes) and their
ratio. The kernel's freeing of the namespaces of one build is waited for before the next.

    python benchmarks/hub_build.py            # 1,000 leaves, 3 builds each way
    python benchmarks/hub_build.py --quick    # 200 leaves, 1 build each way (CI smoke)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from setup_speed import live_namespaces, wait_freed

from netrig.lab import build
from netrig.rig.lab import Lab

OFF = 10**9  # HUB_PORTS beyond any node: no hubs, the order before


def build_once(path: str, hub_ports: int) -> tuple[float, float]:
    """(configuration, whole build) seconds of one build of the lab file, then down."""
    build.HUB_PORTS = hub_ports
    lab = Lab.from_file(path)
    try:
        timings = lab.up(check_reachability=False)
        return timings.config, timings.total
    finally:
        lab.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke: 200 leaves, 1 build")
    parser.add_argument("--leaves", type=int, default=None)
    parser.add_argument("--reps", type=int, default=None)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("hub_build.py builds labs: run it as root")
    leaves = args.leaves or (200 if args.quick else 1000)
    reps = args.reps or (1 if args.quick else 3)
    rule = build.HUB_PORTS
    times: dict[str, list[tuple[float, float]]] = {"hubs last": [], "before": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "star.yaml")
        name = f"hb{uuid.uuid4().hex[:6]}"
        Path(path).write_text(f"name: {name}\ntopology: {{kind: star, leaves: {leaves}}}\n")
        for rep in range(reps):
            order = [("hubs last", rule), ("before", OFF)]
            for way, ports in order if rep % 2 == 0 else order[::-1]:
                before = live_namespaces()
                times[way].append(build_once(path, ports))
                wait_freed(before)
            print(f"  … build {rep + 1}/{reps} each way done", file=sys.stderr)
    build.HUB_PORTS = rule
    print(f"a star of {leaves} leaves (hub n1: {leaves} ports), median of {reps} build(s):")
    for way, label in (("before", "no hubs (the order before)"), ("hubs last", "hubs' rule")):
        config = statistics.median(c for c, _ in times[way])
        total = statistics.median(t for _, t in times[way])
        print(f"  {label:28s} configuration {config:.3f} s, build {total:.3f} s")
    old = statistics.median(c for c, _ in times["before"])
    new = statistics.median(c for c, _ in times["hubs last"])
    old_total = statistics.median(t for _, t in times["before"])
    new_total = statistics.median(t for _, t in times["hubs last"])
    print(
        f"hubs' rule: configuration {old / new:.2f}x faster, the whole build "
        f"{old_total / new_total:.2f}x (the order before / the rule, same run)"
    )


if __name__ == "__main__":
    main()
