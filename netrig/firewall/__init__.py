"""Firewall engines: a packet filter in a node, one plugin per engine, found through a registry.

    nodes:
      - {name: n2, firewall: {engine: nftables, filler_rules: 256, rules: [{src: n1}]}}

A node's firewall is applied in its namespace right after the lab is built, with the engine's
batch interface (one `iptables-restore`, one `nft -f`, one loader per interface for XDP),
never one process per rule. It lives in the namespace, so teardown needs nothing extra.
`filler_rules` are rules that can never match lab traffic (sources from 240.0.0.0/4, which
netrig never assigns, and 3fff:ff0::/32, which a lab with fillers may not use): they make every
packet walk a longer rule list, which is what seed 002 measures. Each family gets that many
in every engine, and a packet walks only its own family's list (FirewallPlan.family_rules).
They come first; the `rules:` (which may match) follow, in the order written.

Adding an engine means adding one module here whose class is decorated with @register.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, ClassVar

from netrig.base.registry import Registry
from netrig.plan.firewall import FirewallPlan

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab



class FirewallError(Exception):
    """A firewall could not be applied or read back (a runtime failure)."""


class Engine:
    """Base class of a firewall engine; stateless."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    programs: ClassVar[dict[str, str]] = {}  # program → Debian package

    def missing(self) -> str | None:
        """Why this engine cannot work on this host (naming the package), or None."""
        lacking = {cmd: pkg for cmd, pkg in self.programs.items() if shutil.which(cmd) is None}
        if not lacking:
            return None
        pkgs = " ".join(sorted(set(lacking.values())))
        return (
            f"firewall engine {self.name!r} needs {', '.join(lacking)}; "
            f"install with: apt-get install {pkgs}"
        )

    def apply(self, lab: Lab, node: str, fw: FirewallPlan) -> None:
        raise NotImplementedError

    def counts(self, lab: Lab, node: str) -> dict[int, int]:
        """Rules in the node's rule list of each family (4, 6), as the kernel reports them."""
        raise NotImplementedError

    def count(self, lab: Lab, node: str) -> int:
        """Rules in the node's rule lists, both families."""
        return sum(self.counts(lab, node).values())


registry: Registry[Engine] = Registry("firewall engine", __name__)
ENGINES = registry.classes
register = registry.register
load_plugins = registry.load


def engine_names() -> list[str]:
    return list(load_plugins())


def get(name: str) -> Engine:
    return registry.lookup(name)()


def run_checked(lab: Lab, node: str, argv: list[str], stdin: str = "", what: str = "") -> str:
    """Run a firewall tool in a node; its stderr in the error when it fails."""
    done = lab.exec(node, argv, input=stdin, capture_output=True)
    if done.returncode != 0:
        raise FirewallError(
            f"{what or argv[0]} failed in {node} (exit {done.returncode}): "
            f"{done.stderr.strip()[-2000:]}"
        )
    return done.stdout
