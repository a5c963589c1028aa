"""Mininet topology files (*.py) read as netrig lab data, without Mininet installed.

    netrig up topo.py                 # the file's only Topo subclass, or its only `topos` entry
    netrig up topo.py --topo tree,2   # an entry of its `topos` dict (or Mininet's own), args

The file is run (it is Python: only run files you trust, as with `mn --custom`) with
`mininet.topo`, `mininet.topolib`, `mininet.node`, `mininet.link`, `mininet.net`,
`mininet.log`, `mininet.util` and `mininet.cli` replaced, during that one import, by
netrig's compatible modules: `Topo` records addHost / addSwitch / addNode / addLink
(bw, delay, jitter, loss, intfName1/2, params1/2, port1/2) as Mininet's does; building a
`Mininet` object is refused (netrig builds the lab). Then, as Mininet would:
- switches are Linux bridges (no controller: they learn, as Mininet's default does);
- interfaces are named NODE-ethPORT, ports numbered as Mininet numbers them;
- hosts (every non-switch node) are addressed in natural sorted order from ipBase, host i
  getting ipBase + i, unless `ip=` gives one; `params1/2 ip=` addresses a link end;
  `defaultRoute=` becomes an `ip route add default …` exec line. Mininet's ipBase is
  10.0.0.0/8, which netrig never uses: here it is 198.18.0.0/15 (netrig's pool), so h1 is
  198.18.0.1/15;
- `bw` (Mbit/s) is a rate limit; `delay`, `jitter` and `loss` need netem, which netrig
  refuses where the kernel lacks it, at the addLink line.
Options with no meaning here (cls, cpu, mac, dpid, …) are noted and ignored.
"""

from __future__ import annotations

import functools
import os
import re
import runpy
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from ipaddress import IPv4Network, ip_address
from typing import Any

from netrig.model import yamlmarks
from netrig.model.models import MAX_NODES
from netrig.model.problems import Problem, SpecError, note

IP_BASE = IPv4Network("198.18.0.0/15")  # instead of Mininet's 10.0.0.0/8
SHIMMED = ("mininet", "mininet.topo", "mininet.topolib", "mininet.node", "mininet.link",
           "mininet.net", "mininet.log", "mininet.util", "mininet.cli", "mininet.clean")  # fmt: skip
HOST_KEYS = {"ip", "defaultRoute", "isSwitch", "stp"}
LINK_KEYS = {"bw", "delay", "jitter", "loss", "intfName1", "intfName2", "params1", "params2",
             "node1", "node2", "port1", "port2"}  # fmt: skip
IGNORED = {"cls", "mac", "cpu", "cores", "inNamespace", "privateDirs", "dpid", "protocols",
           "failMode", "listenPort", "inband", "datapath", "batch", "max_queue_size",
           "use_htb", "use_tbf", "enable_ecn", "enable_red", "speedup", "smooth_change",
           "prio", "sched", "period_us"}  # fmt: skip


def natural(text: str) -> list[Any]:
    """Mininet's natural sort key: h2 before h10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(text))]


class _MultiGraph:
    """The part of Mininet's MultiGraph its Topo uses: nodes with info, keyed edges."""

    def __init__(self) -> None:
        self.node: dict[str, dict[str, Any]] = {}
        self.edge: dict[str, dict[str, dict[Any, dict[str, Any]]]] = {}

    def add_node(self, node: str, attr_dict: dict[str, Any] | None = None, **attrs: Any) -> None:
        self.node[node] = {**(attr_dict or {}), **attrs}

    def add_edge(self, src: str, dst: str, key: Any = None, attr_dict: Any = None) -> Any:
        keys = self.edge.setdefault(src, {}).setdefault(dst, {})
        back = self.edge.setdefault(dst, {}).setdefault(src, {})
        key = len(keys) if key is None else key
        keys[key] = back[key] = dict(attr_dict or {})
        return key

    def nodes(self) -> list[str]:
        return list(self.node)

    def edges_iter(self) -> Iterator[tuple[str, str, Any, dict[str, Any]]]:
        seen: set[tuple[frozenset[str], Any]] = set()
        for src, dsts in self.edge.items():
            for dst, keys in dsts.items():
                for key, info in keys.items():
                    if (frozenset((src, dst)), key) not in seen:
                        seen.add((frozenset((src, dst)), key))
                        yield src, dst, key, info


