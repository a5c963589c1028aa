"""How fast does a command that does little start, and how fast does `netrig down` return?

1. Start-up: `netrig --help` and `netrig validate` of a 100-node ring (static routing)
   against a bare start of the same Python (`python -c pass`), interleaved, medians
   (target: each <= 4x the bare start): validate of a file it has seen before (its plan
   remembered: netrig.rig.plancache) and of a new file (read, validated, planned), and the
   start-up of the libraries `validate` reads a new file with (click, PyYAML, pydantic: the
   floor under netrig's own, no target). Wall
   time, and the children's CPU time, which a busy machine disturbs less. As root, also what `netrig up -q --no-check` of that ring
   spends importing (`python -X importtime`, modules a bare start has left out; target
   <= 80 ms), of a file built before and of a new file, and the modules that cost most.
2. `netrig down` of a 100-node ring (command line, Python start included) against the by-hand
   way measured in the same run: 100 namespaces made with one `ip -batch` and removed with
   `ip netns del`, one process each (what a script does), and with one `ip -batch` of
   `netns del` lines (what an expert does). Target: `netrig down` <= 0.1 s.
3. (not with --quick) `netrig down` of a babel ring of 6: how long it takes, and that no
   daemon it recorded is still running when it returns.

Deleted namespaces are freed by the kernel after they are removed and slow whatever comes
next, so every removal is followed by a pause before the next timing.

    python benchmarks/startup_down.py             # 15 start-ups each, 5 downs each way
    python benchmarks/startup_down.py --quick     # 5 and 2, no daemons: a CI smoke run
    python benchmarks/startup_down.py --check     # exit 1 if a ratio or time is off target
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from netrig.lab import netns
from netrig.lab.ledger import Ledger, process_alive

STARTUP_TARGET = 4.0  # x a bare Python start
UP_IMPORTS_TARGET = 0.080  # seconds of imports of `netrig up -q` of a static ring
DOWN_TARGET = 0.1  # seconds, 100 nodes
NETRIG = [sys.executable, "-m", "netrig"]
LIBRARIES = "import click, yaml; from pydantic import BaseModel"


def timed(argv: list[str], **kwargs: object) -> tuple[float, float]:
    """(wall, CPU of the child) seconds of one run of argv, which must succeed. The CPU time
    is the child's own rusage (microseconds; os.times() counts in 10 ms ticks, as coarse as
    a bare start)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


def settle(count: int) -> None:
    """Give the kernel time to free `count` removed namespaces."""
    time.sleep(0.3 + count * 0.004)


NEW_FILE = "netrig validate, a new file"


def startup(reps: int, lab_file: str, tmp: str) -> dict[str, tuple[float, float]]:
    runs = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "netrig --help": [*NETRIG, "--help"],
        # a file validated before, unchanged: its plan remembered (netrig.rig.plancache)
        "netrig validate, a file seen before": [*NETRIG, "validate", lab_file],
        # read, validated and planned: each run with a plan cache of its own, still empty
        NEW_FILE: [*NETRIG, "validate", lab_file],
        # the CLI, YAML and validation libraries `validate` reads a new file with: their own
        # start-up, the floor under netrig's (no target)
        "python: click, yaml, pydantic": [sys.executable, "-c", LIBRARIES],
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    # a warm-up run each, for the page cache and the bytecode an installed netrig has (one
    # that compiles its modules on every start, PYTHONDONTWRITEBYTECODE=1 and no
    # __pycache__, pays ~30 ms more); it also validates the file seen before
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for argv in runs.values():
        timed(argv, env=env)
    for rep in range(reps):
        for name, argv in runs.items():
            fresh = {**os.environ, "NETRIG_PLAN_CACHE": os.path.join(tmp, f"new{rep}")}
            times[name].append(timed(argv, env=fresh) if name == NEW_FILE else timed(argv))
    return {
        name: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
        for name, ts in times.items()
    }


