"""How much slower is `netrig stat` than the real ministat on the same big files?

Times both as subprocesses (the way users run them), best of 3, on 1,000,000 values and
on two such files, checks that their outputs are identical, and prints the ratio
netrig/ministat. The target is <= 3x; no absolute time is asserted.

    python benchmarks/stat_speed.py            # 1e6 values
    python benchmarks/stat_speed.py --quick    # 1e5 values, a CI smoke run
    python benchmarks/stat_speed.py --check    # exit 1 if the ratio is above the target
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TARGET = 3.0
REPEATS = 3


def write_values(path: Path, n: int, mean: float, seed: int) -> None:
    """n normally distributed values, one per line, like a long run of samples."""
    values = np.random.default_rng(seed).normal(mean, mean / 20, n)
    path.write_text("\n".join(map("{:.6f}".format, values.tolist())) + "\n")


def best_time(argv: list[str]) -> tuple[float, bytes]:
    """Best wall time of REPEATS runs, and the output of the last one."""
    best, out = float("inf"), b""
    for _ in range(REPEATS):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, check=False)
        best = min(best, time.perf_counter() - start)
        if proc.returncode != 0:
            sys.exit(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.decode()[:500]}")
        out = proc.stdout
    return best, out


def compare(label: str, files: list[Path], ministat: str) -> float:
    real_s, real_out = best_time([ministat, *map(str, files)])
    ours_s, ours_out = best_time([sys.executable, "-m", "netrig", "stat", *map(str, files)])
    ratio = ours_s / real_s
    same = "identical output" if ours_out == real_out else "OUTPUT DIFFERS"
    print(
        f"stat {label}: ministat {real_s:.2f} s, netrig {ours_s:.2f} s, "
        f"ratio {ratio:.2f}x (target <= {TARGET:g}x), {same}"
    )
    if ours_out != real_out:
        sys.exit(1)
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1e5 values instead of 1e6")
    parser.add_argument("--check", action="store_true", help="exit 1 above the target ratio")
    args = parser.parse_args()
    ministat = shutil.which("ministat")
    if ministat is None:
        print("ministat is not installed: apt-get install -y ministat", file=sys.stderr)
        return 2
    n = 100_000 if args.quick else 1_000_000
    label = f"{n:.0e}".replace("+0", "")
    with tempfile.TemporaryDirectory(prefix="stat_speed.") as tmp:
        a, b = Path(tmp, "before"), Path(tmp, "after")
        write_values(a, n, 1000.0, seed=1)
        write_values(b, n, 1001.0, seed=2)
        ratios = [
            compare(f"{label} values", [a], ministat),
            compare(f"2 x {label} values", [a, b], ministat),
        ]
    if args.quick:
        print("(--quick: interpreter start-up dominates, so the ratio is not meaningful here)")
    return 1 if args.check and max(ratios) > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
