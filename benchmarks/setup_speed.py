"""How fast does `netrig up` build a lab, against the by-hand ways, measured in the same run?

Issue 12's goals, each printed as a ratio with its goal and whether it is met:

- the 100-node routed ring (addresses + static routes), `netrig up` wall clock with Python
  start-up and its default check, against the iproute2-batch build that checks nothing
  (benchmarks/reference/ipbatch_ring.py, a copy of the project's shared/reference/: at least as fast) and seed 000's script
  (benchmarks/reference/seed000_ring.sh: >= 20x); `netrig up --no-check` >= 2x ipbatch;
- with --full: a 1000-node ring up with its check <= 3 s, and a 10,000-node lab (a 100x100
  grid, `check: sample`) up <= 60 s and <= 2 GB peak RSS.

Also what naming a namespace costs on this host: a new file in /run/netns each (as `ip netns
add` makes them) against hard links of one file (as `netrig up` makes them).

Every way runs as the user would run it (a new process, timed from outside, its clean-up
not timed), the ways interleaved within each repetition (in a new order each time),
medians compared. The kernel frees a deleted namespace after the call returns and that
slows whatever is built next, so each timing starts only once the kernel is done freeing
the namespaces of the one before (the live count in /proc/slabinfo, then a probe namespace
made quickly twice in a row). The machine may be shared: min–max spreads are printed with
the medians.

    python benchmarks/setup_speed.py [--quick | --full [--no-grid]] [--reps N] [--reference DIR]

--quick is CI's smoke: a 20-node ring, one repetition, under a minute; its ratios are not
the goals' (start-up weighs more on a small ring).
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import netrig
from netrig.lab import netns

# The two by-hand references, verbatim copies of the project's shared/reference/ (so a
# fresh clone, as CI makes, has them); NETRIG_REFERENCE points at another copy.
REFERENCE = os.environ.get(
    "NETRIG_REFERENCE", os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference")
)
NETRIG = [sys.executable, "-m", "netrig"]


@dataclass
class Way:
    label: str
    times: list[float] = field(default_factory=list)
    notes: dict[str, list[float]] = field(default_factory=dict)  # e.g. build, check seconds
    rss_mb: list[float] = field(default_factory=list)

    def median(self) -> float:
        return statistics.median(self.times)

    def spread(self) -> str:
        if len(self.times) < 2:
            return ""
        return f"({min(self.times):.2f}–{max(self.times):.2f})"


def live_namespaces() -> int | None:
    """Network namespaces the kernel still holds (freed ones included until it is done)."""
    try:
        with open("/proc/slabinfo") as fh:
            for line in fh:
                if line.startswith("net_namespace "):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def wait_freed(before: int | None, timeout: float = 120.0) -> None:
    """Until the kernel is done freeing what the way before deleted. The slab count of
    network namespaces is only a first hint (SLUB's counts lag: it read "freed" while the
    kernel still spent a second on a bridged lab's clean-up), so then a probe: a new
    namespace must be made in under PROBE_FAST seconds twice in a row, and a name in
    /run/netns in under NAME_FAST."""
    deadline = time.monotonic() + timeout
    if before is not None:
        last, still = live_namespaces(), time.monotonic()
        while time.monotonic() < deadline:
            now = live_namespaces()
            if now is None or now <= before + 4:
                break
            if now != last:
                last, still = now, time.monotonic()
            elif time.monotonic() - still > 5.0:
                break  # someone else's namespaces, not ours
            time.sleep(0.1)
    fast = 0
    while fast < 2 and time.monotonic() < deadline:
        fast = fast + 1 if probe_namespace() < PROBE_FAST else 0
        time.sleep(0.05)
    fast = 0
    while fast < 2 and time.monotonic() < deadline:
        fast = fast + 1 if netns.name_cost() < NAME_FAST else 0
        time.sleep(0.5)


PROBE_FAST = 0.005  # s: a new namespace on an idle kernel takes ~0.5 ms
# s: a file in /run/netns. Where that is on a disk (this VM: ext4, `netrig doctor` says so),
# ext4 passes over inodes freed in the last 5-10 s when it allocates one: just after a lab
# of 1000 was deleted, a name took 0.9 ms (40 µs settled), for every way alike
NAME_FAST = 0.0001


def probe_namespace() -> float:
    """Seconds the kernel takes to make one network namespace now (an unnamed one, in a
    thread: it is freed when the thread ends)."""
    import ctypes
    import threading

    libc = ctypes.CDLL(None, use_errno=True)
    took: list[float] = []

    def make() -> None:
        start = time.perf_counter()
        if libc.unshare(0x40000000) != 0:  # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), "unshare")
        took.append(time.perf_counter() - start)

    thread = threading.Thread(target=make)
    thread.start()
    thread.join()
    return took[0] if took else 0.0


def run_measured(cmd: list[str], cwd: str | None = None) -> tuple[float, str, float]:
    """Wall seconds, stdout and the child's own peak RSS in MB (wait4's rusage) of one
    command run as a new process."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(
                f"setup_speed.py: {' '.join(cmd)} failed ({proc.returncode}):\n{err.read()}"
            )
        return elapsed, out.read(), usage.ru_maxrss / 1024