class Topo:
    """Mininet's Topo API (mininet/topo.py): a graph of nodes and links with their options."""

    def __init__(self, *args: Any, **params: Any) -> None:
        self.g = _MultiGraph()
        self.hopts = params.pop("hopts", {})
        self.sopts = params.pop("sopts", {})
        self.lopts = params.pop("lopts", {})
        self.ports: dict[str, dict[int, tuple[str, int]]] = {}
        self.lines: dict[Any, int] = {}  # node name or link key → the file's line
        self.build(*args, **params)

    def build(self, *args: Any, **params: Any) -> None:
        """Override this to add nodes and links (Mininet 2.2+)."""

    def _line(self, what: Any) -> None:
        """The line of the topology file that added WHAT (the innermost call from it)."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == _LOADING.get("file"):
                self.lines[what] = frame.f_lineno
                return
            frame = frame.f_back  # type: ignore[assignment]

    def addNode(self, name: str, **opts: Any) -> str:
        if len(self.g.node) >= MAX_NODES and name not in self.g.node:  # linear,100000: GBs
            raise ValueError(f"more than {MAX_NODES:,} nodes: a lab has at most {MAX_NODES:,}")
        self.g.add_node(name, **opts)
        self._line(name)
        return name

    def addHost(self, name: str, **opts: Any) -> str:
        if not opts and self.hopts:
            opts = self.hopts
        return self.addNode(name, **opts)

    def addSwitch(self, name: str, **opts: Any) -> str:
        if not opts and self.sopts:
            opts = self.sopts
        return self.addNode(name, isSwitch=True, **opts)

    def addLink(
        self,
        node1: str,
        node2: str,
        port1: int | None = None,
        port2: int | None = None,
        key: Any = None,
        **opts: Any,
    ) -> Any:
        if not opts and self.lopts:
            opts = self.lopts
        for node in (node1, node2):  # Mininet's own KeyError: 'h9' named no line
            if node not in self.g.node:
                raise ValueError(f"addLink: no node {node!r} (add it with addHost or addSwitch)")
        port1, port2 = self.addPort(node1, node2, port1, port2)
        info = {**opts, "node1": node1, "node2": node2, "port1": port1, "port2": port2}
        key = self.g.add_edge(node1, node2, key, info)
        self._line((node1, node2, key))
        return key

    def nodes(self, sort: bool = True) -> list[str]:
        return sorted(self.g.nodes(), key=natural) if sort else self.g.nodes()

    def isSwitch(self, n: str) -> bool:
        return bool(self.g.node[n].get("isSwitch", False))

    def switches(self, sort: bool = True) -> list[str]:
        return [n for n in self.nodes(sort) if self.isSwitch(n)]

    def hosts(self, sort: bool = True) -> list[str]:
        return [n for n in self.nodes(sort) if not self.isSwitch(n)]

    def iterLinks(self, withKeys: bool = False, withInfo: bool = False) -> Iterator[Any]:
        for _src, _dst, key, info in self.g.edges_iter():
            node1, node2 = info["node1"], info["node2"]
            if withKeys:
                yield (node1, node2, key, info) if withInfo else (node1, node2, key)
            else:
                yield (node1, node2, info) if withInfo else (node1, node2)

    def links(
        self, sort: bool = False, withKeys: bool = False, withInfo: bool = False
    ) -> list[Any]:
        links = list(self.iterLinks(withKeys, withInfo))
        return sorted(links, key=lambda x: (natural(x[0]), natural(x[1]))) if sort else links

    def addPort(
        self, src: str, dst: str, sport: int | None = None, dport: int | None = None
    ) -> tuple[int, int]:
        """Port numbers as Mininet gives them: switches count from 1, other nodes from 0."""
        self.ports.setdefault(src, {})
        self.ports.setdefault(dst, {})
        if sport is None:
            sport = len(self.ports[src]) + (1 if self.isSwitch(src) else 0)
        if dport is None:
            dport = len(self.ports[dst]) + (1 if self.isSwitch(dst) else 0)
        self.ports[src][sport] = (dst, dport)
        self.ports[dst][dport] = (src, sport)
        return sport, dport

    def port(self, src: str, dst: str) -> Any:
        found = [(p, q) for p, (n, q) in self.ports.get(src, {}).items() if n == dst]
        return found[0] if len(found) == 1 else found

    def nodeInfo(self, name: str) -> dict[str, Any]:
        return self.g.node[name]

    def setNodeInfo(self, name: str, info: dict[str, Any]) -> None:
        self.g.node[name] = dict(info)

    def linkInfo(self, src: str, dst: str, key: Any = None) -> dict[str, Any]:
        keys = self.g.edge[src][dst]
        return keys[key if key is not None else next(iter(keys))]


class SingleSwitchTopo(Topo):
    def build(self, k: int = 2, **_opts: Any) -> None:
        switch = self.addSwitch("s1")
        for h in range(1, k + 1):
            self.addLink(self.addHost(f"h{h}"), switch)


class SingleSwitchReversedTopo(Topo):
    def build(self, k: int = 2) -> None:
        switch = self.addSwitch("s1")
        for h in range(1, k + 1):
            self.addLink(self.addHost(f"h{h}"), switch, port1=0, port2=k - h + 1)


class MinimalTopo(SingleSwitchTopo):
    def build(self, **_opts: Any) -> None:  # type: ignore[override]  # as Mininet's: no k
        super().build(k=2)


class LinearTopo(Topo):
    def build(self, k: int = 2, n: int = 1, **_opts: Any) -> None:
        last = None
        for i in range(1, k + 1):
            switch = self.addSwitch(f"s{i}")
            for j in range(1, n + 1):
                host = self.addHost(f"h{i}" if n == 1 else f"h{i}s{j}")
                self.addLink(host, switch)
            if last:
                self.addLink(switch, last)
            last = switch


class TreeTopo(Topo):
    def build(self, depth: int = 1, fanout: int = 2) -> None:
        self.hostNum, self.switchNum = 1, 1
        self._tree(depth, fanout)

    def _tree(self, depth: int, fanout: int) -> str:
        if depth > 0:
            node = self.addSwitch(f"s{self.switchNum}")
            self.switchNum += 1
            for _ in range(fanout):
                self.addLink(node, self._tree(depth - 1, fanout))
        else:
            node = self.addHost(f"h{self.hostNum}")
            self.hostNum += 1
        return node


BUILTIN_TOPOS = {
    "minimal": MinimalTopo,
    "single": SingleSwitchTopo,
    "reversed": SingleSwitchReversedTopo,
    "linear": LinearTopo,
    "tree": TreeTopo,
}


class _NotHere:
    """Mininet's runtime classes: a topology file may name them; netrig builds the lab."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            f"{type(self).__name__}: netrig builds the lab itself; a topology file for "
            "netrig only describes it (a Topo class)"
        )


