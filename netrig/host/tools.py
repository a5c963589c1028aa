"""User-space tools, Python packages and privileges netrig relies on: found, versioned, fixable.

A tool is found on PATH (plus the sbin directories, which a non-login root shell may lack),
its version is the first line its version flag prints (or, for tools without one, the
version of its Debian package), and the fix is the `apt-get install` that provides it.

    >>> probe_tools(["iperf3"])["iperf3"].version
    'iperf 3.12 (cJSON 1.7.15)'

Adding a tool is one `tool(...)` line in the table below.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Kind = Literal["privilege", "python", "tool"]
SEARCH_PATH = os.pathsep.join(
    [os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"]
)
VERSION_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One requirement as found here: where it is, which version, or how to get it."""

    name: str
    kind: Kind
    found: bool
    optional: bool
    purpose: str  # what netrig uses it for
    paths: dict[str, str] = field(default_factory=dict)  # command -> path
    version: str = ""
    package: str = ""
    fix: str = ""  # empty when found
    seconds: float = 0.0

    @property
    def mark(self) -> str:
        return "✔" if self.found else "✘"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Tool:
    """A registered requirement: a program (or several), a Python module, or a privilege."""

    name: str
    check: Callable[[Tool], ToolResult]
    purpose: str
    commands: tuple[str, ...] = ()
    package: str = ""
    version_args: tuple[str, ...] | None = ("--version",)  # None: ask dpkg for the version
    any_of: bool = False  # one of `commands` is enough (chromium / chromium-browser)
    optional: bool = False


TOOLS: dict[str, Tool] = {}


def _register(entry: Tool) -> None:
    if entry.name in TOOLS:
        raise ValueError(f"tool {entry.name!r} registered twice")
    TOOLS[entry.name] = entry


def tool(
    name: str,
    package: str,
    purpose: str,
    *,
    commands: tuple[str, ...] = (),
    version: tuple[str, ...] | None = ("--version",),
    any_of: bool = False,
    optional: bool = False,
) -> None:
    """Register a program (NAME, or COMMANDS when the name is not a command itself)."""
    _register(Tool(name, _check_program, purpose, commands or (name,), package, version,
                   any_of, optional))


def python_dep(module: str, dist: str, purpose: str, *, optional: bool = False) -> None:
    """Register a Python package: MODULE is imported by netrig, DIST is what pip installs."""
    _register(Tool(module, _check_python, purpose, (), dist, None, optional=optional))


# --------------------------------------------------------------------------- checks


def _check_program(entry: Tool) -> ToolResult:
    paths = {cmd: path for cmd in entry.commands if (path := shutil.which(cmd, path=SEARCH_PATH))}
    found = bool(paths) if entry.any_of else len(paths) == len(entry.commands)
    if not found:
        return ToolResult(entry.name, "tool", False, entry.optional, entry.purpose, paths, "",
                          entry.package, f"apt-get install -y {entry.package}")
    cmd, path = next(iter(paths.items()))
    version = ""
    if entry.version_args is not None:
        version = _version_line([cmd, *entry.version_args], path)
    version = version or _dpkg_version(entry.package)
    return ToolResult(entry.name, "tool", True, entry.optional, entry.purpose, paths, version,
                      entry.package)


def _check_python(entry: Tool) -> ToolResult:
    try:
        found = importlib.util.find_spec(entry.name) is not None
    except (ImportError, ValueError):
        found = False
    version = ""
    if found:
        try:
            version = importlib.metadata.version(entry.package)
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
    fix = "" if found else f"pip install {entry.package}"
    return ToolResult(entry.name, "python", found, entry.optional, entry.purpose, {}, version,
                      entry.package, fix)


def _check_root(entry: Tool) -> ToolResult:
    euid = os.geteuid()
    return ToolResult(entry.name, "privilege", euid == 0, False, entry.purpose, {},
                      f"euid {euid}", "", "" if euid == 0 else "run netrig as root (sudo netrig …)")


