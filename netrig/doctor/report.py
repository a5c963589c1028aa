"""From probe results to consequences: what this host cannot do, and what runs degraded.

A missing feature is not always a refusal: without batman-adv, BATMAN labs can still run
the userspace batmand. Each such substitute is one `Fallback` row; everything else that is
missing is reported with its own impact line.

    >>> s = summarise(probe_features(), probe_tools())
    >>> s.degrades[0]
    'batman-adv missing → BATMAN labs use the userspace batmand'
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netrig.host.features import CORE, FEATURES, FeatureResult, probe_features
from netrig.host.tools import ToolResult, probe_tools

FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Fallback:
    """When FEATURE is missing and SUBSTITUTE ("tool:NAME" or "feature:NAME") is there."""

    feature: str
    substitute: str
    degraded: str  # what happens instead
    refused: str  # what is impossible when the substitute is missing too


FALLBACKS: dict[str, Fallback] = {
    fb.feature: fb
    for fb in (
        Fallback("batman-adv", "tool:batmand", "BATMAN labs use the userspace batmand",
                 "BATMAN labs are refused (nor is batmand installed: apt-get install -y batmand)"),
        Fallback("openvswitch", "tool:ovs",
                 "OVS switch nodes use the userspace datapath (ovs-vswitchd, datapath_type=netdev)",
                 "OVS switch nodes are refused (nor is Open vSwitch installed: "
                 "apt-get install -y openvswitch-switch)"),
        Fallback("xdp-native", "feature:xdp-generic",
                 "XDP programs run in generic (skb) mode, a slower path than a driver's",
                 "XDP timestamping and xdp-filter experiments are refused"),
        Fallback("iptables", "feature:iptables-nft",
                 "iptables rules go through the nf_tables backend (iptables-nft)",
                 "iptables firewall experiments are refused"),
        Fallback("netns-names", "feature:netns",
                 "labs build slower: every namespace costs more to name than to make",
                 "no labs at all"),
    )
}


@dataclass(frozen=True, slots=True)
class Summary:
    """The verdict: can netrig run at all here, and the refusals and degradations in words."""

    ok: bool  # root, namespaces and veth: the core every lab needs
    root: bool = True  # run as root; else no kernel feature was tried (each needs root)
    cannot: list[str] = field(default_factory=list)  # one sentence per refusal
    degrades: list[str] = field(default_factory=list)
    cannot_names: list[str] = field(default_factory=list)  # the features/tools behind them
    degraded_names: list[str] = field(default_factory=list)
    unused_names: list[str] = field(default_factory=list)  # absent, and no netrig feature's

    def line(self) -> str:
        """One line for the end of the report."""
        if not self.root:
            core = ("NOT ROOT: labs need root; the kernel's features were not tried "
                    "(`sudo netrig doctor` tries them)")
        elif self.ok:
            core = "core OK"
        else:
            core = "CORE MISSING (root, netns or veth): no labs possible"
        cannot = ", ".join(self.cannot_names) or "nothing"
        degraded = ", ".join(self.degraded_names) or "nothing"
        unused = f"; absent, not used by netrig itself: {', '.join(self.unused_names)}" if (
            self.unused_names) else ""
        return f"{core} — cannot: {cannot}; degraded: {degraded}{unused}"


def core_ok() -> bool:
    """True when netrig can build a lab here at all: euid 0, netns and veth work."""
    feats = probe_features(CORE)
    return probe_tools(["root"])["root"].found and all(f.present for f in feats.values())


def _available(substitute: str) -> bool:
    kind, _, name = substitute.partition(":")
    if kind == "tool":
        return probe_tools([name])[name].found
    return probe_features([name])[name].present


def summarise(
    features: Mapping[str, FeatureResult], tools: Mapping[str, ToolResult]
) -> Summary:
    """Turn results into sentences; substitutes are probed (cached) even if not listed."""
    out = Summary(core_ok(), root=os.geteuid() == 0)
    told: set[str] = set()  # substitutes already named in a refusal
    for feat in features.values():
        if feat.present:
            continue
        if not feat.used:  # told, never a refusal: netrig has nothing that needs it
            out.unused_names.append(feat.name)
            continue
        fb = FALLBACKS.get(feat.name)
        label = f"{feat.name} {feat.status}"
        if fb is None:
            _add(out, False, label, feat.impact)
        elif _available(fb.substitute):
            _add(out, True, label, fb.degraded)
        else:
            _add(out, False, label, fb.refused)
            told.add(fb.substitute)
    for tool in tools.values():
        if not tool.found and f"tool:{tool.name}" not in told:
            label = f"{tool.name} tool" if tool.name in FEATURES else tool.name
            _add(out, tool.optional, f"{label} missing", f"no {tool.purpose} ({tool.fix})")
    return out


def _add(summary: Summary, degraded: bool, label: str, text: str) -> None:
    """LABEL is 'NAME missing' (or 'NAME untested'); the name goes into the one-line summary."""
    name = label.rsplit(" ", 1)[0]
    if degraded:
        summary.degrades.append(f"{label} → {text}")
        summary.degraded_names.append(name)
    else:
        summary.cannot.append(f"{label} → {text}")
        summary.cannot_names.append(name)


def host_facts() -> dict[str, str]:
    """What the results depend on, recorded with them (kernel, arch, Python)."""
    uname = os.uname()
    return {"kernel": uname.release, "kernel_version": uname.version, "machine": uname.machine,
            "python": platform.python_version(), "executable": sys.executable}


def as_json(
    features: Mapping[str, FeatureResult],
    tools: Mapping[str, ToolResult],
    summary: Summary,
    seconds: float,
) -> dict[str, Any]:
    """The machine-readable doctor report (`netrig doctor --json`)."""
    return {
        "format": FORMAT_VERSION,
        "ok": summary.ok,
        "root": summary.root,  # false: no kernel feature was tried (each needs root)
        "seconds": round(seconds, 3),
        "host": host_facts(),
        "features": {name: res.to_dict() for name, res in features.items()},
        "tools": {name: res.to_dict() for name, res in tools.items()},
        "cannot": summary.cannot,
        "degrades": summary.degrades,
        "absent_unused": summary.unused_names,  # missing, and no netrig feature needs them
    }
