"""Does starting a process in a lab node cost more now that no preexec_fn is used?

netrig used to enter a node with subprocess's preexec_fn (Python code between fork and exec:
unsafe when threads run, and it forces fork instead of vfork). Now a small exec helper
(netrig-nsexec, C) enters the node and execs the program. This starts `true` in a node of a
2-node lab N times each way, alternating, in the same run, single-threaded and with 4 threads
starting processes at once (the runner's case), and prints the median time per start and the
ratio new/old (target <= 1.0; no absolute time is asserted). The old way is the by-hand one
below, as it was in netrig/lab/run.py.

    python benchmarks/process_start.py           # 400 starts per way
    python benchmarks/process_start.py --quick   # 60, a CI smoke run
    python benchmarks/process_start.py --check   # exit 1 if a ratio is above the target
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from netrig.lab import netns, nsexec, run
from netrig.rig import Lab

TARGET = 1.0
BALLAST_MB = (0, 200)  # a small process, then one the size of a runner with results in memory


def start_old(ns: str) -> None:
    """The way netrig entered a node before: the same steps, as preexec_fn (in the child,
    between fork and exec)."""
    path = netns.ns_path(ns)
    subprocess.run(["/bin/true"], preexec_fn=lambda: nsexec.enter(path, None, ()), check=True)


def start_new(ns: str) -> None:
    run.run(ns, ["/bin/true"], check=True)


def timed(fn: Callable[[str], None], ns: str, n: int, threads: int) -> list[float]:
    """Seconds per start, measured in each of `threads` threads starting n/threads each."""
    times: list[float] = []
    lock = threading.Lock()

    def worker(count: int) -> None:
        mine = []
        for _ in range(count):
            t0 = time.perf_counter()
            fn(ns)
            mine.append(time.perf_counter() - t0)
        with lock:
            times.extend(mine)

    pool = [threading.Thread(target=worker, args=(n // threads,)) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, meaning in (("--quick", "60 starts per way"), ("--check", "exit 1 above 1.0")):
        parser.add_argument(flag, action="store_true", help=meaning)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("process_start: needs root (it builds a lab)", file=sys.stderr)
        return 2
    n = 60 if args.quick else 400
    name = f"bps{uuid.uuid4().hex[:6]}"
    lab = Lab.from_spec({"name": name, "topology": {"kind": "pair"}})
    lab.up(check_reachability=False)
    worst = 0.0
    try:
        ns = lab.ns("n1")
        print(f"helper: {' '.join(run.helper())}")
        start_new(ns)  # builds the helper at first use: not part of the figures
        ballast: list[bytearray] = []
        for mb, threads in [(mb, t) for mb in BALLAST_MB for t in (1, 4)]:
            # fork copies the parent's page tables; vfork (the helper's way) does not
            ballast += [bytearray(1 << 20) for _ in range(mb - len(ballast))]
            old: list[float] = []
            new: list[float] = []
            for _ in range(4):  # alternate, so a load change on the host hits both ways
                old += timed(start_old, ns, n // 4, threads)
                new += timed(start_new, ns, n // 4, threads)
            ratio = statistics.median(new) / statistics.median(old)
            worst = max(worst, ratio)
            print(
                f"start `true` in a node, {mb} MB process, {threads} thread(s), "
                f"{len(new)} starts each: "
                f"preexec_fn {statistics.median(old) * 1e3:.2f} ms, "
                f"netrig-nsexec {statistics.median(new) * 1e3:.2f} ms per start, "
                f"ratio new/old {ratio:.2f} (target <= {TARGET:g})"
            )
    finally:
        lab.down()
    return 1 if args.check and worst > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
