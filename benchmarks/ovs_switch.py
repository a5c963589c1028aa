"""What does an Open vSwitch switch node cost, and how fast does netrig set one up?

1. Data path: two hosts through (a) an OVS switch node on the userspace datapath (the only
   one this kernel allows), (b) a Linux-bridge switch node, (c) a direct veth pair.
   iperf3 TCP throughput and ping RTT, cases
   interleaved per repetition, medians, printed as ratios against the direct veth.
2. Set-up: a star of N hosts around an OVS switch with a dpid and STP off, until the first
   ping across it answers: netrig (`Lab.up`, reachability check included) against the
   by-hand way of seed 001's toolbelt (ip netns/link/addr, ovsdb-tool create, ovsdb-server
   and ovs-vswitchd --detach, then one ovs-vsctl per step: add-br with its datapath type, dpid,
   stp, each add-port), repetitions interleaved.

    python benchmarks/ovs_switch.py [--quick] [--reps N] [--duration S] [--hosts N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from netrig.lab import netns
from netrig.rig import Lab
from netrig.switch import ovs

CASES = ("ovs", "bridge", "veth")
LABELS = {
    "ovs": "OVS switch (userspace datapath)",
    "bridge": "Linux bridge switch",
    "veth": "direct veth pair",
}

BY_HAND = r"""
set -e
p=$1; d=$2; n=$3
ip netns add ${p}s
ip -n ${p}s link set lo up
for i in $(seq 1 $n); do
  ip netns add ${p}h$i
  ip -n ${p}h$i link set lo up
  ip link add eth0 netns ${p}h$i type veth peer name p$i netns ${p}s
  ip -n ${p}h$i addr add 198.18.7.$i/24 dev eth0
  ip -n ${p}h$i link set eth0 up
  ip -n ${p}s link set p$i up
done
export OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d
ovsdb-tool create $d/conf.db /usr/share/openvswitch/vswitch.ovsschema
ip netns exec ${p}s ovsdb-server $d/conf.db --remote=punix:$d/db.sock --pidfile --detach \
  --log-file
