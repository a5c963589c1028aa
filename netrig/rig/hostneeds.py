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
