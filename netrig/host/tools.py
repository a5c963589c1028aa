"""User-space tools, Python packages and privileges netrig relies on: found, versioned, fixable.

A tool is found on PATH (plus the sbin directories, which a non-login root shell may lack),
its version is the first line naming a version that its version flag prints (or the version
of its Debian package), and the fix is the `apt-get install` that provides it.

    >>> probe_tools(["iperf3"])["iperf3"].version
    'iperf 3.12 (cJSON 1.7.15)'

The table below holds the lab core's own programs; plugins declare theirs (`programs`) and
`netrig.doctor.declared` adds them, so each program is named in one place.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

Kind = Literal["privilege", "python", "tool"]
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin")


def search_path() -> str:
    """PATH plus the sbin directories (a non-login root shell may lack them), read now."""
    return os.pathsep.join([os.environ.get("PATH", ""), *SBIN_DIRS])
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
    any_of: bool = False,
    optional: bool = False,
) -> None:
    """Register a program (NAME, or COMMANDS when the name is not a command itself)."""
    _register(Tool(name, _check_program, purpose, commands or (name,), package, any_of,
                   optional))


def declare(program: str, package: str, purpose: str, commands: tuple[str, ...] = ()) -> None:
    """A program a plugin declares it may run: added to the table once, its purposes joined
    when several plugins run it."""
    entry = TOOLS.get(program)
    if entry is None:
        tool(program, package, purpose, commands=commands)
    elif purpose not in entry.purpose.split("; "):
        TOOLS[program] = replace(entry, purpose=f"{entry.purpose}; {purpose}")


def python_dep(module: str, dist: str, purpose: str, *, optional: bool = False) -> None:
    """Register a Python package: MODULE is imported by netrig, DIST is what pip installs."""
    _register(Tool(module, _check_python, purpose, (), dist, optional=optional))


# --------------------------------------------------------------------------- checks


def _check_program(entry: Tool) -> ToolResult:
    paths = {cmd: path for cmd in entry.commands if (path := shutil.which(cmd, path=search_path()))}
    found = bool(paths) if entry.any_of else len(paths) == len(entry.commands)
    if not found:
        return ToolResult(entry.name, "tool", False, entry.optional, entry.purpose, paths, "",
                          entry.package, f"apt-get install -y {entry.package}")
    cmd, path = next(iter(paths.items()))
    version = program_version(cmd, path, entry.package)
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


# One version prober for `netrig doctor` and the host facts stored with every run. The flags
# are tried in order; the first output line that names a version number wins, whatever the
# exit status (wrk prints its version for -v and exits 1). Programs that must not be started
# to be asked (they would wait for input or act) get their Debian package's version instead.
VERSION_FLAGS: tuple[str, ...] = ("--version", "-V", "-v")
VERSION_ARGS: dict[str, tuple[str, ...] | None] = {
    "ping": ("-V",), "fping": ("-v",), "batmand": ("-v",), "babeld": ("-V",),
    "iptables": ("-V",), "ipset": ("-v",), "ip": ("-V",), "tc": ("-V",), "ab": ("-V",),
    "trafgen": ("-v",), "haproxy": ("-v",), "nginx": ("-v",), "wrk": ("-v",),
    "xdp-loader": None, "ministat": None, "pen": None,
}  # fmt: skip
_HAS_NUMBER = re.compile(r"\d+\.\d+|\d{6,}")  # 3.12, or an iputils date such as 20221126


def program_version(
    program: str, path: str | None = None, package: str = "", timeout: float = VERSION_TIMEOUT_S
) -> str:
    """The version line of an installed program ('' when it names none)."""
    flags = VERSION_ARGS.get(program, VERSION_FLAGS)
    for flag in flags or ():
        exe = path or shutil.which(program, path=search_path())
        line = _version_line([program, flag], exe, timeout)
        if line:
            return line
    return _dpkg_version(package) if package else ""


def _version_line(
    argv: list[str], executable: str | None = None, timeout: float = VERSION_TIMEOUT_S
) -> str:
    """The first line naming a version number in the output of a version command."""
    try:
        done = subprocess.run(argv, executable=executable, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL,
                              env={**os.environ, "LC_ALL": "C"}, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (done.stdout or "") + "\n" + (done.stderr or "")
    for line in text.splitlines():
        if _HAS_NUMBER.search(line) and not any(
            word in line.lower() for word in ("invalid", "unrecognized", "usage")
        ):
            return line.strip()[:120]
    return ""


def _dpkg_version(package: str) -> str:
    """The installed Debian package version, for tools without a version flag."""
    if not package or not shutil.which("dpkg-query"):
        return ""
    line = _version_line(["dpkg-query", "-W", "-f", "${Version}", package])
    return f"{package} {line}" if line else ""


# --------------------------------------------------------------------------- the table

_register(Tool("root", _check_root, "creating namespaces, links and routes (euid 0)"))

# The lab core's own programs and what a user runs beside it (optional: netrig itself needs
# none of those); every plugin's programs are declared by the plugin (`programs`) and added
# by netrig.doctor.declared.
tool("ip", "iproute2", "netrig exec/shell and debugging (`ip -n`)")
tool("tc", "iproute2", "inspecting qdiscs by hand", optional=True)
tool("xdp-loader", "xdp-tools", "loading XDP programs by hand (netrig loads its own)",
     optional=True)
tool("bpftool", "bpftool", "inspecting BPF programs and maps by hand", optional=True)
tool("clang", "clang", "building netrig's native BPF programs")
tool("gcc", "gcc", "building netrig's native helpers")
tool("ministat", "ministat", "cross-checking netrig's ministat-compatible statistics")
tool("ipset", "ipset", "address sets by hand (netrig's firewalls use none)", optional=True)
tool("tcpdump", "tcpdump", "packet captures by hand", optional=True)
tool("ethtool", "ethtool", "offload settings of lab interfaces by hand", optional=True)
tool("chromium", "chromium", "screenshots of HTML reports",
     commands=("chromium", "chromium-browser"), any_of=True, optional=True)

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
