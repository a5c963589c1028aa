#!/usr/bin/env python3
"""Does `netrig run` measure what raw iperf3 measures, and what does it cost beyond that?

1. Honesty: on a two-node lab, alternate raw `ip netns exec … iperf3` (server started by
   hand, client with --json) and `netrig run` of the same measurement on the same lab file,
   N times each, in ABBA order so slow drift hits both sides alike. Prints the ratio of the
   medians (netrig / raw) and ministat's verdict at 95 %. Goal: ratio 0.97–1.03 and no
   difference proven (raw iperf3 alone spreads about ±14 % from run to run here).
2. Overhead: wall-clock time of `netrig run` beyond the measurement time itself, for the
   two-node lab (goal < 0.5 s per run) and for a 100-node lab reused across runs (goal
   < 2 s per run).

Absolute times depend on the machine; nothing here asserts them.

    sudo python3 benchmarks/measure_overhead.py            # 10 pairs of 3 s
    sudo python3 benchmarks/measure_overhead.py --quick    # CI smoke: 3 pairs of 1 s
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from netrig.lab.ledger import Ledger
from netrig.lab.teardown import teardown
from netrig.measure import end_process, listening_ports
from netrig.measure.parse_iperf3 import parse_iperf3
from netrig.results.store import ResultStore
from netrig.rig import Lab

TAG = f"{os.getpid() % 10000}"
PORT = 5201


def lab_file(name: str, topology: str, repeat: int, duration: int, server: str = "n2") -> str:
    return (
        f"name: {name}\n"
        f"topology: {topology}\n"
        "measure:\n"
        f"  - iperf3: {{client: n1, server: {server}, duration: {duration}}}\n"
        f"repeat: {repeat}\n"
    )


def raw_iperf3(lab: Lab, duration: int) -> float:
    """What a user does by hand: server in n2, client in n1, via `ip netns exec`."""
    target = lab.addr("n2")
    server = subprocess.Popen(
        ["ip", "netns", "exec", lab.ns("n2"), "iperf3", "-s", "-1", "-p", str(PORT), "-B", target],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 5
        while not _listening(server.pid) and time.monotonic() < deadline:
            time.sleep(0.005)
        done = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                lab.ns("n1"),
                "iperf3",
                "-c",
                target,
                "-p",
                str(PORT),
                "-t",
                str(duration),
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=duration + 30,
            check=False,
        )
        return parse_iperf3(done.stdout, done.stderr).throughput
    finally:
        end_process(server)


def _listening(pid: int) -> bool:
    """`ip netns exec` execs iperf3 in place, so the PID is the server's."""
    return PORT in listening_ports(pid)


