"""Kernel feature probes: each one really tries its feature, inside a throwaway namespace.

Kernel configs and module lists lie by omission (a module may be missing from disk, a
built-in may be refused in a namespace), so every probe creates the real object — a veth,
a netem qdisc, an XDP attachment — in a `netns.scratch()` namespace that vanishes with its
thread. Nothing is ever created in the host's namespace.

    >>> has_feature("netem")               # what lab validation asks before building
    False
    >>> probe_features(["veth", "htb"])["htb"].detail
    'htb qdisc created on a veth and read back'

Adding a probe is one decorated function:

    @feature("dummy", "dummy interface", config="CONFIG_DUMMY", module="dummy",
             impact="dummy interfaces unavailable")
    def _dummy(ns: Scratch) -> Outcome:
        return _link_kind(ns, "dummy")
"""

from __future__ import annotations

import difflib
import errno
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Literal

from netrig.host.kernel import (
    CREATE,
    NETLINK_NETFILTER,
    NLA_F_NESTED,
    XDP_FLAGS_DRV_MODE,
    XDP_FLAGS_SKB_MODE,
    Netlink,
    Reply,
    bpf_load_xdp_pass,
    errno_name,
    genl_family,
    link_add,
    link_get,
    link_kind_data,
    link_names,
    veth_add,
    xdp_attach,
    xdp_attached,
)
from netrig.lab import netns, nlwire
from netrig.lab.nlwire import attr, attr_str, attr_u32

Status = Literal["present", "missing", "untested"]
MARKS: dict[str, str] = {"present": "✔", "missing": "✘", "untested": "?"}

# --------------------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a probe function found: a status and the kernel's own words."""

    status: Status
    detail: str


def present(detail: str) -> Outcome:
    return Outcome("present", detail)


def missing(detail: str) -> Outcome:
    return Outcome("missing", detail)


def untested(detail: str) -> Outcome:
    return Outcome("untested", detail)


class Untested(Exception):
    """Raised by a probe that could not try its feature (a helper program is missing)."""


def from_reply(reply: Reply, ok_detail: str) -> Outcome:
    return present(ok_detail) if reply.ok else missing(reply.describe())


@dataclass(frozen=True, slots=True)
class FeatureResult:
    """One feature as this host has it, with what its absence means and how to fix it."""

    name: str
    title: str
    status: Status
    detail: str
    impact: str  # what netrig cannot do without it (empty when present)
    fix: str  # the command or change that provides it (empty when present or unknown)
    seconds: float
    used: bool = True  # False: netrig has no feature that needs it (probed for the record)

    @property
    def present(self) -> bool:
        return self.status == "present"

    @property
    def mark(self) -> str:
        return MARKS[self.status]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"present": self.present}


ProbeFn = Callable[["Scratch"], Outcome]


@dataclass(frozen=True, slots=True)
class Feature:
    """A registered probe and the facts needed to explain a failure."""

    name: str
    title: str
    fn: ProbeFn
    impact: str
    config: str = ""  # kernel option that provides it
    module: str = ""  # module that provides it when the kernel is modular
    tool: str = ""  # command the probe needs; without it the result is 'untested'
    package: str = ""  # Debian package providing `tool`
    fix: str = ""  # a fixed fix, when the generic kernel advice does not apply
    used: bool = True  # False: netrig itself does not use it (only exec lines may ask)


FEATURES: dict[str, Feature] = {}
ALIASES: dict[str, str] = {
    "stp": "bridge-stp", "xdp": "xdp-native", "8021q": "vlan", "802.1q": "vlan",
    "batadv": "batman-adv", "batman": "batman-adv", "ovs": "openvswitch", "bond": "bonding",
    "ip_vs": "ipvs", "nft": "nftables", "fq-codel": "fq_codel", "ecmp": "multipath",
}
CORE = ("netns", "veth")
UNUSED = ("netrig itself does not use it (probed for the record); an exec line that plainly "
          "needs it is refused at its line")
ROOT_FIX = "run netrig as root (namespaces and links need CAP_SYS_ADMIN and CAP_NET_ADMIN)"
HELPERS = {"nsenter": "util-linux"}  # programs probes use, and their Debian packages
MAX_PARALLEL = 12  # probes at once; each holds one scratch namespace and two threads


