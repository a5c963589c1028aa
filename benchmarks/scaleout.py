"""Does a sweep get faster on more hosts? The same sweep locally and on a cluster.

12 one-second iperf3 runs (2 sweep points × 6, capped at 200 Mbit/s so that three hosts
sharing this machine's cores do not slow each other's runs) are run once with `netrig
run` on this host, the by-hand way, and once with `netrig run --cluster` on a simulated
cluster of 3 hosts (`netrig cluster local up --hosts 3`, started before the clock and ended
after). Printed: both wall times and their ratio (goal: <= 0.4, i.e. close to 1/3 plus
the cost of building one lab per host).

    python benchmarks/scaleout.py [--quick] [--hosts 3] [--repeat 6]

--quick is the same measurement (it is already small); --repeat changes the runs per point.
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
        path = experiment(folder, tag, args.repeat)
        runs = 2 * args.repeat
        start = time.perf_counter()
        netrig("run", path, "--db", os.path.join(folder, "local.db"), "-q")
        local = time.perf_counter() - start

        address = netrig("cluster", "local", "up", "--hosts", str(args.hosts), "--name",
                         tag).stdout.strip().splitlines()[-1]
        try:
            start = time.perf_counter()
            netrig("run", path, "--db", os.path.join(folder, "cluster.db"), "-q",
                   "--cluster", address)
            spread = time.perf_counter() - start
        finally:
            netrig("cluster", "local", "down", "--name", tag)
    ratio = spread / local
    print(f"{runs} one-second runs: locally {local:.1f} s, on {args.hosts} simulated hosts "
          f"{spread:.1f} s")
    print(f"wall ratio cluster/local: {ratio:.2f} (goal <= {GOAL}: "
          f"{'met' if ratio <= GOAL else 'NOT met'})")


if __name__ == "__main__":
    main()
