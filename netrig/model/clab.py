"""containerlab topology files (*.clab.yml) read as netrig lab data.

What runs, and how (https://containerlab.dev/manual/topo-def-file/):
- `kind: linux` nodes are namespaces running the host's programs; `cmd` is a supervised
  daemon, `exec` lines run in order once the lab is up (package installs with apk, apt-get,
  yum… are skipped with a note: there is no image), `binds` (relative to the file) are
  mounted into the node's private view of the filesystem (a target the host lacks is
  made in an overlay only the node sees); a node whose image is FRR
  (frrouting/frr) and has no `cmd` runs Debian's FRR (netrig.services.frr) with the files
  its binds give for /etc/frr;
- `bridge` and `ovs-bridge` nodes are switch nodes (a Linux bridge, Open vSwitch) netrig
  creates; they need not exist beforehand;
- links: short (`endpoints: ["a:eth1", "b:eth1"]`) and extended (`type: veth`) with
  interface names and `mtu`;
- `defaults`, `kinds` and `groups` are inherited as containerlab does (node, then its
  group, then its kind, then defaults; binds merged, the most specific winning per path);
- `${VAR}`, `${VAR:=default}`, `${VAR:-default}` are substituted from the environment
  first; `$$` is a literal `$`;
- `network-mode: container:X` shares X's network namespace;
- management network, ports, health checks, images and the like are noted and ignored.
Addresses and routes are the file's business (its exec lines): netrig assigns none, and
`up` checks no reachability. Anything else (vendor and VM kinds, other link types, an
unrendered template) is refused at its file:line, before anything is created.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from ipaddress import ip_interface
from typing import Any

from netrig.model import yamlmarks
from netrig.model.problems import Problem, SpecError, note

Path = tuple[str | int, ...]
HOST_KINDS = {"linux"}
SWITCH_KINDS = {"bridge": "linux", "ovs-bridge": "ovs"}
TOP_KEYS = {"name", "prefix", "mgmt", "topology", "settings", "debug"}
TOPOLOGY_KEYS = {"nodes", "links", "defaults", "kinds", "groups"}
NODE_KEYS = {"kind", "image", "group", "exec", "cmd", "binds", "network-mode"}
IGNORED_NODE_KEYS = {
    "type", "image-pull-policy", "restart-policy", "license", "position", "entrypoint",
    "startup-config", "startup-delay", "enforce-startup-config", "suppress-startup-config",
    "auto-remove", "ports", "user", "env", "env-files", "labels", "mgmt-ipv4", "mgmt-ipv6",
    "mgmt_ipv4", "mgmt_ipv6", "publish", "runtime", "cpu", "cpu-set", "memory", "shm-size",
    "cap-add", "devices", "sysctls", "extras", "dns", "certificate", "healthcheck", "stages",
    "wait-for", "aliases", "config", "components", "kernel", "subject", "sans",
}  # fmt: skip
LINK_KEYS = {"endpoints", "type", "mtu", "labels", "vars"}
PACKAGE_TOOLS = {"apk", "apt", "apt-get", "yum", "dnf", "zypper", "microdnf", "opkg"}
FRR_IMAGE = re.compile(r"(^|/)frr(:|$)")
SPECIAL_ENDPOINTS = {"host", "mgmt-net", "macvlan"}
_VAR = re.compile(
    r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)"
)


def substitute_env(text: str, env: dict[str, str] | None = None) -> str:
    """containerlab's envsubst: ${VAR}, ${VAR:=default}, ${VAR:-default}, $VAR; $$ is $.

    >>> substitute_env("mtu: ${MTU:=9000} $$x", {})
    'mtu: 9000 $x'
    """
    values = os.environ if env is None else env

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(4)
        op, default = m.group(2), m.group(3)
        value = values.get(name)
        if op and op.startswith(":") and not value:
            return default or ""
        if op and value is None:
            return default or ""
        return value or ""

    return _VAR.sub(one, text)


@dataclass
class _Reader:
    doc: yamlmarks.MarkedDoc
    base_dir: str
    problems: list[Problem] = field(default_factory=list)
    marks: dict[Path, Path] = field(default_factory=dict)  # netrig path → clab path

    def where(self, path: Path, key: bool = False) -> str:
        return self.doc.where(path, key=key)

    def refuse(self, path: Path, message: str, key: bool = False) -> None:
        self.problems.append(Problem(self.where(path, key), message))


def lab_doc(text: str, file: str) -> yamlmarks.MarkedDoc:
    """A containerlab file's text → netrig lab data, marked at the clab file's lines."""
    template = re.search(r"\{\{|\{%", text)
    if template:
        line = text.count("\n", 0, template.start()) + 1
        raise SpecError(
            [
                Problem(
                    f"{file}:{line}",
                    "unrendered template ({{ … }}): netrig reads rendered containerlab files; "
                    "render the template first",
                )
            ]
        )
    doc = yamlmarks.load(substitute_env(text), file)
    reader = _Reader(doc, os.path.dirname(os.path.abspath(file)))
    data = _convert(reader)
    if reader.problems:
        raise SpecError(reader.problems)
    value_marks = {new: doc.value_marks[old] for new, old in reader.marks.items()
                   if old in doc.value_marks}  # fmt: skip
    key_marks = {new: doc.key_marks[old] for new, old in reader.marks.items()
                 if old in doc.key_marks}  # fmt: skip
    return yamlmarks.MarkedDoc(data, file, value_marks, key_marks)


def _mapping(reader: _Reader, data: Any, path: Path, what: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        reader.refuse(path, f"{what} must be a mapping")
        return {}
    return data


def _convert(reader: _Reader) -> dict[str, Any]:
    data = _mapping(reader, reader.doc.data, (), "a containerlab file")
    for key in data:
        if key not in TOP_KEYS:
            reader.refuse((key,), f"unknown containerlab key {key!r}", key=True)
    for key in ("mgmt", "prefix", "settings"):
        if key in data:
            note(reader.where((key,), key=True), f"containerlab {key!r} noted and ignored")
    if "name" not in data:
        reader.refuse((), "a containerlab file needs `name:`")
    topo = _mapping(reader, data.get("topology"), ("topology",), "topology")
    for key in topo:
        if key not in TOPOLOGY_KEYS:
            reader.refuse(("topology", key), f"unknown containerlab key {key!r}", key=True)
    levels = {
        "defaults": _mapping(reader, topo.get("defaults"), ("topology", "defaults"), "defaults"),
        "kinds": _mapping(reader, topo.get("kinds"), ("topology", "kinds"), "kinds"),
        "groups": _mapping(reader, topo.get("groups"), ("topology", "groups"), "groups"),
    }
    sysctls = _lab_sysctls(reader, levels["defaults"])
    nodes_data = _mapping(reader, topo.get("nodes"), ("topology", "nodes"), "nodes")
    if not nodes_data:
        reader.refuse(("topology",), "a containerlab topology needs `nodes:`")
    nodes: list[dict[str, Any]] = []
    kinds: dict[str, str] = {}
    for name, raw in nodes_data.items():
        node = _node(reader, str(name), raw, levels, len(nodes))
        if node is not None:
            kinds[str(name)] = node.get("kind", "host")
            nodes.append(node)
    links: list[dict[str, Any]] = []
    raw_links = topo.get("links") or []
    if not isinstance(raw_links, list):
        reader.refuse(("topology", "links"), "links must be a list")
        raw_links = []
    ends_used: dict[tuple[str, str], Path] = {}
    for i, raw in enumerate(raw_links):
        link = _link(reader, raw, ("topology", "links", i), kinds, len(links))
        if link is not None and _ends_free(reader, link, ends_used, ("topology", "links", i)):
            links.append(link)
    _lift_addresses(reader, nodes, links)
    reader.marks[("name",)] = ("name",)
    reader.marks[("nodes",)] = ("topology", "nodes")
    reader.marks[("links",)] = ("topology", "links")
    return {
        "name": str(data.get("name", "")),
        "nodes": nodes,
        "links": links,
        "routing": {"protocol": "none"},
        "addressing": {"auto": False, "loopbacks": False},
        "check": {"reachability": "none"},
        **({"sysctls": sysctls} if sysctls else {}),
    }


def _lab_sysctls(reader: _Reader, defaults: dict[str, Any]) -> dict[str, str]:
    """`defaults: {sysctls: …}` applies to every node, as a netrig lab's `sysctls:` does
    (what `netrig export` writes: a lab's multipath hash policy survives the round trip).
    Only net.* keys are per namespace; a node's own or a group's sysctls are noted."""
    if "sysctls" not in defaults:
        return {}
    path: Path = ("topology", "defaults", "sysctls")
    out: dict[str, str] = {}
    for key, value in _mapping(reader, defaults["sysctls"], path, "sysctls").items():
        if str(key).startswith("net."):
            out[str(key)] = str(value)
        else:
            note(reader.where((*path, key), key=True),
                 f"sysctl {key!r} noted and ignored: only net.* sysctls are per namespace")  # fmt: skip
    reader.marks[("sysctls",)] = path
    return out


def _levels(
    reader: _Reader, name: str, raw: dict[str, Any], levels: dict[str, dict[str, Any]]
) -> list[tuple[Path, dict[str, Any]]]:
    """The node's settings from most to least specific: node, group, kind, defaults."""
    node_path: Path = ("topology", "nodes", name)
    out: list[tuple[Path, dict[str, Any]]] = [(node_path, raw)]
    group = raw.get("group")
    if group is not None and str(group) in levels["groups"]:
        gpath: Path = ("topology", "groups", str(group))
        out.append((gpath, _mapping(reader, levels["groups"][str(group)], gpath, "a group")))
        # a group without settings is only a label for containerlab's graph
    defaults_path: Path = ("topology", "defaults")
    kind = raw.get("kind")
    for _path, level in out[1:]:
        kind = kind or level.get("kind")
    kind = kind or levels["defaults"].get("kind")
    if kind is not None and str(kind) in levels["kinds"]:
        kpath: Path = ("topology", "kinds", str(kind))
        out.append((kpath, _mapping(reader, levels["kinds"][str(kind)], kpath, "a kind")))
    out.append((defaults_path, levels["defaults"]))
    return out


def _pick(chain: list[tuple[Path, dict[str, Any]]], key: str) -> tuple[Path, Any] | None:
    for path, level in chain:
        if key in level:
            return (*path, key), level[key]
    return None


def _node(
    reader: _Reader, name: str, raw: Any, levels: dict[str, dict[str, Any]], index: int
) -> dict[str, Any] | None:
    path: Path = ("topology", "nodes", name)
    raw = _mapping(reader, raw, path, f"node {name!r}")
    chain = _levels(reader, name, raw, levels)
    for level_path, level in chain:
        for key in level:
            if key in NODE_KEYS:
                continue
            if key == "sysctls" and level_path == ("topology", "defaults"):
                continue  # the lab's sysctls (_lab_sysctls)
            if key in IGNORED_NODE_KEYS:
                who = f"{name}: " if level_path == path else ""
                note(reader.where((*level_path, key), key=True),
                     f"{who}containerlab {key!r} noted and ignored")  # fmt: skip
            else:
                reader.refuse((*level_path, key), f"containerlab key {key!r} is not supported "
                              "by netrig", key=True)  # fmt: skip
    picked = _pick(chain, "kind")
    if picked is None:
        reader.refuse(path, f"node {name!r} has no kind (set `kind:` or `defaults: {{kind:}}`)")
        return None
    kind_path, kind = picked
    kind = str(kind)
    out: dict[str, Any] = {"name": name}
    reader.marks[("nodes", index)] = path
    reader.marks[("nodes", index, "name")] = path
    if kind in SWITCH_KINDS:
        out["kind"] = "switch"
        out["switch"] = SWITCH_KINDS[kind]
        for key in ("exec", "cmd", "binds", "network-mode"):
            found = _pick(chain, key)
            if found is not None and found[0][:3] == path:  # defaults apply where they can
                reader.refuse(found[0], f"{name}: {key} applies to linux nodes, not a {kind}")
        return out
    if kind not in HOST_KINDS:
        reader.refuse(
            kind_path,
            f"{name}: kind {kind!r} is not supported by netrig: it runs `linux` nodes as "
            "namespaces with the host's programs and `bridge`/`ovs-bridge` as switches; "
            "vendor and VM kinds need their images",
        )
        return None
    image = _pick(chain, "image")
    cmd = _pick(chain, "cmd")
    if cmd is not None:
        out["cmd"] = reader.doc.text(cmd[0], cmd[1])
        reader.marks[("nodes", index, "cmd")] = cmd[0]
    if image is not None:
        image_path, image_name = image
        if FRR_IMAGE.search(str(image_name).lower()) and cmd is None:
            out["services"] = ["frr"]
            reader.marks[("nodes", index, "services")] = image_path
        else:
            who = f"{name}: " if image_path[:3] == path else ""
            note(reader.where(image_path), f"{who}image {image_name!r} ignored: nodes run "
                 "the host's programs")  # fmt: skip
    execs = _pick(chain, "exec")
    if execs is not None:
        out["exec"] = _exec_lines(reader, name, execs, index)
    binds = _binds(reader, name, chain, index)
    if binds:
        out["binds"] = binds
    mode = _pick(chain, "network-mode")
    if mode is not None:
        mode_path, value = mode
        text = str(value)
        if text.startswith("container:"):
            out["netns"] = text.removeprefix("container:")
            reader.marks[("nodes", index, "netns")] = mode_path
        elif text != "none":
            reader.refuse(mode_path, f"{name}: network-mode {text!r} is not supported "
                          "(netrig never uses the host's network); container:NODE is")  # fmt: skip
    return out


def _exec_lines(reader: _Reader, name: str, found: tuple[Path, Any], index: int) -> list[str]:
    path, lines = found
    if not isinstance(lines, list):
        reader.refuse(path, f"{name}: exec must be a list of commands")
        return []
    out: list[str] = []
    for i, line in enumerate(lines):
        text = reader.doc.text((*path, i), line)  # `- true` is the command true, as in clab
        if _installs_packages(text):
            note(reader.where((*path, i)), f"{name}: package install skipped (there is no "
                 f"image; netrig uses the host's programs): {text}")  # fmt: skip
            continue
        reader.marks[("nodes", index, "exec", len(out))] = (*path, i)
        out.append(text)
    reader.marks[("nodes", index, "exec")] = path
    return out


def ip_addr_add(argv: list[str]) -> tuple[str, str] | None:
    """(CIDR, interface) of a plain `ip [-4|-6] addr add CIDR dev IF`, else None.

    >>> ip_addr_add(["ip", "address", "add", "198.51.100.1/24", "dev", "eth1"])
    ('198.51.100.1/24', 'eth1')
    """
    words = [w for w in argv if w not in ("-4", "-6")]
    if len(words) != 6 or os.path.basename(words[0]) != "ip":
        return None
    if not "address".startswith(words[1]) or words[2] != "add":
        return None
    rest = words[3:]
    if rest[0] == "dev":
        ifname, cidr = rest[1], rest[2]
    elif rest[1] == "dev":
        cidr, ifname = rest[0], rest[2]
    else:
        return None
    try:
        ip_interface(cidr)
    except ValueError:
        return None
    return (cidr, ifname) if "/" in cidr else None


def _lift_addresses(
    reader: _Reader, nodes: list[dict[str, Any]], links: list[dict[str, Any]]
) -> None:
    """`ip addr add CIDR dev IF` exec lines on a link's interface become that end's
    explicit address, and those on `lo` the node's loopbacks (the address that stands for
    it: lab.addr, trace), so the plan knows them (measurements, graph) and netrig sets them
    at build; other exec lines stay, in their order."""
    ends: dict[tuple[str, str], tuple[int, str]] = {}
    for j, link in enumerate(links):
        ends[(link["a"], link["a_ifname"])] = (j, "a_addr")
        ends[(link["b"], link["b_ifname"])] = (j, "b_addr")
    for index, node in enumerate(nodes):
        if not node.get("exec"):
            continue
        kept: list[tuple[str, Path]] = []
        for k, line in enumerate(node["exec"]):
            path = reader.marks.pop(("nodes", index, "exec", k))
            try:
                found = ip_addr_add(shlex.split(line))
            except ValueError:
                found = None
            end = ends.get((node["name"], found[1])) if found else None
            if found and end:
                link = links[end[0]]
                link.setdefault(end[1], []).append(found[0])
                reader.marks.setdefault(("links", end[0], end[1]), path)
            elif found and found[1] == "lo" and "netns" not in node and _loopback_cidr(found[0]):
                node.setdefault("loopbacks", []).append(found[0])
                reader.marks.setdefault(("nodes", index, "loopbacks"), path)
            else:
                kept.append((line, path))
        node["exec"] = [line for line, _path in kept]
        for k, (_line, path) in enumerate(kept):
            reader.marks[("nodes", index, "exec", k)] = path


def _loopback_cidr(cidr: str) -> bool:
    """An address a lab may give a node's lo (not 127.0.0.0/8 or ::1: lo has those; such a
    line stays an exec line)."""
    return not ip_interface(cidr).ip.is_loopback


def _installs_packages(line: str) -> bool:
    """`apk add …`, `apt-get install …`, also inside `sh -c '…'` and `&&` chains."""
    try:
        words = shlex.split(line)
    except ValueError:
        return False
    if len(words) >= 3 and os.path.basename(words[0]) in ("sh", "bash", "ash") and words[1] == "-c":
        return any(_installs_packages(part) for part in re.split(r"&&|;|\|\|", words[2]))
    return bool(words) and os.path.basename(words[0]) in PACKAGE_TOOLS


def _binds(
    reader: _Reader, name: str, chain: list[tuple[Path, dict[str, Any]]], index: int
) -> list[str]:
    """Merged over the levels, the most specific one winning per path in the node."""
    by_target: dict[str, tuple[str, Path]] = {}
    for level_path, level in reversed(chain):
        items = level.get("binds")
        if items is None:
            continue
        if not isinstance(items, list):
            reader.refuse((*level_path, "binds"), f"{name}: binds must be a list")
            continue
        for i, item in enumerate(items):
            path = (*level_path, "binds", i)
            resolved = _bind(reader, name, str(item), path)
            if resolved:
                target = resolved.split(":")[1]
                by_target[os.path.normpath(target)] = (resolved, path)
    out = []
    for j, (text, path) in enumerate(by_target.values()):
        reader.marks[("nodes", index, "binds", j)] = path
        out.append(text)
    return out


def _bind(reader: _Reader, name: str, text: str, path: Path) -> str | None:
    parts = text.split(":")
    if len(parts) == 1:
        reader.refuse(path, f"{name}: anonymous volume {text!r} is not supported; "
                      "bind a host path: HOST:PATH")  # fmt: skip
        return None
    if len(parts) > 3 or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        reader.refuse(path, f"{name}: bind {text!r} must be HOST:PATH or HOST:PATH:ro")
        return None
    source, target = parts[0], parts[1]
    if "__clab" in source:
        reader.refuse(path, f"{name}: containerlab's lab directory variables are not "
                      "supported in binds")  # fmt: skip
        return None
    source = os.path.expanduser(source)
    if not os.path.isabs(source):
        source = os.path.join(reader.base_dir, source)
    source = os.path.normpath(source)
    if not os.path.exists(source):
        reader.refuse(path, f"{name}: bind source {source} does not exist")
        return None
    if not os.path.isabs(target):
        reader.refuse(path, f"{name}: bind target {target!r} must be an absolute path")
        return None
    if not os.path.exists(target) and _anchor(target) == "/":
        reader.refuse(path, f"{name}: bind target {target}: netrig creates a missing target "
                      "in the node's own overlay of its nearest existing directory, and "
                      "will not overlay / itself; bind below an existing directory")  # fmt: skip
        return None
    if os.path.exists(target) and os.path.isdir(source) != os.path.isdir(target):
        reader.refuse(path, f"{name}: bind {text!r} mounts a "
                      f"{'directory' if os.path.isdir(source) else 'file'} over a "
                      f"{'directory' if os.path.isdir(target) else 'file'}")  # fmt: skip
        return None
    return ":".join([source, target, *parts[2:]])


def _anchor(target: str) -> str:
    """The nearest existing directory above a path (what the node's overlay covers)."""
    anchor = os.path.dirname(os.path.normpath(target))
    while not os.path.isdir(anchor):
        anchor = os.path.dirname(anchor)
    return anchor


def _ends_free(
    reader: _Reader, link: dict[str, Any], used: dict[tuple[str, str], Path], path: Path
) -> bool:
    """Each interface is the end of one link: a second link from a:eth1 is refused as that
    (it had been called a duplicate link, whatever its other end)."""
    for end in ("a", "b"):
        key = (link[end], link[f"{end}_ifname"])
        if key in used:
            line = reader.where(used[key]).rsplit(":", 2)[-2]
            reader.refuse((*path, "endpoints"), f"interface {key[0]}:{key[1]} is already an "
                                                f"end of the link on line {line}; an "
                                                "interface is the end of one link")  # fmt: skip
            return False
    for end in ("a", "b"):
        used[(link[end], link[f"{end}_ifname"])] = path
    return True


def _link(
    reader: _Reader, raw: Any, path: Path, kinds: dict[str, str], index: int
) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        reader.refuse(path, "a link is a mapping with `endpoints:`")
        return None
    for key in raw:
        if key not in LINK_KEYS:
            reader.refuse((*path, key), f"link key {key!r} is not supported by netrig", key=True)
    kind = raw.get("type")
    if kind is not None and kind != "veth":
        reader.refuse((*path, "type"), f"link type {kind!r} is not supported by netrig; "
                      "veth links are")  # fmt: skip
        return None
    endpoints = raw.get("endpoints")
    if not isinstance(endpoints, list) or len(endpoints) != 2:
        reader.refuse(path, "a link needs two endpoints")
        return None
    ends = []
    for j, end in enumerate(endpoints):
        epath = (*path, "endpoints", j)
        if isinstance(end, dict):
            node, ifname = end.get("node"), end.get("interface")
            extra = set(end) - {"node", "interface", "mac"}
            if extra:
                reader.refuse(epath, f"endpoint key {sorted(extra)[0]!r} is not supported")
            if "mac" in end:
                note(reader.where((*epath, "mac")), "endpoint mac noted and ignored")
        elif isinstance(end, str) and ":" in end:
            node, ifname = end.split(":", 1)
        else:
            reader.refuse(epath, f"endpoint {end!r} must be NODE:INTERFACE")
            return None
        if node in SPECIAL_ENDPOINTS and node not in kinds:
            reader.refuse(epath, f"endpoint {node}:{ifname} joins the host's network; "
                          "netrig links only nodes of the lab")  # fmt: skip
            return None
        if node not in kinds:
            reader.refuse(epath, f"link to unknown node {node!r}")
            return None
        if not ifname:
            reader.refuse(epath, f"endpoint {end!r} has no interface name")
            return None
        ends.append((str(node), str(ifname), epath))
    (a, a_if, a_path), (b, b_if, b_path) = ends
    link: dict[str, Any] = {"a": a, "b": b, "a_ifname": a_if, "b_ifname": b_if}
    reader.marks[("links", index)] = path
    reader.marks[("links", index, "a")] = a_path
    reader.marks[("links", index, "b")] = b_path
    reader.marks[("links", index, "a_ifname")] = a_path
    reader.marks[("links", index, "b_ifname")] = b_path
    if "mtu" in raw:
        link["mtu"] = raw["mtu"]
        reader.marks[("links", index, "mtu")] = (*path, "mtu")
    return link