def import_times(argv: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Each module `python -X importtime ARGV` imported, with the seconds of its own import
    (not of those it imported), from its stderr; argv must succeed."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], check=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    times: dict[str, float] = {}
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[0].strip().isdigit():
            times[parts[2].strip()] = int(parts[0]) / 1e6
    return times


def up_imports(
    reps: int, lab_file: str, name: str, new_file: bool
) -> tuple[float, list[tuple[str, float]]]:
    """Median seconds `netrig up -q --no-check` spends importing what a bare start does not
    (the modules' own times summed), and that time by top-level package (medians). new_file:
    no plan remembered (netrig.rig.plancache turned off), else the file's plan from a first
    run (untimed)."""
    bare = set(import_times(["-c", "pass"]))
    totals: list[float] = []
    each: dict[str, list[float]] = {}
    argv = ["-m", "netrig", "up", "-q", "--no-check", lab_file]
    env = {**os.environ, "NETRIG_PLAN_CACHE": "off"} if new_file else None
    if not new_file:
        import_times(argv)
        subprocess.run([*NETRIG, "down", name], check=True, capture_output=True)
        settle(100)
    for _ in range(reps):
        try:
            times = import_times(argv, env)
        finally:
            subprocess.run([*NETRIG, "down", name], check=True, capture_output=True)
            settle(100)
        by_package: dict[str, float] = {}
        for module, own in times.items():
            if module not in bare:
                package = module.split(".")[0]
                by_package[package] = by_package.get(package, 0.0) + own
        totals.append(sum(by_package.values()))
        for package, t in by_package.items():
            each.setdefault(package, []).append(t)
    top = sorted(((m, statistics.median(ts)) for m, ts in each.items()), key=lambda x: -x[1])
    return statistics.median(totals), top[:6]


def netrig_down(lab_file: str, name: str) -> float:
    subprocess.run([*NETRIG, "up", lab_file, "--no-check"], check=True, capture_output=True)
    wall, _ = timed([*NETRIG, "down", name])
    if any(ns.startswith(f"{name}-") for ns in netns.list_names()):
        raise SystemExit(f"netrig down {name} left namespaces behind")
    return wall


def by_hand(prefix: str, n: int, batch: bool) -> float:
    names = [f"{prefix}-n{i}" for i in range(1, n + 1)]
    subprocess.run(["ip", "-batch", "-"], input="".join(f"netns add {x}\n" for x in names),
                   text=True, check=True)  # fmt: skip
    start = time.perf_counter()
    if batch:
        subprocess.run(["ip", "-batch", "-"], input="".join(f"netns del {x}\n" for x in names),
                       text=True, check=True)  # fmt: skip
    else:
        for x in names:
            subprocess.run(["ip", "netns", "del", x], check=True)
    return time.perf_counter() - start


def down_with_daemons(tmp: str) -> tuple[float, int, int]:
    """(seconds, daemons recorded, daemons still running on return) of a babel ring of 6."""
    name = f"bd{uuid.uuid4().hex[:6]}"
    path = os.path.join(tmp, "babel.yaml")
    Path(path).write_text(
        f"name: {name}\ntopology: {{kind: ring, nodes: 6}}\n"
        "routing: {protocol: babel, hello_interval: 1}\n"
    )
    subprocess.run([*NETRIG, "up", path, "--no-check"], check=True, capture_output=True)
    daemons = {o.pid: o.starttime for o in Ledger().objects(name, "process") if o.pid}
    wall, _ = timed([*NETRIG, "down", name])
    still = [pid for pid, st in daemons.items() if process_alive(pid, st)]
    return wall, len(daemons), len(still)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="few repetitions, no daemons (< 30 s)")
    ap.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = ap.parse_args()
    reps, downs = (5, 2) if args.quick else (15, 5)
    ok = True
    tag = uuid.uuid4().hex[:4]
    with tempfile.TemporaryDirectory() as tmp:
        name = f"sd{tag}"
        lab_file = os.path.join(tmp, "ring100.yaml")
        Path(lab_file).write_text(
            f"name: {name}\ntopology: {{kind: ring, nodes: 100}}\nrouting: {{protocol: static}}\n"
        )
        # plans remembered by these runs (netrig.rig.plancache) kept here, not in the host's
        os.environ["NETRIG_PLAN_CACHE"] = os.path.join(tmp, "plans")
        print(f"start-up, median of {reps} interleaved runs (wall, CPU):")
        results = startup(reps, lab_file, tmp)
        bare_wall, bare_cpu = results["python -c pass"]
        for what, (wall, cpu) in results.items():
            ratio = wall / bare_wall
            print(
                f"  {what:36s} {wall:6.3f} s  {ratio:5.1f}x   CPU {cpu:6.3f} s  "
                f"{cpu / bare_cpu:5.1f}x" + ("" if what.startswith("python") else
                f"   (target <= {STARTUP_TARGET:g}x)")
            )  # fmt: skip
            if what.startswith("netrig") and ratio > STARTUP_TARGET:
                ok = False
        if os.geteuid() != 0:
            print("down: needs root (network namespaces); skipped")
            return 0 if ok or not args.check else 1
        for new_file, what in ((False, "a file built before"), (True, "a new file")):
            spent, top = up_imports(downs, lab_file, name, new_file)
            print(
                f"imports of `netrig up -q --no-check` (100 nodes), {what}, median of {downs} "
                f"runs: {spent:.3f} s (target <= {UP_IMPORTS_TARGET:g} s); by package: "
                + ", ".join(f"{m} {t * 1000:.0f} ms" for m, t in top)
            )
            ok = ok and spent <= UP_IMPORTS_TARGET
        print(f"down of 100 nodes, median of {downs} interleaved runs:")
        times: dict[str, list[float]] = {
            "netrig down": [],
            "ip netns del x100": [],
            "ip -batch": [],
        }
        for i in range(downs):
            times["netrig down"].append(netrig_down(lab_file, name))
            settle(100)
            times["ip netns del x100"].append(by_hand(f"sh{tag}{i}", 100, batch=False))
            settle(100)
            times["ip -batch"].append(by_hand(f"sb{tag}{i}", 100, batch=True))
            settle(100)
        ours = statistics.median(times["netrig down"])
        for what, ts in times.items():
            median = statistics.median(ts)
            print(f"  {what:28s} {median:6.3f} s   netrig down / this: {ours / median:5.2f}")
        print(f"  netrig down {ours:.3f} s (target <= {DOWN_TARGET:g} s, Python start included)")
        ok = ok and ours <= DOWN_TARGET
        if not args.quick:
            if any(os.access(os.path.join(d, "babeld"), os.X_OK) for d in os.get_exec_path()):
                wall, recorded, still = down_with_daemons(tmp)
                print(
                    f"down of a babel ring of 6: {wall:.3f} s; {recorded} daemons recorded, "
                    f"{still} still running when it returned (must be 0)"
                )
                ok = ok and still == 0
            else:
                print("down with daemons: babeld is not installed; skipped")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
