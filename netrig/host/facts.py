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
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from netrig import __version__
from netrig.host.tools import VERSION_TIMEOUT_S, program_version, search_path


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


def tool_version(tool: str, timeout: float = VERSION_TIMEOUT_S, package: str = "") -> str | None:
    """The version line of an installed tool (netrig.host.tools' one prober; else its Debian
    package's version, as `netrig doctor` gives it), "unknown" if neither names one, None
    if it is not installed."""
    path = shutil.which(tool, path=search_path())
    if path is None:
        return None
    return program_version(tool, path, package, timeout=timeout) or "unknown"


def collect_host_facts(tools: Iterable[str] | Mapping[str, str] = ()) -> dict[str, Any]:
    """Kernel, CPU, core counts, Python and netrig versions, and the given tools' versions
    (tools: names, or name → Debian package, whose version stands in for a tool that
    prints none: vtysh and pen had been recorded "unknown")."""
    packages = tools if isinstance(tools, Mapping) else {}
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
        "tool_versions": {
            tool: tool_version(tool, package=packages.get(tool, "")) for tool in tools
        },
    }