def feature(
    name: str,
    title: str,
    *,
    impact: str = "",
    config: str = "",
    module: str = "",
    tool: str = "",
    package: str = "",
    fix: str = "",
    used: bool = True,
) -> Callable[[ProbeFn], ProbeFn]:
    """Register a probe under NAME; the table shows features in registration order. A
    feature no lab file asks for (used=False) says so as its impact; any other names its
    own."""
    if not impact and used:
        raise ValueError(f"feature probe {name!r}: say what netrig cannot do without it")
    impact = impact or UNUSED

    def register(fn: ProbeFn) -> ProbeFn:
        if name in FEATURES:
            raise ValueError(f"feature probe {name!r} registered twice")
        FEATURES[name] = Feature(name, title, fn, impact, config, module, tool, package, fix, used)
        return fn

    return register


# --------------------------------------------------------------------------- the namespace


class Scratch:
    """What a probe runs with: the calling thread is inside a throwaway namespace.

    `nl` is an rtnetlink socket of that namespace; `run` starts a child that enters it.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._nl: Netlink | None = None

    @property
    def nl(self) -> Netlink:
        if self._nl is None:
            self._nl = Netlink()
        return self._nl

    def run(
        self, argv: list[str], *, stdin: str = "", timeout: float = 3.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a command inside the namespace (nsenter), output captured, C locale."""
        if not shutil.which("nsenter"):
            raise Untested("tool missing: nsenter")
        return subprocess.run(
            ["nsenter", f"--net={self.path}", *argv],
            input=stdin, capture_output=True, text=True, timeout=timeout,
            env={**os.environ, "LC_ALL": "C"}, check=False,
        )

    def veth(self, name: str = "nrp0", peer: str = "nrp1") -> int:
        """Make a veth pair here and return the first end's ifindex (OSError if refused)."""
        reply = veth_add(self.nl, name, peer)
        if not reply.ok:
            raise OSError(reply.code, f"veth: {reply.describe()}")
        return link_get(self.nl, name)[0]

    def close(self) -> None:
        if self._nl is not None:
            self._nl.__exit__()


def _host_netns_inode() -> int:
    """The namespace of the main thread, which netrig never moves (STYLE: no process-wide ns)."""
    return os.stat(f"/proc/{os.getpid()}/ns/net").st_ino


CAP_NET_ADMIN = 12


def _has_cap(bit: int) -> bool:
    """Whether the calling thread has capability BIT in its effective set."""
    with open("/proc/thread-self/status") as fh:
        for line in fh:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def _inside(feat: Feature, path: str, host_inode: int) -> Outcome:
    """Run one probe in the worker thread, after checking it really is not the host's ns."""
    if os.stat("/proc/thread-self/ns/net").st_ino == host_inode:
        return untested("refused: the probe thread is in the host's namespace")
    if feat.name != "netns" and not _has_cap(CAP_NET_ADMIN):
        return untested("EPERM: without CAP_NET_ADMIN nothing can be tried")
    if feat.tool and not shutil.which(feat.tool):
        return untested(f"tool missing: {feat.tool}")
    ns = Scratch(path)
    try:
        return feat.fn(ns)
    except Untested as exc:
        return untested(str(exc))
    except subprocess.TimeoutExpired as exc:
        return untested(f"timed out after {exc.timeout:g} s: {' '.join(map(str, exc.cmd))}")
    except OSError as exc:
        if not exc.errno:
            return missing(str(exc))
        return missing(f"{errno_name(exc.errno)}: {exc.strerror or exc}")
    except Exception as exc:  # a probe bug must show, not pass for a missing feature
        return untested(f"probe failed: {exc!r}")
    finally:
        ns.close()


def _run_one(feat: Feature, host_inode: int) -> FeatureResult:
    start = time.perf_counter()
    try:
        with netns.scratch() as worker:
            path = netns.worker_ns_path(worker)
            outcome = worker.call(lambda: _inside(feat, path, host_inode))
    except OSError as exc:  # no scratch namespace: only `netns` itself is then "missing"
        status: Status = "missing" if feat.name == "netns" else "untested"
        code = errno_name(exc.errno) if exc.errno else type(exc).__name__
        outcome = Outcome(status, f"{code}: cannot make a scratch namespace ({exc.strerror})")
    seconds = time.perf_counter() - start
    if outcome.status == "present":
        return FeatureResult(feat.name, feat.title, "present", outcome.detail, "", "", seconds,
                             feat.used)  # fmt: skip
    return FeatureResult(
        feat.name, feat.title, outcome.status, outcome.detail, feat.impact,
        fix_for(feat, outcome), seconds, feat.used,
    )