def reference(script: str, n: int, prefix: str, ref_dir: str) -> float:
    """One by-hand build, run from its directory as it is; its `down` is not timed."""
    path = os.path.join(ref_dir, script)
    cmd = ["bash", path] if script.endswith(".sh") else [sys.executable, path]
    before = live_namespaces()
    try:
        elapsed, _out, _rss = run_measured([*cmd, "up", str(n), prefix], cwd=ref_dir)
    finally:
        subprocess.run([*cmd, "down", str(n), prefix], cwd=ref_dir, check=False)
    wait_freed(before)
    return elapsed


def lab_file(directory: str, name: str, body: str) -> str:
    path = os.path.join(directory, f"{name}.yaml")
    with open(path, "w") as fh:
        fh.write(f"name: {name}\n{body}")
    return path


SUMMARY = re.compile(r"build ([\d.]+) s(?:; (\d+) pairs reachable in ([\d.]+) s)?")


def netrig_up(path: str, name: str, way: Way, *flags: str) -> None:
    before = live_namespaces()
    try:
        elapsed, out, rss = run_measured([*NETRIG, "up", "-q", *flags, path])
    finally:
        subprocess.run([*NETRIG, "down", name], check=False, stdout=subprocess.DEVNULL)
    way.times.append(elapsed)
    way.rss_mb.append(rss)
    if m := SUMMARY.search(out):
        way.notes.setdefault("build", []).append(float(m.group(1)))
        if m.group(3):
            way.notes.setdefault("check", []).append(float(m.group(3)))
    wait_freed(before)


def verdict(label: str, ratio: float, goal: float, unit: str = "x") -> str:
    met = "met" if ratio >= goal else "NOT met"
    return f"  {label:<44} {ratio:6.2f}{unit}   goal >= {goal:g}{unit}   {met}"


def limit_verdict(label: str, value: float, goal: float, unit: str) -> str:
    met = "met" if value <= goal else "NOT met"
    return (
        f"  {label:<44} {value:8.2f} {unit}   goal <= {goal:g} {unit} "
        f"(ratio {value / goal:.2f} of the goal)   {met}"
    )


# What `netrig up` imports before it can read a lab file: its CLI, YAML and validation
# libraries. Their start-up alone, timed with the ways, is the floor under netrig's own.
LIBRARIES = "import click, yaml; from pydantic import BaseModel"