def _version_line(argv: list[str], executable: str | None = None) -> str:
    """First non-empty line of stdout+stderr of a version command; '' if it fails to run."""
    try:
        done = subprocess.run(argv, executable=executable, capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL,
                              env={**os.environ, "LC_ALL": "C"}, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (done.stdout or "") + "\n" + (done.stderr or "")
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    bad = ("unknown", "invalid", "unrecognized", "usage")
    return "" if any(word in line.lower() for word in bad) else line[:120]


def _dpkg_version(package: str) -> str:
    """The installed Debian package version, for tools without a version flag."""
    if not package or not shutil.which("dpkg-query"):
        return ""
    line = _version_line(["dpkg-query", "-W", "-f", "${Version}", package])
    return f"{package} {line}" if line else ""


# --------------------------------------------------------------------------- the table

_register(Tool("root", _check_root, "creating namespaces, links and routes (euid 0)"))

tool("iperf3", "iperf3", "throughput measurements")
tool("ping", "iputils-ping", "reachability checks and latency", version=("-V",))
tool("fping", "fping", "latency/loss measurements over many targets", version=("-v",))
tool("batmand", "batmand", "userspace BATMAN routing (when batman-adv is missing)",
     version=("-v",))
tool("babeld", "babeld", "Babel routing daemon", version=("-V",))
tool("bird", "bird2", "OSPF/BGP routing daemon (BIRD 2)")
tool("ovs", "openvswitch-switch", "Open vSwitch switch nodes (switch: ovs)",
     commands=("ovs-vsctl", "ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-appctl"))
tool("ovs-testcontroller", "openvswitch-testcontroller",
     "an OpenFlow controller for OVS switch nodes (controller: standalone)", optional=True)
tool("xdp-loader", "xdp-tools", "loading XDP programs, xdp-filter experiments", version=None)
tool("bpftool", "bpftool", "inspecting BPF programs and maps")
tool("clang", "clang", "building netrig's native BPF programs")
tool("ministat", "ministat", "cross-checking netrig's ministat-compatible statistics",
     version=None)
tool("nft", "nftables", "nftables firewall experiments")
tool("iptables", "iptables", "iptables firewall experiments", version=("-V",))
tool("ipset", "ipset", "address-set firewall experiments", version=("-v",))
tool("ip", "iproute2", "netrig exec/shell and debugging (`ip -n`)", version=("-V",))
tool("tc", "iproute2", "inspecting qdiscs by hand", version=("-V",))
tool("wrk", "wrk", "HTTP load generation", version=None)
tool("ab", "apache2-utils", "HTTP load generation (ApacheBench)", version=("-V",))
tool("trafgen", "netsniff-ng", "packet-rate generation", version=("-v",))
tool("gcc", "gcc", "building netrig_gen, the pps measurement's packet generator")
tool("haproxy", "haproxy", "load-balancer shootouts", version=("-v",))
tool("nginx", "nginx", "HTTP servers and load-balancer shootouts", version=("-v",))
tool("pen", "pen", "load-balancer shootouts", version=None)
tool("tcpdump", "tcpdump", "packet captures")
tool("ethtool", "ethtool", "offload settings of lab interfaces")
tool("chromium", "chromium", "screenshots of HTML reports",
     commands=("chromium", "chromium-browser"), any_of=True)

python_dep("pyroute2", "pyroute2", "netlink reads and qdiscs")
python_dep("pydantic", "pydantic", "experiment file models")
python_dep("yaml", "PyYAML", "experiment files")
python_dep("click", "click", "the command line")
python_dep("rich", "rich", "tables in the terminal")
python_dep("numpy", "numpy", "statistics")
python_dep("scipy", "scipy", "statistical tests")
python_dep("matplotlib", "matplotlib", "plots (PNG/SVG, HTML reports)", optional=True)


# --------------------------------------------------------------------------- API

_cache: dict[str, ToolResult] = {}
_cache_lock = threading.Lock()


def resolve(name: str) -> str:
    """The registered name for a tool, package or command; KeyError with a suggestion."""
    key = name.strip()
    if key in TOOLS:
        return key
    for entry in TOOLS.values():
        if key in entry.commands or (entry.package == key and entry.name not in ("ip", "tc")):
            return entry.name
    close = difflib.get_close_matches(key, list(TOOLS), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise KeyError(f"unknown tool {name!r}{hint}")


def _timed(entry: Tool) -> ToolResult:
    start = time.perf_counter()
    result = entry.check(entry)
    return ToolResult(**{**asdict(result), "seconds": time.perf_counter() - start})


def probe_tools(
    names: Iterable[str] | None = None, *, fresh: bool = False
) -> dict[str, ToolResult]:
    """Check the named requirements (all by default), in parallel; cached per process."""
    wanted = list(TOOLS) if names is None else list(dict.fromkeys(resolve(n) for n in names))
    with _cache_lock:
        todo = [n for n in wanted if fresh or n not in _cache]
        if todo:
            workers = min(12, len(todo))
            with ThreadPoolExecutor(workers, thread_name_prefix="doctor-tool") as pool:
                for result in pool.map(lambda n: _timed(TOOLS[n]), todo):
                    _cache[result.name] = result
        return {n: _cache[n] for n in wanted}


def clear_cache() -> None:
    """Forget earlier results (after an apt-get install, say)."""
    with _cache_lock:
        _cache.clear()


def has_tool(name: str) -> bool:
    """True when the program (or Python package) is installed; what measure plugins ask."""
    key = resolve(name)
    return probe_tools([key])[key].found