def _runtime_class(name: str) -> type:
    return type(name, (_NotHere,), {})


def _shim_modules() -> dict[str, types.ModuleType]:
    mods = {name: types.ModuleType(name) for name in SHIMMED}
    mods["mininet"].__path__ = []  # a package
    topo = mods["mininet.topo"]
    for cls in (Topo, SingleSwitchTopo, SingleSwitchReversedTopo, MinimalTopo, LinearTopo):
        setattr(topo, cls.__name__, cls)
    mods["mininet.topolib"].TreeTopo = TreeTopo  # type: ignore[attr-defined]
    for name in ("Node", "Host", "CPULimitedHost", "Switch", "OVSSwitch", "OVSKernelSwitch",
                 "UserSwitch", "LinuxBridge", "OVSBridge", "Controller", "OVSController",
                 "RemoteController", "NOX", "Ryu", "DefaultController"):  # fmt: skip
        setattr(mods["mininet.node"], name, _runtime_class(name))
    for name in ("Link", "TCLink", "Intf", "TCIntf", "OVSLink", "TCULink"):
        setattr(mods["mininet.link"], name, _runtime_class(name))
    mods["mininet.net"].Mininet = _runtime_class("Mininet")  # type: ignore[attr-defined]
    mods["mininet.cli"].CLI = _runtime_class("CLI")  # type: ignore[attr-defined]
    log = mods["mininet.log"]
    for name in ("setLogLevel", "info", "debug", "output", "warn", "warning", "error"):
        setattr(log, name, lambda *_a, **_k: None)
    util = mods["mininet.util"]
    util.irange = lambda start, end: range(start, end + 1)  # type: ignore[attr-defined]
    util.natural = natural  # type: ignore[attr-defined]
    util.dumpNodeConnections = lambda *_a, **_k: None  # type: ignore[attr-defined]
    for sub in SHIMMED[1:]:
        setattr(mods["mininet"], sub.split(".")[1], mods[sub])
    return mods


_LOADING: dict[str, str] = {}


@contextmanager
def _shimmed(path: str) -> Iterator[None]:
    """netrig's mininet modules in sys.modules for the duration of one file's import only."""
    saved = {name: sys.modules.get(name) for name in SHIMMED}
    sys.modules.update(_shim_modules())
    _LOADING["file"] = path
    try:
        yield
    finally:
        _LOADING.clear()
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _error_line(exc: BaseException, path: str) -> int | None:
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None and isinstance(exc, SyntaxError) and exc.filename == path:
        line = exc.lineno
    return line