# --------------------------------------------------------------------------- fixes


def fix_for(feat: Feature, outcome: Outcome) -> str:
    """The most specific fix this host allows: install a tool, load a module, or a kernel."""
    if outcome.detail.startswith(("EPERM", "EACCES")):
        return ROOT_FIX
    if outcome.detail.startswith("EINVAL: cannot make a scratch namespace"):
        return kernel_fix("CONFIG_NET_NS", "")
    if "cannot make a scratch namespace" in outcome.detail:
        return "see the netns row"
    if outcome.status == "untested" and outcome.detail.startswith("tool missing: "):
        tool = outcome.detail.removeprefix("tool missing: ").split()[0]
        package = feat.package if tool == feat.tool and feat.package else HELPERS.get(tool, tool)
        return f"apt-get install -y {package}"
    if feat.fix:
        return feat.fix
    if feat.config:
        return kernel_fix(feat.config, feat.module)
    return ""


def kernel_fix(config: str, module: str) -> str:
    """What provides CONFIG on this kernel: modprobe, a modules package, or another kernel."""
    release = os.uname().release
    if not os.path.exists("/proc/modules"):
        return (f"kernel built without {config} (and without module support): "
                f"boot a kernel with {config}=y or =m")
    if not module:
        return f"kernel built without {config}: boot a kernel that has it"
    moddir = f"/lib/modules/{release}"
    if not os.path.isdir(moddir):
        return (f"apt-get install -y linux-image-{release} (modules for this kernel), "
                f"then modprobe {module}")
    where = _module_state(moddir, module)
    if where == "builtin":
        return f"{module} is built in yet refused here: see the detail"
    if where == "module":
        return f"modprobe {module}"
    return (f"no {module} module for {release} (kernel built without {config}): "
            f"Ubuntu: apt-get install -y linux-modules-extra-{release}; "
            f"else a kernel with {config}=m")


def _module_state(moddir: str, module: str) -> str:
    """'builtin', 'module' or '' from modules.builtin / modules.dep of the running kernel."""
    needles = {f"/{module}.ko", f"/{module.replace('_', '-')}.ko"}
    for fname, state in (("modules.builtin", "builtin"), ("modules.dep", "module")):
        try:
            with open(os.path.join(moddir, fname)) as fh:
                for line in fh:
                    path = line.split(":", 1)[0]
                    if any(n in path for n in needles):
                        return state
        except OSError:
            continue
    return ""


# --------------------------------------------------------------------------- API

_cache: dict[str, FeatureResult] = {}
_cache_lock = threading.Lock()


