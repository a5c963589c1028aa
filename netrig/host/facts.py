"""Facts about the host an experiment ran on, stored with every experiment.

Why: a number without its kernel, CPU and tool versions cannot be compared with another one
later (Flent records the same). Nothing here needs root, and a missing tool is a fact too.

    >>> facts = collect_host_facts(["iperf3", "fping"])
    >>> facts["tool_versions"]["iperf3"]
    'iperf 3.12 (cJSON 1.7.15)'
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from netrig import __version__

# Tried in order; the first that exits 0 and prints a version number wins. `ping` (iputils)
# rejects --version but answers -V; iperf3 and fping answer --version.
VERSION_FLAGS: tuple[str, ...] = ("--version", "-V", "-v")
_HAS_NUMBER = re.compile(r"\d+\.\d+|\d{6,}")  # 3.12, or an iputils date such as 20221126


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name from /proc/cpuinfo, or platform.processor() where it has none."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model", "Processor") and value.strip():
            return value.strip()
    return platform.processor() or platform.machine()


def tool_version(tool: str, timeout: float = 5.0) -> str | None:
    """The first line of `tool --version` (or -V, -v) that names a version; None if missing.

    A tool that is installed but answers none of the flags gives "unknown".
    """
    path = shutil.which(tool)
    if path is None:
        return None
    for flag in VERSION_FLAGS:
        try:
            done = subprocess.run(
                [path, flag], capture_output=True, text=True, timeout=timeout,
                stdin=subprocess.DEVNULL, check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode != 0:
            continue
        for line in (done.stdout + "\n" + done.stderr).splitlines():
            if _HAS_NUMBER.search(line):
                return line.strip()
    return "unknown"


def collect_host_facts(tools: Iterable[str] = ()) -> dict[str, Any]:
    """Kernel, CPU, core counts, Python and netrig versions, and the given tools' versions."""
    uname = platform.uname()
    return {
        "hostname": uname.node,
        "kernel": uname.release,
        "kernel_build": uname.version,
        "machine": uname.machine,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        # What `nproc` prints: the CPUs this process may run on (taskset, cgroups).
        "cpu_usable": len(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
        "netrig_version": __version__,
        "tool_versions": {tool: tool_version(tool) for tool in tools},
    }