def ring_comparison(n: int, reps: int, tag: str, ref_dir: str, tmp: str) -> dict[str, Way]:
    ways = {
        "seed000": Way("seed000_ring.sh (bridge + STP ring, no routes)"),
        "ipbatch": Way("ipbatch_ring.py (ip -batch; checks nothing)"),
        "up": Way("netrig up, a file it has built before"),
        "nocheck": Way("netrig up --no-check, a file built before"),
        "upnew": Way("netrig up, a new file (read, validated, planned)"),
        "nocheck-new": Way("netrig up --no-check, a new file"),
        "libraries": Way("python -c 'import click, yaml, pydantic' (no lab)"),
    }
    body = f"topology: {{kind: ring, nodes: {n}}}\nrouting: {{protocol: static}}\n"
    # the files built before: one each, built once untimed, so its plan is remembered
    known = {key: lab_file(tmp, f"{tag}{key[0]}", body) for key in ("up", "nocheck")}
    for key, path in known.items():
        netrig_up(path, f"{tag}{key[0]}", Way("untimed"))
    rng = random.Random(12)
    for rep in range(reps):
        order = list(ways)
        rng.shuffle(order)  # a new order each repetition: no way always follows another
        for key in order:
            prefix = f"{tag}{key[0]}{rep}-"
            flags = ["--no-check"] if key.startswith("nocheck") else []
            if key == "seed000":
                ways[key].times.append(reference("seed000_ring.sh", n, prefix, ref_dir))
            elif key == "ipbatch":
                ways[key].times.append(reference("ipbatch_ring.py", n, prefix, ref_dir))
            elif key == "libraries":
                ways[key].times.append(run_measured([sys.executable, "-c", LIBRARIES])[0])
            elif key in known:
                netrig_up(known[key], f"{tag}{key[0]}", ways[key], *flags)
            else:  # a file netrig has not seen: its name and so its plan are new
                name = f"{tag}{key[0]}{key[-1]}{rep}"
                netrig_up(lab_file(tmp, name, body), name, ways[key], *flags)
        print(f"  … repetition {rep + 1}/{reps} done", file=sys.stderr, flush=True)
    return ways


def print_ways(title: str, ways: dict[str, Way]) -> None:
    print(title)
    for way in ways.values():
        extra = ""
        if way.notes:
            parts = [f"{k} {statistics.median(v):.3f} s" for k, v in way.notes.items()]
            extra = "  [" + ", ".join(parts) + "]"
        print(f"  {way.label:<50} {way.median():7.3f} s {way.spread():>13}{extra}")