def load_topo(path: str, topo: str | None = None) -> tuple[Topo, str]:
    """Run the file and build its Topo: (the topology, the name it was chosen by)."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise SpecError([Problem(path, "cannot read: No such file or directory")])
    with open(path, "rb") as fh:  # Python's own message for a NUL has no line
        source = fh.read()
    nul = source.find(b"\0")
    if nul >= 0:
        at = source.count(b"\n", 0, nul) + 1
        raise SpecError([Problem(f"{path}:{at}", "not Python source: a NUL byte here")])
    with _shimmed(path):
        try:
            namespace = runpy.run_path(path, run_name="__netrig_topology__")
            name, factory, args = _choose(namespace, path, topo)
            built = factory(*args)
        except SpecError:
            raise
        except (Exception, SystemExit) as exc:  # an exit: `up` had exited 0 with no lab
            line = _error_line(exc, path)
            where = f"{path}:{line}" if line else path
            said = (
                f"the file called exit ({exc.code}) while its topology was read"
                if isinstance(exc, SystemExit)
                else f"{type(exc).__name__}: {exc}"
            )
            raise SpecError([Problem(where, said)]) from None
    if not isinstance(built, Topo):
        raise SpecError([Problem(path, f"topology {name!r} did not give a Topo object")])
    return built, name


def _choose(namespace: dict[str, Any], path: str, topo: str | None) -> tuple[str, Any, list[Any]]:
    found = namespace.get("topos")
    topos: dict[str, Any] = found if isinstance(found, dict) else {}
    if topo is not None:
        name, *raw = topo.split(",")
        args = [_arg(a) for a in raw if "=" not in a]
        # Mininet's own syntax takes keywords too: tree,depth=2,fanout=3
        kwargs = {k: _arg(v) for k, _, v in (a.partition("=") for a in raw if "=" in a)}
        if name in topos:
            return name, functools.partial(topos[name], **kwargs), args
        if name in BUILTIN_TOPOS:
            return name, functools.partial(BUILTIN_TOPOS[name], **kwargs), args
        known = ", ".join([*topos, *BUILTIN_TOPOS])
        raise SpecError([Problem("--topo", f"no topology {name!r} in {path}; known: {known}")])
    if len(topos) == 1:
        ((name, factory),) = topos.items()
        return name, factory, []
    if len(topos) > 1:
        raise SpecError([Problem(path, f"the file's topos are {', '.join(topos)}: pick one "
                                       "with --topo NAME")])  # fmt: skip
    own = [v for v in namespace.values() if isinstance(v, type) and issubclass(v, Topo)
           and v.__module__ == "__netrig_topology__"]  # fmt: skip
    if len(own) != 1:
        found = ", ".join(c.__name__ for c in own) or "none"
        how = (" (--topo names a topology of the `topos` dict, or a built-in one)"
               if len(own) > 1 else "")
        raise SpecError([Problem(path, f"a topology file needs one Topo subclass or a `topos` "
                                       f"dict, e.g. topos = {{'mine': MyTopo}} (Topo subclasses "
                                       f"found: {found}){how}")])  # fmt: skip
    return own[0].__name__, own[0], []


def _arg(text: str) -> Any:
    """Mininet's --topo arguments: numbers as numbers, the rest as text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def lab_doc(path: str, topo: str | None = None) -> yamlmarks.MarkedDoc:
    """A Mininet topology file → netrig lab data, marked at the lines that added each part."""
    built, _name = load_topo(path, topo)
    path = os.path.abspath(path)
    marks: dict[yamlmarks.KeyPath, yamlmarks.Mark] = {}

    def mark(at: yamlmarks.KeyPath, what: Any) -> None:
        line = built.lines.get(what)
        if line:
            marks[at] = yamlmarks.Mark(line, 1)

    def where(what: Any) -> str:
        return f"{path}:{built.lines[what]}" if what in built.lines else path

    stem = re.sub(r"[^A-Za-z0-9_.-]", "-", os.path.basename(path).removesuffix(".py"))
    nodes: list[dict[str, Any]] = []
    index_of: dict[str, int] = {}
    for name in built.nodes():
        info = built.nodeInfo(name)
        node: dict[str, Any] = {"name": name}
        if built.isSwitch(name):
            node["kind"] = "switch"
            if info.get("stp"):
                node["stp"] = True
        for key in info:
            if key in IGNORED:
                note(where(name), f"{name}: Mininet option {key!r} noted and ignored")
            elif key not in HOST_KEYS:
                note(where(name), f"{name}: Mininet option {key!r} is not known to netrig; "
                     "ignored")  # fmt: skip
        route = info.get("defaultRoute")
        if route and not built.isSwitch(name):
            node["exec"] = [f"ip route add default {route}"]
        index_of[name] = len(nodes)
        mark(("nodes", len(nodes)), name)
        nodes.append(node)
    links: list[dict[str, Any]] = []
    ends: dict[str, list[tuple[int, str, str]]] = {}  # node → (port, ifname, link end key)
    for node1, node2, key, info in built.links(withKeys=True, withInfo=True):
        link: dict[str, Any] = {"a": node1, "b": node2}
        link["a_ifname"] = info.get("intfName1") or f"{node1}-eth{info['port1']}"
        link["b_ifname"] = info.get("intfName2") or f"{node2}-eth{info['port2']}"
        for end, params in (("a", info.get("params1")), ("b", info.get("params2"))):
            if isinstance(params, dict) and params.get("ip"):
                link[f"{end}_addr"] = [_with_prefix(str(params["ip"]))]
        if info.get("bw"):
            link["rate"] = f"{_number(info, 'bw', where((node1, node2, key)))}mbit"
        for opt in ("delay", "jitter"):
            if info.get(opt):
                link[opt] = str(info[opt])
        if info.get("loss"):
            link["loss"] = f"{_number(info, 'loss', where((node1, node2, key)))}%"
        for opt in info:
            if opt in IGNORED:
                note(where((node1, node2, key)), f"link {node1}–{node2}: Mininet option "
                     f"{opt!r} noted and ignored")  # fmt: skip
            elif opt not in LINK_KEYS:
                note(where((node1, node2, key)), f"link {node1}–{node2}: Mininet option "
                     f"{opt!r} is not known to netrig; ignored")  # fmt: skip
        at = len(links)
        mark(("links", at), (node1, node2, key))
        for field in ("a", "b", "rate", "delay", "jitter", "loss", "a_addr", "b_addr"):
            mark(("links", at, field), (node1, node2, key))
        ends.setdefault(node1, []).append((info["port1"], at, "a"))  # type: ignore[arg-type]
        ends.setdefault(node2, []).append((info["port2"], at, "b"))  # type: ignore[arg-type]
        links.append(link)
    _address_hosts(built, links, ends, [where(k) for k in built.links(withKeys=True)])
    data = {
        "name": stem[:20] or "mininet",
        "nodes": nodes,
        "links": links,
        "routing": {"protocol": "none"},
        "addressing": {"auto": False, "loopbacks": False},
        "check": {"reachability": "none"},
    }
    marks[()] = yamlmarks.Mark(1, 1)
    return yamlmarks.MarkedDoc(data, path, marks, dict(marks))