vsctl="ovs-vsctl --db=unix:$d/db.sock"
$vsctl --no-wait init -- set Open_vSwitch . other_config:userspace-tso-enable=true
ip netns exec ${p}s ovs-vswitchd unix:$d/db.sock --pidfile --detach --log-file
$vsctl add-br br0 -- set bridge br0 datapath_type=netdev
$vsctl set bridge br0 other_config:datapath-id=0000000000000001
$vsctl set bridge br0 stp_enable=false
for i in $(seq 1 $n); do $vsctl add-port br0 p$i; done
until ip netns exec ${p}h1 ping -c1 -W1 198.18.7.2 >/dev/null; do :; done
"""


def settle(count: int) -> None:
    """Deleted namespaces are freed after `ip netns del` returns: wait before timing more."""
    time.sleep(0.3 + count * 0.01)


def two_hosts(case: str, name: str) -> Lab:
    if case == "veth":
        spec: dict = {"name": name, "topology": {"kind": "pair"}}
    else:
        switch = {"name": "s1", "kind": "switch"}
        if case == "ovs":
            switch |= {"switch": "ovs", "dpid": "0000000000000001"}
        spec = {
            "name": name,
            "nodes": [{"name": "n1"}, {"name": "n2"}, switch],
            "links": [{"a": "n1", "b": "s1"}, {"a": "n2", "b": "s1"}],
        }
    lab = Lab.from_spec(spec)
    lab.up()
    return lab


def iperf3_gbps(lab: Lab, duration: float) -> float:
    server = lab.popen("n2", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        out = lab.exec(
            "n1",
            ["iperf3", "-c", lab.addr("n2"), "-t", str(duration), "--json"],
            capture_output=True,
            timeout=duration + 30,
        )
    finally:
        server.wait(timeout=10)
    data = json.loads(out.stdout)
    return data["end"]["sum_received"]["bits_per_second"] / 1e9


def ping_ms(lab: Lab, count: int) -> float:
    """Median of per-echo RTTs (ping -i 0.01)."""
    out = lab.exec(
        "n1",
        ["ping", "-n", "-c", str(count), "-i", "0.01", lab.addr("n2")],
        capture_output=True,
        timeout=count + 10,
    )
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", out.stdout)]
    return statistics.median(rtts)


def netrig_star(n: int, name: str) -> tuple[float, Lab]:
    start = time.perf_counter()
    lab = Lab.from_spec(
        {
            "name": name,
            "topology": {"kind": "star", "leaves": n},
            "nodes": [
                {"name": "n1", "kind": "switch", "switch": "ovs", "dpid": "0000000000000001"}
            ],
        }
    )
    lab.up()
    return time.perf_counter() - start, lab


def by_hand_star(n: int, prefix: str) -> float:
    run_dir = tempfile.mkdtemp(prefix="ovs-by-hand-")
    try:
        start = time.perf_counter()
        done = subprocess.run(["bash", "-c", BY_HAND, "by-hand", prefix, run_dir, str(n)],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"ovs_switch.py: the by-hand script failed:\n{done.stderr}")
        return elapsed
    finally:  # clean up by hand too (not timed): the daemons by their pid files, then netns
        for daemon in ("ovs-vswitchd", "ovsdb-server"):
            try:
                with open(os.path.join(run_dir, f"{daemon}.pid")) as fh:
                    pid = int(fh.read())
                os.kill(pid, 15)
                for _ in range(500):
                    if not os.path.exists(f"/proc/{pid}"):
                        break
                    time.sleep(0.01)
            except (OSError, ValueError):
                pass
        for ns in [f"{prefix}s", *(f"{prefix}h{i}" for i in range(1, n + 1))]:
            subprocess.run(["ip", "netns", "del", ns], check=False, stderr=subprocess.DEVNULL)
        shutil.rmtree(run_dir, ignore_errors=True)
        settle(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 s streams, one repetition (CI)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per iperf3 run")
    parser.add_argument("--hosts", type=int, default=0, help="hosts in the set-up star")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("ovs_switch.py: run as root")
    problem = ovs.missing_tools()
    if problem:
        sys.exit(f"ovs_switch.py: {problem}")
    reps = 1 if args.quick else args.reps
    duration = 1.0 if args.quick else args.duration
    pings = 20 if args.quick else 200
    hosts = args.hosts or (2 if args.quick else 8)
    tag = f"ob{os.getpid() % 10000}"
    netns.prepare_run_dir()

    gbps: dict[str, list[float]] = {c: [] for c in CASES}
    rtt: dict[str, list[float]] = {c: [] for c in CASES}
    for rep in range(reps):
        for k, case in enumerate(CASES):
            lab = two_hosts(case, f"{tag}{rep}{k}")
            try:
                gbps[case].append(iperf3_gbps(lab, duration))
                rtt[case].append(ping_ms(lab, pings))
            finally:
                lab.down()
            settle(3)
    base_g, base_r = statistics.median(gbps["veth"]), statistics.median(rtt["veth"])
    print(f"two hosts, iperf3 TCP {duration:g} s and {pings} pings (median of {reps}):")
    print(f"  {'':34} {'Gbit/s':>8} {'× veth':>7} {'RTT ms':>8} {'× veth':>7}")
    for case in CASES:
        g, r = statistics.median(gbps[case]), statistics.median(rtt[case])
        print(f"  {LABELS[case]:34} {g:8.2f} {g / base_g:7.3f} {r:8.3f} {r / base_r:7.2f}")
    g_ovs, g_br = statistics.median(gbps["ovs"]), statistics.median(gbps["bridge"])
    r_ovs, r_br = statistics.median(rtt["ovs"]), statistics.median(rtt["bridge"])
    print(
        f"  OVS userspace vs Linux bridge: throughput ×{g_ovs / g_br:.3f}, RTT ×{r_ovs / r_br:.2f}"
    )

    hand, ours = [], []
    for rep in range(reps):
        hand.append(by_hand_star(hosts, f"{tag}h{rep}"))
        elapsed, lab = netrig_star(hosts, f"{tag}s{rep}")
        ours.append(elapsed)
        lab.down()
        settle(hosts + 1)
    hand_med, ours_med = statistics.median(hand), statistics.median(ours)
    print(f"OVS switch with {hosts} hosts, set-up until a ping crosses it (median of {reps}):")
    print(f"  by hand (seed 001 toolbelt steps)  {hand_med:7.3f} s")
    print(
        f"  netrig (all pairs checked)         {ours_med:7.3f} s   → {hand_med / ours_med:.1f}x faster"
    )


if __name__ == "__main__":
    main()
