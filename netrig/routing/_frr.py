"""What the FRR plugins (bgp, isis, ospf with `daemon: frr`) share: per-node daemons and files.

Every node runs zebra (the kernel interface), bfdd when `bfd: true`, and the protocol's
daemons, each in the foreground, logging to `<node dir>/<daemon>.log`. Each node has its own
/run/frr and /etc/frr (folders of its private /run, see netrig.lab.run): pid files, the
zebra socket and the vty sockets sit at FRR's default paths, so the daemons of two nodes
never meet, and vtysh run by hand finds the node's own daemons:

    netrig exec LAB n1 -- vtysh -c 'show bgp summary'

Each daemon starts from `/etc/frr/<daemon>.conf`, which the protocol writes (on the host:
`<node dir>/run/etc/frr/`); vtysh's `write` saves there too, so a change made by hand
survives `netrig node N stop|start` and never touches the host's /etc/frr. The daemons drop
privileges to the `frr` user (the Debian package makes it), which owns both folders.
Routes go into the main table with FRR's protocol numbers (bgp 186, isis 187, ospf 188),
which is how converged() tells them from connected ones.
"""

from __future__ import annotations

import os
import shutil
from ipaddress import IPv4Address
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

from pydantic import Field

from netrig.lab import daemons
from netrig.lab.build import LabError
from netrig.lab.run import ETC_VIEWS
from netrig.routing._daemon import DaemonOptions, DaemonProtocol

if TYPE_CHECKING:
    from netrig.lab.daemons import Route  # not daemons.Route: in the class, `daemons` is a tuple
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.plan.model import IfacePlan

FRR_DIR = "/usr/lib/frr"  # where Debian puts the daemons (not on PATH)
FRR_USER = "frr"
RTPROT_BGP, RTPROT_ISIS, RTPROT_OSPF = 186, 187, 188
BFD_PROFILE = "netrig"
ZSERV = "/run/frr/zserv.api"  # zebra's socket, as the node sees it
ZEBRA_PID = "/run/frr/zebra.pid"
# no integrated frr.conf: vtysh's `write` saves each daemon's file, the one it restarts from
VTYSH_CONF = "! vtysh for a netrig node\nno service integrated-vtysh-config\n"
NETLINK_BUFFER = 16 * 1024 * 1024  # zebra's netlink receive buffer (Debian's unit uses 90 MB)


class FrrOptions(DaemonOptions):
    """Options of every FRR-run protocol."""

    daemon: Literal["frr"] = Field("frr", description="the routing suite (FRR only)")
    bfd: bool = Field(False, description="BFD (bfdd) on every session: failure detection in ms")
    bfd_interval: int = Field(
        300, ge=10, le=60000, description="BFD transmit and receive interval, ms (FRR: 300)"
    )
    bfd_multiplier: int = Field(
        3, ge=2, le=255, description="BFD packets missed before a session is down (FRR: 3)"
    )
    debug: bool = Field(False, description="log the protocol's events (verbose)")
    hash: Literal["l3", "l4"] = Field(
        "l4",
        description="how the kernel spreads flows over equal paths: l3 (addresses), l4 (ports too)",
    )


FrrOptionsT = TypeVar("FrrOptionsT", bound=FrrOptions)


