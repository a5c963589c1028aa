"""The tool table `netrig doctor` checks, in one place per program: the lab core's own
programs (netrig.host.tools) and every program a plugin declares it may run (`programs`)."""

from __future__ import annotations

from netrig.host import tools
from netrig.rig.prepare import catalog
from netrig.switch import ovs

KINDS = (("measure", "measurement"), ("routing", "routing"), ("services", "service"),
         ("firewall", "firewall"))  # fmt: skip


def declare_plugin_programs() -> None:
    """Add each plugin's programs to the tool table (idempotent)."""
    plugins = catalog()
    for attr, label in KINDS:
        for name, cls in sorted(getattr(plugins, attr).load().items()):
            for program, package in cls.programs.items():
                if package:
                    tools.declare(program, package, f"{label} {name}")
    tools.declare("ovs", ovs.PACKAGE, "switch: ovs (Open vSwitch switch nodes)", ovs.TOOLS)
    tools.declare(
        "ovs-testcontroller", ovs.CONTROLLER_PACKAGE, "switch: ovs with controller: standalone"
    )