def resolve(name: str) -> str:
    """The registered name for NAME or an alias; KeyError with a suggestion otherwise."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key in FEATURES:
        return key
    close = difflib.get_close_matches(key, [*FEATURES, *ALIASES], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise KeyError(f"unknown kernel feature {name!r}{hint}")


def probe_features(
    names: Iterable[str] | None = None, *, fresh: bool = False
) -> dict[str, FeatureResult]:
    """Probe the named features (all by default) in parallel; results cached per process.

    Each probe gets its own scratch namespace, so one probe's leftovers cannot sway another.
    """
    wanted = list(FEATURES) if names is None else list(dict.fromkeys(resolve(n) for n in names))
    with _cache_lock:
        todo = [n for n in wanted if fresh or n not in _cache]
        if todo:
            host_inode = _host_netns_inode()
            workers = min(MAX_PARALLEL, len(todo))
            with ThreadPoolExecutor(workers, thread_name_prefix="doctor") as pool:
                for result in pool.map(lambda n: _run_one(FEATURES[n], host_inode), todo):
                    _cache[result.name] = result
        return {n: _cache[n] for n in wanted}


def has_feature(name: str) -> bool:
    """True when the kernel really did what the feature needs (probed once per process)."""
    key = resolve(name)
    return probe_features([key])[key].present


def clear_cache() -> None:
    """Forget earlier results (after `modprobe`, say)."""
    with _cache_lock:
        _cache.clear()


# =========================================================================== probes
# Helpers shared by several probes.


def _link_kind(ns: Scratch, kind: str, data: bytes = b"", *, lower: bool = False) -> Outcome:
    """Create a link of KIND (on a veth if it needs a lower device) and read its kind back."""
    lower_index = ns.veth() if lower else None
    reply = link_add(ns.nl, kind, "nrprobe", data=data, lower=lower_index)
    if not reply.ok:
        return missing(reply.describe())
    got, _ = link_kind_data(link_get(ns.nl, "nrprobe")[1])
    if got != kind:
        return missing(f"created, but reads back as kind {got!r}")
    return present(f"{kind} link created" + (" on a veth" if lower else ""))


def _qdisc(ns: Scratch, kind: str, **options: Any) -> Outcome:
    """Add a root qdisc of KIND to a veth (pyroute2 encodes the options) and list it back."""
    from pyroute2 import IPRoute
    from pyroute2.netlink.exceptions import NetlinkError

    index = ns.veth()
    with IPRoute() as ipr:
        try:
            ipr.tc("add", kind, index, **options)
        except NetlinkError as exc:
            code = exc.code
            reason = " (no such qdisc in this kernel)" if code == errno.ENOENT else ""
            return missing(f"{errno_name(code)}: {os.strerror(code)}{reason}")
        kinds = [q.get_attr("TCA_KIND") for q in ipr.get_qdiscs(index)]
    if kind not in kinds:
        return missing(f"accepted but not listed (qdiscs: {', '.join(map(str, kinds))})")
    return present(f"{kind} qdisc created on a veth and read back")


def _xdp(ns: Scratch, flags: int, expect: str) -> Outcome:
    """Load XDP_PASS with bpf(2) and attach it to a veth in one mode; check the mode back."""
    index = ns.veth()
    fd = bpf_load_xdp_pass()
    try:
        reply = xdp_attach(ns.nl, index, fd, flags)
    finally:
        os.close(fd)  # the attachment holds the program now
    if not reply.ok:
        return missing(f"attach: {reply.describe()}")
    mode = xdp_attached(link_get(ns.nl, "nrp0")[1])
    if mode != expect:
        return missing(f"attached, but reported as {mode!r} mode")
    return present(f"XDP_PASS loaded and attached to a veth in {expect} mode")


def _iptables_rule(ns: Scratch, cmd: str) -> Outcome:
    """Append an ACCEPT rule to filter/INPUT with CMD and list it back."""
    add = ns.run([cmd, "-w", "5", "-t", "filter", "-A", "INPUT", "-j", "ACCEPT"])
    if add.returncode != 0:
        return missing(_first_line(add.stderr or add.stdout) or f"exit {add.returncode}")
    listed = ns.run([cmd, "-w", "5", "-t", "filter", "-S", "INPUT"])
    if "-A INPUT -j ACCEPT" not in listed.stdout:
        return missing(f"rule accepted but not listed: {_first_line(listed.stdout)!r}")
    version = _first_line(ns.run([cmd, "-V"]).stdout)
    return present(f"rule added and listed ({version})")


def _genl(name: str) -> Outcome:
    try:
        family_id, version = genl_family(name)
    except OSError as exc:
        return missing(str(exc.strerror))
    return present(f"generic netlink family {name} (id {family_id}, version {version})")


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


# --------------------------------------------------------------------------- core


@feature("netns", "network namespaces", config="CONFIG_NET_NS",
         impact="no labs at all: every node is a network namespace")
def _netns(ns: Scratch) -> Outcome:
    inode = os.stat("/proc/thread-self/ns/net").st_ino
    return present(f"scratch namespace net:[{inode}] made, holding {', '.join(link_names(ns.nl))}")


IN_MEMORY = ("tmpfs", "ramfs")


@feature("netns-names", "namespace names in memory (/run/netns on tmpfs)",
         impact="`ip netns add` costs a disk inode per name, up to more than making the "
         "namespace (netrig links its names to one file per lab)",
         fix="mount -t tmpfs -o mode=0755 tmpfs /run/netns  (while `ip netns list` is empty)")
def _netns_names(ns: Scratch) -> Outcome:
    """Naming a namespace (as `ip netns add` does) creates a file in /run/netns. Where /run
    is not a tmpfs that is a disk filesystem's inode: on this VM kind's ext4 0.05-0.9 ms
    each, varying with the filesystem's state, against ~0.35 ms for the namespace itself
    (netrig makes one file per lab and links the other names to it: netns.make_mount_points).
    The verdict goes by the filesystem; the detail has a measurement of one new file."""
    netns.prepare_run_dir()
    kind = _fs_type(netns.NETNS_RUN_DIR)
    cost = netns.name_cost(8) * 1e6
    detail = f"{netns.NETNS_RUN_DIR} is on {kind}: a name cost {cost:.0f} µs now"
    return present(detail) if kind in IN_MEMORY else missing(detail)


def _fs_type(path: str) -> str:
    """The filesystem type of the mount holding path (the longest mount point above it)."""
    best, kind = "", "?"
    with open("/proc/self/mounts") as fh:
        for line in fh:
            fields = line.split()
            point = fields[1].replace("\\040", " ")
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
                best, kind = point, fields[2]
    return kind


@feature("veth", "veth pairs", config="CONFIG_VETH", module="veth",
         impact="no links between nodes: every lab link is a veth pair")
def _veth(ns: Scratch) -> Outcome:
    return from_reply(veth_add(ns.nl, "nrp0", "nrp1"), "veth pair created")


@feature("bridge", "Linux bridge", config="CONFIG_BRIDGE", module="bridge",
         impact="switch nodes and `routing: bridge` labs are refused")
def _bridge(ns: Scratch) -> Outcome:
    return _link_kind(ns, "bridge")


@feature("bridge-stp", "bridge STP", config="CONFIG_BRIDGE", module="bridge",
         impact="switch nodes with STP on are refused (a looped bridge topology would storm)")
def _bridge_stp(ns: Scratch) -> Outcome:
    reply = ns.nl.submit(nlwire.new_bridge("nrbr0", stp=True))
    if not reply.ok:
        return missing(reply.describe())
    _kind, data = link_kind_data(link_get(ns.nl, "nrbr0")[1])
    raw = data.get(nlwire.IFLA_BR_STP_STATE)
    state = struct.unpack("=I", raw[:4])[0] if raw else None
    if state != 1:
        return missing(f"bridge created with stp_state 1 but reads back stp_state {state}")
    return present("bridge created with stp_state 1, read back as 1 (kernel STP)")


# --------------------------------------------------------------------------- XDP


@feature("xdp-native", "XDP native (driver mode) on veth", config="CONFIG_BPF_SYSCALL",
         impact="XDP programs run only in generic (skb) mode: XDP timestamps and filters "
                "measure a slower path than a real driver's")
def _xdp_native(ns: Scratch) -> Outcome:
    return _xdp(ns, XDP_FLAGS_DRV_MODE, "driver")


@feature("xdp-generic", "XDP generic (skb mode)", config="CONFIG_BPF_SYSCALL",
         impact="no XDP at all: XDP timestamping and xdp-filter experiments are refused")
def _xdp_generic(ns: Scratch) -> Outcome:
    return _xdp(ns, XDP_FLAGS_SKB_MODE, "generic")


@feature("xdp-netrig", "netrig's own XDP programs (built with clang + libbpf)",
         config="CONFIG_BPF_SYSCALL", tool="clang", package="clang libbpf-dev",
         impact="`firewall: {engine: xdp}` and the stage_latency measurement are refused")
def _xdp_netrig(ns: Scratch) -> Outcome:
    """Build netrig-xdp and the XDP filter (cached), load it with one rule, count it back."""
    from netrig.native import compile as native_compile

    try:
        helper, obj = native_compile.helper(), native_compile.bpf_object("xdp_filter")
        native_compile.bpf_object("xdp_stamp")
    except native_compile.BuildError as exc:
        return missing(_first_line(str(exc)))
    ns.veth()
    load = ns.run([helper, "filter-load", "nrp0", "native", obj], stdin="drop 240.0.0.1/32\n")
    if load.returncode != 0:
        return missing(_first_line(load.stderr) or f"exit {load.returncode}")
    count = ns.run([helper, "filter-count", "nrp0"])
    if "rules 1" not in count.stdout:
        return missing(f"loaded but not read back: {_first_line(count.stdout)!r}")
    return present("XDP filter built, attached natively to a veth and its rule read back")


# --------------------------------------------------------------------------- firewalls


@feature("nftables", "nftables", config="CONFIG_NF_TABLES", module="nf_tables",
         tool="nft", package="nftables",
         impact="nftables firewall experiments are refused")
def _nftables(ns: Scratch) -> Outcome:
    script = ("add table inet netrig_probe\n"
              "add chain inet netrig_probe input { type filter hook input priority 0; }\n"
              "add rule inet netrig_probe input accept\n")
    done = ns.run(["nft", "-f", "-"], stdin=script)
    if done.returncode != 0:
        return missing(_first_line(done.stderr) or f"nft exit {done.returncode}")
    listed = ns.run(["nft", "list", "table", "inet", "netrig_probe"])
    if "hook input" not in listed.stdout:
        return missing(f"accepted but not listed: {_first_line(listed.stderr or listed.stdout)!r}")
    return present("table, hooked chain and rule added with nft")


@feature("iptables", "iptables (legacy x_tables)", config="CONFIG_IP_NF_IPTABLES_LEGACY",
         module="ip_tables", tool="iptables-legacy", package="iptables",
         impact="iptables-legacy firewall experiments are refused")
def _iptables(ns: Scratch) -> Outcome:
    return _iptables_rule(ns, "iptables-legacy")


@feature("iptables-nft", "iptables over nftables", config="CONFIG_NFT_COMPAT", module="nft_compat",
         tool="iptables-nft", package="iptables",
         impact="iptables rules through the nf_tables backend are refused")
def _iptables_nft(ns: Scratch) -> Outcome:
    return _iptables_rule(ns, "iptables-nft")


IPSET_SUBSYS, IPSET_CMD_CREATE, IPSET_CMD_LIST, IPSET_PROTOCOL = 6, 2, 7, 7
IPSET_ATTR_PROTOCOL, IPSET_ATTR_SETNAME, IPSET_ATTR_TYPENAME = 1, 2, 3
IPSET_ATTR_REVISION, IPSET_ATTR_FAMILY, IPSET_ATTR_DATA = 4, 5, 7
NFPROTO_IPV4 = 2


@feature("ipset", "ipset (hash:ip)", config="CONFIG_IP_SET_HASH_IP", module="ip_set_hash_ip",
         used=False)
def _ipset(ns: Scratch) -> Outcome:
    """Create and list a hash:ip set over nfnetlink (no ipset tool needed)."""
    nfgen = struct.pack("=BBH", socket.AF_INET, 0, 0)
    proto = attr(IPSET_ATTR_PROTOCOL, bytes([IPSET_PROTOCOL]))
    name = attr_str(IPSET_ATTR_SETNAME, "netrig_probe")
    create = (nfgen + proto + name + attr_str(IPSET_ATTR_TYPENAME, "hash:ip")
              + attr(IPSET_ATTR_REVISION, b"\0") + attr(IPSET_ATTR_FAMILY, bytes([NFPROTO_IPV4]))
              + attr(IPSET_ATTR_DATA | NLA_F_NESTED, b""))
    with Netlink(NETLINK_NETFILTER) as nl:
        made = nl.send((IPSET_SUBSYS << 8) | IPSET_CMD_CREATE, CREATE, create)
        if not made.ok:
            return missing(made.describe())
        listed = nl.send((IPSET_SUBSYS << 8) | IPSET_CMD_LIST, 0, nfgen + proto + name)
    if not listed.ok or not listed.data:
        return missing(f"set created but not listed: {listed.describe()}")
    return present("hash:ip set created and listed over nfnetlink")


# --------------------------------------------------------------------------- routing


@feature("multipath", "multipath routes (ECMP)", config="CONFIG_IP_ROUTE_MULTIPATH",
         impact="`routing: ecmp` labs are refused (no multipath routes)")
def _multipath(ns: Scratch) -> Outcome:
    nl = ns.nl
    hops = []
    for i in range(2):
        index = ns.veth(f"nrm{i}", f"nrm{i}p")
        peer = link_get(nl, f"nrm{i}p")[0]
        for req in (nlwire.new_addr(index, f"192.0.2.{2 * i}", 31),
                    nlwire.set_link(index, up=True), nlwire.set_link(peer, up=True)):
            reply = nl.submit(req)
            if not reply.ok:
                raise OSError(reply.code, f"{req.what}: {reply.describe()}")
        hops.append((f"192.0.2.{2 * i + 1}", index))
    reply = nl.submit(nlwire.new_route("198.51.100.0", 24, hops))
    if not reply.ok:
        return missing(reply.describe())
    dump = nl.send(nlwire.RTM_GETROUTE, nlwire.NLM_F_DUMP, struct.pack("=BBBBBBBBI", socket.AF_INET,
                                                                    0, 0, 0, 0, 0, 0, 0, 0))
    for _mtype, body in dump.data:
        attrs = nlwire.parse_attrs(body, 12)
        if attrs.get(nlwire.RTA_DST) == bytes([198, 51, 100, 0]) and nlwire.RTA_MULTIPATH in attrs:
            return present("route with two next hops added and read back")
    return missing("route accepted but not read back with RTA_MULTIPATH")


AF_MPLS = 28


@feature("mpls", "MPLS forwarding", config="CONFIG_MPLS_ROUTING", module="mpls_router",
         used=False)
def _mpls(ns: Scratch) -> Outcome:
    """Enable labels (a per-namespace sysctl that exists only with MPLS routing), add a route."""
    try:
        netns.write_sysctl("net.mpls.platform_labels", 128)
        sysctl = ""
    except FileNotFoundError:
        sysctl = "; no net.mpls.platform_labels sysctl"
    label = struct.pack(">I", (100 << 12) | 0x100)  # label 100, bottom of stack
    body = struct.pack("=BBBBBBBBI", AF_MPLS, 20, 0, 0, nlwire.RT_TABLE_MAIN, nlwire.RTPROT_STATIC,
                       nlwire.RT_SCOPE_UNIVERSE, nlwire.RTN_UNICAST, 0)
    body += attr(nlwire.RTA_DST, label) + attr_u32(nlwire.RTA_OIF, link_get(ns.nl, "lo")[0])
    reply = ns.nl.send(nlwire.RTM_NEWROUTE, CREATE, body)
    if not reply.ok:
        return missing(f"label route: {reply.describe()}{sysctl}")
    return present("platform_labels set and a label route added")


@feature("vrf", "VRF devices", config="CONFIG_NET_VRF", module="vrf",
         used=False)
def _vrf(ns: Scratch) -> Outcome:
    return _link_kind(ns, "vrf", attr_u32(1, 100))  # IFLA_VRF_TABLE


# --------------------------------------------------------------------------- qdiscs


@feature("htb", "HTB qdisc", config="CONFIG_NET_SCH_HTB", module="sch_htb",
         used=False)
def _htb(ns: Scratch) -> Outcome:
    return _qdisc(ns, "htb", default=0x10)


@feature("tbf", "TBF qdisc", config="CONFIG_NET_SCH_TBF", module="sch_tbf",
         impact="rate-limited links are refused (netrig shapes them with TBF)")
def _tbf(ns: Scratch) -> Outcome:
    return _qdisc(ns, "tbf", rate="10mbit", burst=10000, latency="50ms")


@feature("netem", "netem qdisc", config="CONFIG_NET_SCH_NETEM", module="sch_netem",
         impact="delay/loss emulation unavailable: links with delay/loss/jitter are refused")
def _netem(ns: Scratch) -> Outcome:
    return _qdisc(ns, "netem", delay=10000, loss=1)


@feature("fq", "fq qdisc", config="CONFIG_NET_SCH_FQ", module="sch_fq",
         used=False)
def _fq(ns: Scratch) -> Outcome:
    return _qdisc(ns, "fq")


@feature("fq_codel", "fq_codel qdisc", config="CONFIG_NET_SCH_FQ_CODEL", module="sch_fq_codel",
         used=False)
def _fq_codel(ns: Scratch) -> Outcome:
    return _qdisc(ns, "fq_codel")


@feature("ifb", "ifb (ingress shaping)", config="CONFIG_IFB", module="ifb",
         used=False)
def _ifb(ns: Scratch) -> Outcome:
    return _link_kind(ns, "ifb")


# --------------------------------------------------------------------------- link kinds


@feature("vxlan", "VXLAN", config="CONFIG_VXLAN", module="vxlan",
         impact="VXLAN overlay links are refused")
def _vxlan(ns: Scratch) -> Outcome:
    data = attr_u32(1, 42) + attr(15, struct.pack(">H", 4789))  # IFLA_VXLAN_ID, _PORT
    return _link_kind(ns, "vxlan", data)


@feature("macvlan", "macvlan", config="CONFIG_MACVLAN", module="macvlan",
         used=False)
def _macvlan(ns: Scratch) -> Outcome:
    return _link_kind(ns, "macvlan", attr_u32(1, 4), lower=True)  # IFLA_MACVLAN_MODE bridge


@feature("ipvlan", "ipvlan", config="CONFIG_IPVLAN", module="ipvlan",
         used=False)
def _ipvlan(ns: Scratch) -> Outcome:
    return _link_kind(ns, "ipvlan", attr(1, struct.pack("=H", 0)), lower=True)  # mode l2


@feature("dummy", "dummy interfaces", config="CONFIG_DUMMY", module="dummy",
         used=False)
def _dummy(ns: Scratch) -> Outcome:
    return _link_kind(ns, "dummy")


@feature("vlan", "802.1Q VLAN", config="CONFIG_VLAN_8021Q", module="8021q",
         used=False)
def _vlan(ns: Scratch) -> Outcome:
    return _link_kind(ns, "vlan", attr(1, struct.pack("=H", 10)), lower=True)  # IFLA_VLAN_ID


@feature("bonding", "bonding", config="CONFIG_BONDING", module="bonding",
         used=False)
def _bonding(ns: Scratch) -> Outcome:
    return _link_kind(ns, "bond")


@feature("wireguard", "WireGuard", config="CONFIG_WIREGUARD", module="wireguard",
         used=False)
def _wireguard(ns: Scratch) -> Outcome:
    return _link_kind(ns, "wireguard")


@feature("gre", "GRE tunnels", config="CONFIG_NET_IPGRE", module="ip_gre",
         used=False)
def _gre(ns: Scratch) -> Outcome:
    return _link_kind(ns, "gre")


@feature("geneve", "Geneve tunnels", config="CONFIG_GENEVE", module="geneve",
         used=False)
def _geneve(ns: Scratch) -> Outcome:
    data = attr_u32(1, 42) + attr(2, bytes([192, 0, 2, 1]))  # IFLA_GENEVE_ID, _REMOTE
    return _link_kind(ns, "geneve", data)


# --------------------------------------------------------------------------- mesh, switch, LB


@feature("batman-adv", "batman-adv mesh", config="CONFIG_BATMAN_ADV", module="batman-adv",
         impact="BATMAN labs cannot use the kernel's batman-adv")
def _batman_adv(ns: Scratch) -> Outcome:
    return _link_kind(ns, "batadv")


@feature("openvswitch", "Open vSwitch datapath", config="CONFIG_OPENVSWITCH", module="openvswitch",
         impact="OVS switch nodes cannot use the kernel datapath")
def _openvswitch(ns: Scratch) -> Outcome:
    return _genl("ovs_datapath")


@feature("ipvs", "IPVS load balancer", config="CONFIG_IP_VS", module="ip_vs",
         used=False)
def _ipvs(ns: Scratch) -> Outcome:
    return _genl("IPVS")


@feature("af-packet", "AF_PACKET sockets with qdisc bypass", config="CONFIG_PACKET",
         module="af_packet", impact="the pps measurement cannot send (netrig_gen and trafgen "
         "both write frames to AF_PACKET sockets)")
def _af_packet(ns: Scratch) -> Outcome:
    sol_packet, packet_qdisc_bypass = 263, 20
    try:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as sock:
            sock.setsockopt(sol_packet, packet_qdisc_bypass, 1)
    except OSError as exc:
        return missing(f"AF_PACKET socket: {exc.strerror or exc}")
    return present("AF_PACKET raw socket opened, PACKET_QDISC_BYPASS set")


@feature("pktgen", "pktgen", config="CONFIG_NET_PKTGEN", module="pktgen",
         used=False)
def _pktgen(ns: Scratch) -> Outcome:
    ctl = "/proc/thread-self/net/pktgen/pgctrl"
    if not os.path.exists(ctl):
        return missing("no /proc/net/pktgen in a namespace")
    return present("/proc/net/pktgen/pgctrl present")