class FrrProtocol(DaemonProtocol[FrrOptionsT]):
    """FRR protocol daemons (`daemons`, e.g. bgpd) beside zebra on every node."""

    daemons: ClassVar[tuple[str, ...]]
    rtprot: ClassVar[int]
    private_run = True
    refuses_addressing = ("shared-subnet",)
    programs: ClassVar[dict[str, str]] = {"vtysh": "frr"}  # the daemons: in FRR_DIR
    convergence_timeout = 60.0

    def sysctls(self) -> dict[str, str]:
        """Flows spread over equal paths by five-tuple (l4), as datacenter fabrics do."""
        policy = "1" if self.options.hash == "l4" else "0"
        return {f"net.ipv{v}.fib_multipath_hash_policy": policy for v in (4, 6)}

    def config(self, lab: Lab, node: str, daemon: str) -> str:
        """A protocol daemon's configuration for one node (without the common head)."""
        raise NotImplementedError

    def node_daemons(self, lab: Lab, node: str) -> list[str]:
        """The protocol's daemons NODE runs (ospfd and ospf6d only for its families)."""
        return list(self.daemons)

    def start(self, lab: Lab) -> None:
        wanted = ["zebra", "bfdd", *self.daemons]
        missing = [d for d in wanted if not os.access(f"{FRR_DIR}/{d}", os.X_OK)]
        if missing:
            raise LabError(f"{FRR_DIR}/{missing[0]} not found; install FRR: apt-get install -y frr")
        self.convergence_timeout = type(self).convergence_timeout + self.options.settle
        for node in self.watch(lab).nodes:
            etc = self._prepare(lab, node)
            for name in [
                "zebra",
                *(["bfdd"] if self.options.bfd else []),
                *self.node_daemons(lab, node),
            ]:
                text = head(node, name) + self._daemon_config(lab, node, name)
                with open(os.path.join(etc, f"{name}.conf"), "w") as fh:
                    fh.write(text)
                shutil.chown(fh.name, FRR_USER, FRR_USER)
                conf = f"/etc/frr/{name}.conf"  # as the node sees it
                argv = [f"{FRR_DIR}/{name}", "--log", "stdout", "-f", conf, "-P", "0"]
                if name == "zebra":
                    argv = with_fresh_socket([*argv, "-s", str(NETLINK_BUFFER)])
                else:
                    argv = after_zebra(argv)
                daemons.start(lab, node, name, argv)

    def _prepare(self, lab: Lab, node: str) -> str:
        """The node's /run/frr and /etc/frr, owned by the user FRR drops to; returns the
        host's path of the node's /etc/frr."""
        run = lab.private_run_dir(node)
        assert run is not None, "FRR plugins set private_run"
        etc = os.path.join(run, ETC_VIEWS, "frr")
        for path in (os.path.join(run, "frr"), etc):
            os.makedirs(path, exist_ok=True)
            shutil.chown(path, FRR_USER, FRR_USER)
        with open(os.path.join(etc, "vtysh.conf"), "w") as fh:
            fh.write(VTYSH_CONF)
        return etc

    def _daemon_config(self, lab: Lab, node: str, name: str) -> str:
        if name == "zebra":
            # Routes with their next hops inline, not kernel nexthop objects: FRR 8.4's zebra
            # does not reinstall an ECMP group's objects after a link flap (fixed upstream
            # by FRR PR 13413), so a leaf kept one spine of two until it was rebuilt.
            return "no zebra nexthop kernel enable\n"
        if name == "bfdd":
            o = self.options
            return (
                "bfd\n"
                f" profile {BFD_PROFILE}\n"
                f"  transmit-interval {o.bfd_interval}\n"
                f"  receive-interval {o.bfd_interval}\n"
                f"  detect-multiplier {o.bfd_multiplier}\n"
                " exit\n"
                "exit\n"
            )
        return self.config(lab, node, name)

    def bfd_line(self, command: str) -> list[str]:
        """`isis bfd` and `isis bfd profile netrig` etc. when BFD is on (in FRR 8.4 the
        profile alone turns BFD on for some protocols only)."""
        return [command, f"{command} profile {BFD_PROFILE}"] if self.options.bfd else []

    def is_ours(self, route: Route) -> bool:
        return route.protocol == self.rtprot

    def node_families(self, lab: Lab, node: str) -> list[int]:
        return [f for f in (4, 6) if lab.plan.node(node).addresses(f)]


def after_zebra(argv: list[str]) -> list[str]:
    """ARGV run once zebra listens (by exec: the PID stays the daemon's). A daemon that
    finds no zebra retries only after 10 s; waiting here makes a start, and a restart by
    `netrig node start` or a cold-start measurement, take a fraction of a second instead.
    A socket counts once the zebra of the pid file runs: `with_fresh_socket` removes the
    one a stopped zebra left before the new zebra writes its pid."""
    wait = (
        f'until [ -S {ZSERV} ] && kill -0 "$(cat {ZEBRA_PID} 2>/dev/null)" 2>/dev/null; '
        'do sleep 0.02; done; exec "$@"'
    )
    return ["sh", "-c", wait, argv[0], *argv]


def with_fresh_socket(argv: list[str]) -> list[str]:
    """zebra's ARGV, run after removing the socket a stopped zebra may have left."""
    return ["sh", "-c", f'rm -f {ZSERV}; exec "$@"', argv[0], *argv]


def head(node: str, daemon: str) -> str:
    return f"! {daemon} for {node}, written by netrig\nhostname {node}\n"


def router_id(lab: Lab, node: str) -> str:
    """The node's IPv4 loopback (unique in the lab), else its first IPv4, else its index."""
    addrs = lab.plan.node(node).addresses(4)
    return addrs[0] if addrs else str(IPv4Address(lab.plan.node(node).index))


def point_to_point(lab: Lab, iface: IfacePlan) -> bool:
    """A veth between two routers (not a port towards a switch node)."""
    return lab.plan.node(iface.peer).kind != "switch"


def cost(lab: Lab, iface: IfacePlan) -> int:
    return lab.plan.links[iface.link].cost
