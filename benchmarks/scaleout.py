"""Does netrig scale out? A sweep on 3 hosts, a big ring on 4, and what a tunnel costs.

1. 12 one-second iperf3 runs (2 sweep points × 6, capped at 200 Mbit/s so that three hosts
sharing this machine's cores do not slow each other's runs) are run once with `netrig
run` on this host, the by-hand way, and once with `netrig run --cluster` on a simulated
cluster of 3 hosts (`netrig cluster local up --hosts 3`, started before the clock and ended
after). Printed: both wall times and their ratio (goal: <= 0.4, i.e. close to 1/3 plus
the cost of building one lab per host).
2. A ring of 2,000 nodes (--quick: 400) placed on 4 simulated hosts: `netrig up --cluster`
   wall time, Python start-up included (goal: <= 30 s), with every tunnel's two ends and 8
   sampled pairs on different hosts pinging each other before it returns; against
   `netrig up` of the same ring on this one host.
3. iperf3 between the two nodes of a pair, once over a veth (one host) and once with the
   pair placed on 2 hosts (the link a VXLAN tunnel over the underlay): the tunnel's cost as
   a throughput ratio (same machine and cores, so this is the encapsulation's CPU cost).

    python benchmarks/scaleout.py [--quick] [--hosts 3] [--repeat 6]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

GOAL = 0.4


def netrig(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "netrig", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"netrig {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done


def experiment(folder: str, name: str, repeat: int) -> str:
    path = os.path.join(folder, f"{name}.yaml")
    with open(path, "w") as fh:
        fh.write(
            f"name: {name}\n"
            "topology: {kind: chain, nodes: 3}\n"
            "measure:\n"
            "  - iperf3: {client: n1, server: \"n{1 + hops}\", duration: 1, bitrate: 200M}\n"
            "vary: {hops: [1, 2]}\n"
            f"repeat: {repeat}\n"
            "order: interleaved\n"
        )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="(the same small measurement)")
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=6)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("scaleout.py: run as root (netrig creates network namespaces)")
    tag = f"so{os.getpid() % 100000}"
    with tempfile.TemporaryDirectory() as folder:
        # the plans `netrig up` remembers (and its namespace hints) go with the folder
        os.environ["NETRIG_PLAN_CACHE"] = os.path.join(folder, "plans")
        path = experiment(folder, tag, args.repeat)
        runs = 2 * args.repeat
        start, began = time.perf_counter(), time.time()
        netrig("run", path, "--db", os.path.join(folder, "local.db"), "-q")
        local = time.perf_counter() - start
        local_times = (began, time.time())

        address = netrig("cluster", "local", "up", "--hosts", str(args.hosts), "--name",
                         tag).stdout.strip().splitlines()[-1]
        try:
            start, began = time.perf_counter(), time.time()
            netrig("run", path, "--db", os.path.join(folder, "cluster.db"), "-q",
                   "--cluster", address)
            spread = time.perf_counter() - start
            spread_times = (began, time.time())
        finally:
            netrig("cluster", "local", "down", "--name", tag)
        ratio = spread / local
        print(f"{runs} one-second runs: locally {local:.1f} s, on {args.hosts} simulated "
              f"hosts {spread:.1f} s")
        print(f"wall ratio cluster/local: {ratio:.2f} (goal <= {GOAL}: "
              f"{'met' if ratio <= GOAL else 'NOT met'})")
        print("  where the time goes, locally: "
              + timeline(os.path.join(folder, "local.db"), *local_times))
        print("  on the cluster: " + timeline(os.path.join(folder, "cluster.db"), *spread_times))
        ring_and_tunnel(folder, tag, 400 if args.quick else 2000, 2 if args.quick else 5)


def timeline(db: str, began: float, ended: float) -> str:
    """A sweep's wall time split: before the first run (start-up, connecting, the first lab
    build), the runs (per host: back to back or with gaps between them), and after the last
    (releasing the labs, exit)."""
    import itertools
    import sqlite3
    from collections import defaultdict
    from datetime import datetime

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT COALESCE(host, ''), started, ended FROM runs").fetchall()
    per_host: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for host, started, stopped in rows:
        per_host[host].append((datetime.fromisoformat(started).timestamp(),
                               datetime.fromisoformat(stopped).timestamp()))
    gaps, durations = [], []
    for runs in per_host.values():
        runs.sort()
        durations += [e - s for s, e in runs]
        gaps += [b[0] - a[1] for a, b in itertools.pairwise(runs)]
    first = min(r[0][0] for r in per_host.values())
    last = max(r[-1][1] for r in per_host.values())
    gap = 1000 * sum(gaps) / len(gaps) if gaps else 0.0
    return (f"{first - began:.2f} s before the first run, {len(durations) // len(per_host)} "
            f"runs per host of {sum(durations) / len(durations):.3f} s with {gap:.0f} ms "
            f"between runs, {ended - last:.2f} s after the last")


def ring_and_tunnel(folder: str, tag: str, nodes: int, seconds: int) -> None:
    ring = os.path.join(folder, "ring.yaml")
    with open(ring, "w") as fh:
        fh.write(f"name: {tag}r\ntopology: {{kind: ring, nodes: {nodes}}}\n"
                 "placement: {hosts: 4}\ncheck: {reachability: sample}\n")
    start = time.perf_counter()
    netrig("up", ring, "-q")
    local = time.perf_counter() - start
    netrig("down", f"{tag}r")
    pair = os.path.join(folder, "pair.yaml")
    with open(pair, "w") as fh:
        fh.write(f"name: {tag}p\ntopology: {{kind: pair}}\nplacement: {{hosts: 2}}\n")
    veth = iperf3(pair, f"{tag}p", seconds, None)
    address = netrig("cluster", "local", "up", "--hosts", "4", "--name", tag
                     ).stdout.strip().splitlines()[-1]
    try:
        start = time.perf_counter()
        up = netrig("up", ring, "--cluster", address)
        spread = time.perf_counter() - start
        netrig("down", f"{tag}r", "--cluster", address)
        vxlan = iperf3(pair, f"{tag}p", seconds, address)
    finally:
        netrig("cluster", "local", "down", "--name", tag)
    said = " ".join(up.stdout.split())
    after_plan = float(said.split(" is up in ", 1)[1].split(" s ", 1)[0])
    print(f"{nodes}-node ring: up on 4 simulated hosts in {spread:.1f} s (goal <= 30 s: "
          f"{'met' if spread <= 30 else 'NOT met'}), on one host {local:.1f} s; "
          f"{said.split(';', 1)[1].strip()}")
    print(f"  where the time goes: {spread - after_plan:.1f} s start-up and planning on the "
          f"client (routes for the whole ring), {after_plan:.1f} s spreading it (parts shipped,"
          " built side by side, tunnels, pings across)")
    print(f"iperf3 {seconds} s across the link: veth {veth / 1e9:.2f} Gbit/s, VXLAN tunnel "
          f"{vxlan / 1e9:.2f} Gbit/s (ratio tunnel/veth {vxlan / veth:.2f})")


def iperf3(lab_file: str, lab: str, seconds: int, cluster: str | None) -> float:
    """bit/s from n1 to n2 of the pair (on one host, or placed on 2 cluster hosts)."""
    import json

    where = ["--cluster", cluster] if cluster else []
    netrig("up", lab_file, "-q", *where)
    try:
        sys.path.insert(0, ROOT)
        from netrig.rig import Lab

        target = Lab.from_file(lab_file).plan.addr("n2")
        netrig("exec", lab, "n2", *where, "--", "iperf3", "-s", "-1", "-D")
        time.sleep(0.5)
        done = netrig("exec", lab, "n1", *where, "--", "iperf3", "-c", target, "-t",
                      str(seconds), "-J")
        return float(json.loads(done.stdout)["end"]["sum_received"]["bits_per_second"])
    finally:
        netrig("down", lab, *where)


if __name__ == "__main__":
    main()
