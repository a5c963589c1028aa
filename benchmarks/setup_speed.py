"""How fast does a lab come up, against the by-hand way, measured in the same run?

1. The same N-node ring (namespaces + veth + links up, no addresses): seed 000's bash loop
   (`ip netns add`, `ip link add … peer …`, `ip link set … netns …`, `ip -n … link set up`)
   against netrig, repetitions interleaved, medians compared.
2. A 100-node ring with addresses and full static routing: netrig's plan + build, the
   reachability check apart, and the `netrig up` command's wall time.
3. Teardown of 100 nodes; with --full also a 1000-node ring (up, down, peak memory).

Deleted namespaces are freed by the kernel after `ip netns del` returns and slow whatever
is built next, so every phase waits for that before the next one is timed.

    python benchmarks/setup_speed.py [--quick | --full] [--reps N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from netrig.lab import netns
from netrig.rig import Lab

BASH_RING = r"""
set -e
n=$1; p=$2
for i in $(seq 1 $n); do ip netns add $p$i; done
j=$n
ip link add dev e${j}a type veth peer name e${j}b
for i in $(seq 1 $((n-1))); do
  ip link add dev e${i}a type veth peer name e${i}b
  ip link set e${i}a netns $p$i
  ip link set e${j}b netns $p$i
  ip -n $p$i link set e${i}a up
  ip -n $p$i link set e${j}b up
  j=$i
done
ip link set e${n}a netns $p$n
ip link set e${j}b netns $p$n
ip -n $p$n link set e${n}a up
ip -n $p$n link set e${j}b up
"""


def settle(count: int) -> None:
    """Give the kernel time to free `count` deleted namespaces before the next timing."""
    time.sleep(0.3 + count * 0.004)


def bash_ring(n: int, prefix: str) -> float:
    start = time.perf_counter()
    subprocess.run(["bash", "-c", BASH_RING, "ring", str(n), prefix], check=True)
    elapsed = time.perf_counter() - start
    for i in range(1, n + 1):  # the by-hand way cleans up by hand too (not timed)
        subprocess.run(["ip", "netns", "del", f"{prefix}{i}"], check=False)
    settle(n)
    return elapsed


def netrig_ring(n: int, name: str, addresses: bool, check: bool = False) -> tuple[float, Lab]:
    """Plan and build in-process; without addresses it matches what the bash loop builds."""
    start = time.perf_counter()
    lab = Lab.from_spec(
        {
            "name": name,
            "topology": {"kind": "ring", "nodes": n},
            "routing": {"protocol": "static" if addresses else "none"},
        }
    )
    if not addresses:
        for node in lab.plan.nodes.values():
            node.loopbacks = []
            node.neighbors = []
            for iface in node.ifaces:
                iface.addrs = []
    lab.up(check_reachability=check)
    return time.perf_counter() - start, lab


def cli_up(n: int, name: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write(
            f"name: {name}\ntopology: {{kind: ring, nodes: {n}}}\nrouting: {{protocol: static}}\n"
        )
    try:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "netrig", "up", "-q", "--no-check", fh.name],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        elapsed = time.perf_counter() - start
        subprocess.run(
            [sys.executable, "-m", "netrig", "down", name], check=True, stdout=subprocess.DEVNULL
        )
        settle(n)
        return elapsed
    finally:
        os.unlink(fh.name)


def big_lab_in_subprocess(n: int, name: str) -> dict[str, float]:
    """A 1000-node lab in its own process, so its peak RSS is its own."""
    code = f"""
import json, resource, sys, time
sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r})
from netrig.rig import Lab
t = time.perf_counter()
lab = Lab.from_spec({{"name": {name!r}, "topology": {{"kind": "ring", "nodes": {n}}},
                     "routing": {{"protocol": "static"}}}})
lab.up(check_reachability=False)
up = time.perf_counter() - t
t = time.perf_counter()
lab.down()
down = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"up": up, "down": down, "rss_mb": rss, "routes": lab.plan.route_count()}}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, one repetition (CI smoke)"
    )
    parser.add_argument("--full", action="store_true", help="also the 1000-node ring")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("setup_speed.py: run as root")
    ring_n = 20 if args.quick else 100
    reps = 1 if args.quick else args.reps
    tag = f"b{os.getpid() % 10000}"
    netns.prepare_run_dir()

    bash_times, netrig_times = [], []
    for rep in range(reps):
        bash_times.append(bash_ring(ring_n, f"{tag}h{rep}x"))
        elapsed, lab = netrig_ring(ring_n, f"{tag}n{rep}", addresses=False)
        netrig_times.append(elapsed)
        lab.down()
        settle(ring_n)
    bash_med, netrig_med = statistics.median(bash_times), statistics.median(netrig_times)
    print(f"ring of {ring_n}, namespaces + veth + up (median of {reps}):")
    print(f"  bash loop (seed 000)   {bash_med:8.3f} s")
    print(f"  netrig                 {netrig_med:8.3f} s   → {bash_med / netrig_med:5.1f}x faster")

    routed = []
    check_times = []
    teardown_times = []
    for rep in range(reps):
        elapsed, lab = netrig_ring(100, f"{tag}r{rep}", addresses=True)
        routed.append(elapsed)
        from netrig.lab import check

        pairs = check.check_pairs(lab.plan, "all")
        result = check.ping_pairs(lab.plan, pairs, 30)
        check_times.append(result.seconds)
        start = time.perf_counter()
        lab.down()
        teardown_times.append(time.perf_counter() - start)
        settle(100)
    routes = lab.plan.route_count()
    routed_med = statistics.median(routed)
    print(f"ring of 100 with addresses and static routing ({routes} routes, median of {reps}):")
    print(
        f"  netrig plan + build    {routed_med:8.3f} s   (target <= 0.5 s; "
        f"{bash_med * 100 / ring_n / routed_med:5.1f}x faster than the bash loop without addresses)"
    )
    print(
        f"  all-pairs ping check   {statistics.median(check_times):8.3f} s   ({len(pairs)} echoes, v4+v6)"
    )
    print(
        f"  teardown               {statistics.median(teardown_times):8.3f} s   (target <= 0.3 s)"
    )
    print(
        f"  `netrig up` command    {cli_up(100, f'{tag}c'):8.3f} s   (wall, Python start-up included)"
    )

    if args.full:
        big = big_lab_in_subprocess(1000, f"{tag}k")
        print(f"ring of 1000 with addresses and static routing ({big['routes']} routes):")
        print(
            f"  up {big['up']:.2f} s (target <= 15 s), down {big['down']:.2f} s (target <= 3 s), "
            f"peak RSS {big['rss_mb']:.0f} MB (target <= 300 MB)"
        )


if __name__ == "__main__":
    main()
