"""batman: B.A.T.M.A.N. mesh routing, by the userspace batmand or the kernel's batman-adv.

batmand (layer 3) runs one daemon per node on all its interfaces. It needs what the class
attributes below ask of the plan: every mesh interface of the lab in one subnet
(shared-subnet addressing, with broadcast addresses, since originator messages are
broadcast), a private /run per node (its unix socket is /var/run/batmand.socket), and
IPv4 only (it routes nothing else). Each node announces its loopback as an HNA network,
so nodes are reached on their loopbacks as with every other protocol. Its routes go into
tables 65/66 behind policy rules; the kernel FIB holds them, so `netrig trace` follows them.

batman-adv (layer 2, in the kernel) is used when the kernel has it: every node gets a
bat0 holding its mesh address, and its interfaces become bat0's hard interfaces. That path
could not be tried on the machine this was written on (no batman-adv module).
"""

from __future__ import annotations

import re
import shutil
from typing import ClassVar, Literal

from pydantic import Field

from netrig.host.features import has_feature
from netrig.lab import daemons
from netrig.lab.build import LabError
from netrig.lab.runtime import LabRuntime as Lab
from netrig.routing import register
from netrig.routing._daemon import DaemonOptions, DaemonProtocol

MESH_IF = "bat0"


class BatmanOptions(DaemonOptions):
    implementation: Literal["auto", "batmand", "batman-adv"] = Field(
        "auto", description="auto: batman-adv when the kernel has it, else batmand"
    )
    originator_interval: int = Field(
        1000, ge=10, le=60000, description="ms between originator messages (batmand -o)"
    )
    hop_penalty: int | None = Field(
        None, ge=0, le=255, description="TQ lost per hop (batmand default 10, batman-adv 30)"
    )
    routing_class: int | None = Field(
        None,
        ge=0,
        le=255,
        description="batmand -r: how a default route via a gateway is chosen (1, 2, 3 or a "
        "TQ margin); only matters when some node announces a gateway",
    )


@register
class Batman(DaemonProtocol[BatmanOptions]):
    name = "batman"
    summary = "B.A.T.M.A.N. mesh: batmand (userspace) or batman-adv (kernel), one shared subnet"
    Options = BatmanOptions
    addressing = "shared-subnet"
    private_run = True
    programs: ClassVar[dict[str, str]] = {"batmand": "batmand"}
    families = (4,)
    convergence_timeout = 60.0
    poll_interval = 0.25
    restores_dropped_routes = False

    def __init__(self, options: BatmanOptions) -> None:
        super().__init__(options)
        self._impl: str | None = None

    @property
    def opts(self) -> BatmanOptions:
        assert isinstance(self.options, BatmanOptions)
        return self.options

    def implementation(self) -> str:
        """batmand or batman-adv, as the options ask or the kernel allows (probed once)."""
        chosen = self.opts.implementation
        if chosen != "auto":
            return chosen

        return "batman-adv" if has_feature("batman-adv") else "batmand"

    # ---------------------------------------------------------------- batmand

    def batmand_argv(self, lab: Lab, node: str) -> list[str]:
        """`batmand --no-detach -o MS [...] -a LOOPBACK/32 eth0 eth1`: stays in the
        foreground, so the PID netrig records is the daemon's."""
        o = self.opts
        argv = ["batmand", "--no-detach", "-d", "0", "-o", str(o.originator_interval)]
        if o.hop_penalty is not None:
            argv += ["--hop-penalty", str(o.hop_penalty)]
        if o.routing_class is not None:
            argv += ["-r", str(o.routing_class)]
        plan_node = lab.plan.node(node)
        for cidr in plan_node.loopbacks:
            if ":" not in cidr:
                argv += ["-a", cidr]
        return argv + [i.name for i in plan_node.ifaces]

    def start(self, lab: Lab) -> None:
        # originator messages gain one hop per interval and routes need a few of them, so
        # big or slow meshes take longer: at 1 s intervals a 16-ring takes ~35 s, and a 5×10
        # grid ~2 min (its corners, 13 hops apart, see each other with a TQ of 1 of 255)
        scale = self.opts.originator_interval / 1000
        base = max(60.0, (30 + 5 * len(lab.plan.nodes)) * scale)
        self.convergence_timeout = base + self.opts.settle
        self._impl = self.implementation()
        if self._impl == "batman-adv":
            _start_batman_adv(lab, self.opts)
            return
        daemons.require_tools("batmand", package="batmand")
        # batmand prints with stdio, block-buffered into a file: line-buffered, its log is
        # current (stdbuf execs batmand, so the recorded PID is still the daemon's)
        line = ["stdbuf", "-oL", "-eL"] if shutil.which("stdbuf") else []
        for node in self.watch(lab).nodes:
            daemons.start(lab, node, "batmand", [*line, *self.batmand_argv(lab, node)])

    def is_ours(self, route: daemons.Route) -> bool:
        """batmand's routes live in its policy tables: 65 (networks, HNA) and 66 (hosts)."""
        return route.table in (65, 66) and route.plen > 0

    def converged(self, lab: Lab) -> bool:
        """Every node has a batman route to every other node's address (its HNA loopback);
        with batman-adv, every node's originator table lists every other node."""
        if (self._impl or self.implementation()) == "batman-adv":
            return _batman_adv_converged(lab)
        return super().converged(lab)