def _number(info: dict[str, Any], key: str, where: str) -> str:
    """A link's `bw=`/`loss=` as Mininet takes them (a number, or its text); anything else
    is refused at the addLink line (bw='fast' had been a ValueError traceback)."""
    value = info[key]
    try:
        if isinstance(value, bool):
            raise TypeError
        return f"{float(value):g}"
    except (TypeError, ValueError):
        unit = "Mbit/s" if key == "bw" else "%"
        raise SpecError(
            [Problem(where, f"{key}={value!r}: a number ({unit}) is needed")]
        ) from None


def _with_prefix(ip: str) -> str:
    return ip if "/" in ip else f"{ip}/{IP_BASE.prefixlen}"


def _address_hosts(
    built: Topo,
    links: list[dict[str, Any]],
    ends: dict[str, list[Any]],
    link_where: list[str],
) -> None:
    """Mininet's addressing: host i (natural order) gets ipBase + i on its default interface
    (its lowest port), unless ip= gives one; that overrides a params ip there."""
    for number, host in enumerate(built.hosts(), start=1):
        ip = built.nodeInfo(host).get("ip")
        auto = ip_address(int(IP_BASE.network_address) + number)
        cidr = _with_prefix(str(ip)) if ip else f"{auto}/{IP_BASE.prefixlen}"
        if not ends.get(host):
            continue  # no interface: nothing to address (Mininet would address lo's peer)
        _port, at, end = min(ends[host], key=lambda e: e[0])
        given = links[at].get(f"{end}_addr")
        if given and given != [cidr]:
            note(link_where[at], f"{host}: its default interface {links[at][f'{end}_ifname']} "
                 f"gets the host's address {cidr}, not params ip {given[0]} (Mininet does "
                 f"the same; give ip= to addHost)")  # fmt: skip
        links[at][f"{end}_addr"] = [cidr]