def naming(count: int, reps: int, tag: str) -> dict[str, list[float]]:
    """Seconds to make `count` names in /run/netns, the files namespaces are mounted on: one
    new file each (what `ip netns add` and seed 000's script make) against hard links of
    one file (netns.make_mount_points, what `netrig up` makes), interleaved; each set is
    removed again before the next, so every one is made just after names were removed, as
    in a lab built after another's `down` (where ext4 is slowest to allocate inodes)."""
    took: dict[str, list[float]] = {"files": [], "links": []}
    for rep in range(reps):
        order = list(took)
        random.Random(rep).shuffle(order)
        for way in order:
            paths = [netns.ns_path(f"{tag}{way[0]}{rep}-{i}") for i in range(count)]
            start = time.perf_counter()
            if way == "files":
                for path in paths:
                    os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
            else:
                netns.make_mount_points([os.path.basename(p) for p in paths])
            took[way].append(time.perf_counter() - start)
            for path in paths:
                os.unlink(path)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke: 20-node ring, 1 rep")
    parser.add_argument("--full", action="store_true", help="also 1000-node ring, 10k grid")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--reference", default=REFERENCE, help="the by-hand scripts' directory")
    parser.add_argument(
        "--no-grid", action="store_true", help="with --full, leave out the 10,000-node grid"
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("setup_speed.py: run as root")
    for script in ("seed000_ring.sh", "ipbatch_ring.py"):
        if not os.path.exists(os.path.join(args.reference, script)):
            sys.exit(f"setup_speed.py: no {script} in {args.reference} (--reference DIR)")
    n = 20 if args.quick else 100
    reps = 1 if args.quick else args.reps
    # netrig's bytecode as ./setup.sh leaves it: under PYTHONDONTWRITEBYTECODE=1 a module
    # edited since would be compiled again at every `up` (a few ms each), not netrig's figure
    compileall.compile_dir(os.path.dirname(netrig.__file__), quiet=1)
    tag = f"b{os.getpid() % 1000}"
    with tempfile.TemporaryDirectory() as tmp:
        # plans remembered by `netrig up` (netrig.rig.plancache) kept here, not in the host's
        os.environ["NETRIG_PLAN_CACHE"] = os.path.join(tmp, "plans")
        ways = ring_comparison(n, reps, tag, args.reference, tmp)
        print_ways(
            f"{n}-node routed ring, {reps} interleaved repetition(s): median wall (min–max)", ways
        )
        ipb, seed = ways["ipbatch"].median(), ways["seed000"].median()
        note = "  (--quick: 20 nodes, not the goals' size)" if args.quick else ""
        print(f"goals, as ratios measured in this run{note}:")
        for suffix, what in (("", "a file built before"), ("new", "a new file")):
            up = ways["up" + suffix].median()
            nocheck = ways["nocheck" + ("-new" if suffix else "")].median()
            print(f" {what}:")
            print(verdict("netrig up vs ipbatch (ipbatch / netrig)", ipb / up, 1))
            print(verdict("netrig up vs seed 000 (seed000 / netrig)", seed / up, 20))
            print(verdict("netrig up --no-check vs ipbatch", ipb / nocheck, 2))
        libraries = ways["libraries"].median()
        nocheck = ways["nocheck-new"].median()
        build = statistics.median(ways["nocheck-new"].notes.get("build", [0.0]))
        print(
            f"where --no-check's {nocheck:.3f} s go for a new file: Python start-up and the "
            f"imports of click, PyYAML and pydantic {libraries:.3f} s, the build (netrig's own "
            f"figure) {build:.3f} s, the rest (netrig's modules, reading and planning the "
            f"file, waiting for carriers, exit) {nocheck - libraries - build:.3f} s; the goal "
            f"leaves {ipb / 2:.3f} s"
        )
        names = naming(n, 3 if args.quick else 7, tag)
        files, links = (statistics.median(names[k]) for k in ("files", "links"))
        print(
            f"naming {n} namespaces in {netns.NETNS_RUN_DIR}, just after others were removed "
            f"(median of {len(names['files'])}): a file each (ip netns add) {files * 1e3:.2f} "
            f"ms, links of one file (netrig) {links * 1e3:.2f} ms: {files / links:.1f}x"
        )
        if not args.full:
            return
        big = Way("1000-node ring, netrig up with its check (a new file)")
        for rep in range(reps):
            ring = lab_file(tmp, f"{tag}k{rep}", "topology: {kind: ring, nodes: 1000}\n"
                            "routing: {protocol: static}\n")  # fmt: skip
            netrig_up(ring, f"{tag}k{rep}", big)
        print_ways("1000-node ring (median wall):", {"k": big})
        print(limit_verdict("1000-node ring up with its check", big.median(), 3.0, "s"))
        if args.no_grid:
            print("  10,000-node grid: left out (--no-grid)")
            return
        grid = Way("10,000-node grid (100x100), check: sample")
        path = lab_file(tmp, f"{tag}g", "topology: {kind: grid, rows: 100, cols: 100}\n"
                        "routing: {protocol: static}\ncheck: {reachability: sample, "
                        "timeout: 60s}\n")  # fmt: skip
        netrig_up(path, f"{tag}g", grid)
        print_ways("10,000-node grid (one run):", {"g": grid})
        print(limit_verdict("10,000-node grid up (check: sample)", grid.median(), 60.0, "s"))
        rss = max(grid.rss_mb) / 1024
        print(limit_verdict("10,000-node grid peak RSS of netrig up", rss, 2.0, "GB"))


if __name__ == "__main__":
    main()