# ---------------------------------------------------------------- batman-adv


def _start_batman_adv(lab: Lab, opts: BatmanOptions) -> None:
    """bat0 per node over its interfaces, the mesh address moved onto bat0, and a /32 route
    to every other node's loopback via its mesh address (all of them are on bat0's link).
    Untested here: this machine's kernel has no batman-adv."""
    if shutil.which("batctl") is None:
        raise LabError("batman-adv needs batctl: apt-get install -y batctl")
    plan = lab.plan
    mesh = {}
    for node in plan.hosts():
        addrs = [a for i in node.ifaces for a in i.addrs if ":" not in a]
        if addrs:
            mesh[node.name] = addrs[0]
    for name, cidr in mesh.items():
        node = plan.node(name)
        cmds: list[list[str]] = [["ip", "link", "add", MESH_IF, "type", "batadv"]]
        for iface in node.ifaces:
            cmds.append(["ip", "addr", "flush", "dev", iface.name])
            cmds.append(["batctl", "meshif", MESH_IF, "interface", "add", iface.name])
        cmds.append(["batctl", "meshif", MESH_IF, "orig_interval", str(opts.originator_interval)])
        if opts.hop_penalty is not None:
            cmds.append(["batctl", "meshif", MESH_IF, "hop_penalty", str(opts.hop_penalty)])
        cmds.append(["ip", "link", "set", MESH_IF, "up"])
        cmds.append(["ip", "addr", "add", cidr, "brd", "+", "dev", MESH_IF])
        for other, other_cidr in mesh.items():
            for loop in plan.node(other).loopbacks if other != name else []:
                if ":" not in loop:
                    via = other_cidr.split("/")[0]
                    cmds.append(["ip", "route", "add", loop, "via", via, "dev", MESH_IF])
        for argv in cmds:
            out = lab.exec(name, argv, capture_output=True)
            if out.returncode != 0:
                raise LabError(f"batman-adv in {name}: {' '.join(argv)}: {out.stderr.strip()}")


def _batman_adv_converged(lab: Lab) -> bool:
    """Each node's originator table (`batctl o -H`) names every other node."""
    nodes = [n.name for n in lab.plan.hosts() if n.ifaces]
    for node in nodes:
        out = lab.exec(
            node, ["batctl", "meshif", MESH_IF, "originators", "-H"], capture_output=True
        )
        origins = set(re.findall(r"^\s*\*?\s*([0-9a-f:]{17})", out.stdout, re.M))
        if len(origins) < len(nodes) - 1:
            return False
    return True
