"""What a plan needs from this host, as plain data, and whether the host has it.

The preflight (netrig.rig.prepare.host_problems) works the needs out from a file's plugins
and asks the host about each; a remembered plan (netrig.rig.plancache) keeps the same list
and asks again on each use, without reading the file or loading a plugin for the common
needs (a program on PATH, a path, a kernel feature).

    lacking(("program", "bird"))      # None when bird is on PATH, else ""
"""

from __future__ import annotations

import os
import shutil

# (kind, what): ("program", "bird"), ("path", "/srv/www"), ("feature", "netem"),
# ("ovs", "standalone" or ""), ("firewall", "nftables"), ("sysctl", "net.ipv4.ip_forward")
Need = tuple[str, str]


def lacking(need: Need) -> str | None:
    """None when the host has what `need` asks for; else why not: the reason of the Open
    vSwitch and firewall engine checks, "" for the others (their caller words it)."""
    kind, what = need
    if kind == "program":
        return None if shutil.which(what) else ""
    if kind == "path":
        return None if os.path.exists(what) else ""
    if kind == "feature":
        from netrig.host import features

        return None if features.has_feature(what) else ""
    if kind == "ovs":
        from netrig.switch import ovs

        return ovs.missing_tools(what == "standalone") or None
    if kind == "firewall":
        from netrig import firewall

        return firewall.registry.lookup(what)().missing()
    if kind == "sysctl":
        return None if os.path.exists(sysctl_path(what)) else ""
    raise ValueError(f"unknown host need {need!r}")


def all_met(needs: list[Need]) -> bool:
    return all(lacking(need) is None for need in needs)


def sysctl_path(key: str) -> str:
    """The /proc/sys file of a net.* key (a key of one device is refused by the model, so
    every key here names the host's file too); a `*` matches anything: not checked."""
    if "*" in key:
        return "/proc/sys"
    return "/proc/sys/" + key.replace(".", "/")


# what an exec line asks of the kernel, recognised with certainty from the line alone:
# `tc qdisc add|replace|change … KIND` and `ip link add … type KIND` → (feature, its words)
QDISC_FEATURES = {
    "netem": ("netem", "the netem qdisc"),
    "fq": ("fq", "the fq qdisc"),
    "fq_codel": ("fq_codel", "the fq_codel qdisc"),
    "htb": ("htb", "the HTB qdisc"),
    "tbf": ("tbf", "the TBF qdisc"),
}
LINK_FEATURES = {
    "vlan": ("vlan", "802.1Q VLAN devices"),
    "dummy": ("dummy", "dummy interfaces"),
    "bond": ("bonding", "bonding devices"),
    "vrf": ("vrf", "VRF devices"),
    "wireguard": ("wireguard", "WireGuard devices"),
    "gre": ("gre", "GRE tunnels"),
    "gretap": ("gre", "GRE tunnels"),
    "geneve": ("geneve", "Geneve tunnels"),
    "ipvlan": ("ipvlan", "ipvlan devices"),
    "macvlan": ("macvlan", "macvlan devices"),
    "vxlan": ("vxlan", "VXLAN devices"),
    "ifb": ("ifb", "ifb devices"),
    "batadv": ("batman-adv", "batman-adv devices"),
    "bridge": ("bridge", "Linux bridges"),
    "veth": ("veth", "veth pairs"),
}
_TC_SKIP = {"dev": 2, "parent": 2, "handle": 2, "root": 1, "estimator": 3, "stab": 0}


def line_feature(argv: list[str]) -> tuple[str, str] | None:
    """The kernel feature (netrig.host.features' name, and its words) an exec line needs,
    when the line says so beyond doubt: a tc qdisc added or replaced of a kind netrig
    probes, an ip link added of such a type. None for anything else (options netrig does
    not read, a shell, another program)."""
    if len(argv) < 3:
        return None
    program = argv[0].rsplit("/", 1)[-1]
    if program == "tc" and argv[1] == "qdisc" and argv[2] in ("add", "replace", "change"):
        i = 3
        while i < len(argv):
            skip = _TC_SKIP.get(argv[i])
            if skip is None:
                return QDISC_FEATURES.get(argv[i])
            if skip == 0:  # stab takes options netrig does not read
                return None
            i += skip
        return None
    if program == "ip" and argv[1] == "link" and argv[2] == "add" and "type" in argv[3:]:
        at = argv.index("type", 3)
        return LINK_FEATURES.get(argv[at + 1]) if at + 1 < len(argv) else None
    return None