def netrig_run(path: str, db: str) -> tuple[float, float, list[tuple[float, float]]]:
    """(wall seconds, last run's throughput, (start, end) of each run) of one `netrig run`."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "netrig", "run", path, "--db", db, "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"netrig run failed ({done.returncode}): {done.stderr.strip()}")
    with ResultStore(db) as store:
        e = store.experiments()[-1]
        runs = store.runs(e.id)
        spans = [
            (r.started.timestamp(), r.ended.timestamp()) for r in runs if r.started and r.ended
        ]
        last = [
            s.value
            for _, s in store.samples(runs[-1].id)
            if s.metric == "throughput" and s.t is None and s.stream is None
        ]
    return wall, last[0], spans


def ministat_verdict(raw: list[float], ours: list[float], workdir: str) -> tuple[str, bool]:
    """ministat's text and whether it proved a difference at 95 %."""
    a, b = Path(workdir, "raw-iperf3"), Path(workdir, "netrig-run")
    a.write_text("".join(f"{v / 1e9:.6f}\n" for v in raw))
    b.write_text("".join(f"{v / 1e9:.6f}\n" for v in ours))
    if shutil.which("ministat"):
        out = subprocess.run(
            ["ministat", "-c", "95", "-w", "72", str(a), str(b)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    else:  # Student's t with pooled variance, as ministat computes it
        from scipy import stats

        p = stats.ttest_ind(raw, ours, equal_var=True).pvalue
        verdict = (
            "Difference at 95.0% confidence"
            if p < 0.05
            else ("No difference proven at 95.0% confidence")
        )
        out = f"(ministat not installed; scipy Student's t: p = {p:.3f})\n{verdict}\n"
    return out, "Difference at" in out


def honesty(pairs: int, duration: int, workdir: str) -> list[float]:
    """Interleaved raw/netrig pairs; returns the wall-clock overheads of the netrig runs."""
    raw_name, run_name = f"ovhraw{TAG}", f"ovhrun{TAG}"
    path = Path(workdir, "pair.yaml")
    path.write_text(lab_file(run_name, "{kind: pair}", 1, duration))
    db = str(Path(workdir, "pair.db"))
    lab = Lab.from_spec({"name": raw_name, "topology": {"kind": "pair"}})
    lab.up()
    raw: list[float] = []
    ours: list[float] = []
    overheads: list[float] = []
    try:
        for i in range(pairs):
            order = ("raw", "netrig") if i % 4 in (0, 3) else ("netrig", "raw")  # ABBA
            for side in order:
                if side == "raw":
                    raw.append(raw_iperf3(lab, duration))
                else:
                    wall, value, _ = netrig_run(str(path), db)
                    ours.append(value)
                    overheads.append(wall - duration)
            print(
                f"  pair {i + 1}/{pairs}: raw {raw[-1] / 1e9:6.2f} Gbit/s   "
                f"netrig run {ours[-1] / 1e9:6.2f} Gbit/s   (wall {overheads[-1] + duration:.2f} s)",
                flush=True,
            )
    finally:
        lab.down()
    ratio = statistics.median(ours) / statistics.median(raw)
    text, proven = ministat_verdict(raw, ours, workdir)
    print(text.rstrip())
    met = 0.97 <= ratio <= 1.03 and not proven
    print(
        f"ratio of medians netrig/raw: {ratio:.3f} (goal 0.97–1.03); "
        f"{'difference proven' if proven else 'no difference proven'} at 95 % "
        f"(n = {len(raw)} + {len(ours)}) → goal {'met' if met else 'NOT met'}"
    )
    return overheads


def big_lab(nodes: int, runs: int, duration: int, workdir: str) -> None:
    """One `netrig run` with `runs` repetitions in one reused lab of `nodes` nodes."""
    name = f"ovhbig{TAG}"
    path = Path(workdir, "big.yaml")
    path.write_text(lab_file(name, f"{{kind: chain, nodes: {nodes}}}", runs, duration))
    db = str(Path(workdir, "big.db"))
    wall, _, spans = netrig_run(str(path), db)
    in_runs = spans[-1][1] - spans[0][0]
    cycle = [b[0] - a[0] for a, b in itertools.pairwise(spans)]
    per_run = [c - duration for c in cycle] or [spans[0][1] - spans[0][0] - duration]
    once = wall - in_runs
    amortized = (wall - runs * duration) / runs
    print(f"{nodes}-node lab, {runs} runs of {duration} s in one `netrig run`: wall {wall:.2f} s")
    print(
        f"  per run in the reused lab, beyond the measurement: median "
        f"{statistics.median(per_run):.3f} s (goal < 2 s)"
    )
    print(
        f"  once per experiment (start-up, lab build and removal, summary): {once:.2f} s; "
        f"amortized over the {runs} runs: {amortized:.2f} s per run"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10, help="raw/netrig pairs (default 10)")
    parser.add_argument("--duration", type=int, default=3, help="iperf3 seconds (default 3)")
    parser.add_argument("--big-nodes", type=int, default=100, help="nodes of the big lab")
    parser.add_argument("--big-runs", type=int, default=5, help="runs in the big lab")
    parser.add_argument("--quick", action="store_true", help="CI smoke: 3 pairs of 1 s, 2 big runs")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.duration, args.big_runs = 3, 1, 2
    if os.geteuid() != 0:
        print("measure_overhead: needs root (network namespaces)", file=sys.stderr)
        return 2
    if not shutil.which("iperf3"):
        print("measure_overhead: iperf3 is not installed: apt-get install iperf3", file=sys.stderr)
        return 2
    print(
        f"measure_overhead: {args.pairs} pairs of {args.duration} s iperf3 (raw vs netrig run), "
        f"then a {args.big_nodes}-node lab; {os.cpu_count()} CPUs, kernel {os.uname().release}"
    )
    with tempfile.TemporaryDirectory(prefix="netrig-bench-") as workdir:
        try:
            overheads = honesty(args.pairs, args.duration, workdir)
            print(
                f"2-node lab: `netrig run` wall-clock beyond the {args.duration} s measurement: "
                f"median {statistics.median(overheads):.2f} s, min {min(overheads):.2f} s per run "
                f"(goal < 0.5 s; includes Python start-up, lab build and removal, store)"
            )
            big_lab(args.big_nodes, args.big_runs, args.duration, workdir)
        finally:
            ledger = Ledger()
            for name in ledger.all_lab_names():
                if name.startswith("ovh") and name.endswith(TAG):
                    teardown(ledger, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
