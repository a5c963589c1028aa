"""Open vSwitch switch nodes (`kind: switch, switch: ovs`): seed 001's OpenFlow toolbelt
(db_create, db_start, vswitchd, set_dpid, set_stp, set_controller) done per node.

Each switch node runs its own ovsdb-server and ovs-vswitchd inside its namespace, with
its own database, sockets and pid files: the node gets a private /run (its node directory's
`run/`), so inside the node everything is at Open vSwitch's default paths and
`netrig exec LAB s1 -- ovs-vsctl show` or `… ovs-ofctl dump-flows br0` just work; from the
host the same files are under `<node dir>/run/openvswitch/`. The daemons stay in the
foreground (no --detach), so the PIDs in the ledger are theirs and `down` ends them; their
output is `netrig logs LAB s1`.

The bridge uses the userspace datapath (`datapath_type=netdev`): it needs no kernel module
(many kernels, this VM's included, have none) and reads its ports with AF_PACKET. A packet
socket sees a veth's frames before segmentation and checksumming (64 KB TCP frames with
partial checksums), so the datapath's own TCP segmentation is switched on
(`other_config:userspace-tso-enable=true`, read once when ovs-vswitchd starts): its ports
then carry virtio-net headers and such frames pass as they are. Without it TCP through the
switch stalls unless every port of the fabric has its offloads turned off (`ethtool -K IF
tx off`), which measured ten times slower here.

The database is written before ovs-vswitchd starts (`ovs-vsctl --no-wait`), so the daemon
builds the bridge, its ports, dpid, STP and controller in one go.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Collection
from ipaddress import ip_address
from typing import TYPE_CHECKING

from netrig.lab import daemons
from netrig.lab.build import LabError
from netrig.plan.model import LabPlan, NodePlan, OvsPlan

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

PACKAGE = "openvswitch-switch"
CONTROLLER_PACKAGE = "openvswitch-testcontroller"
TOOLS = ("ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-vswitchd", "ovs-appctl")
SCHEMA_PATHS = ("/usr/share/openvswitch/vswitch.ovsschema",)
RUN_IN_NODE = "/run/openvswitch"  # the node's view of <node dir>/run/openvswitch
CONTROLLER_PORT = 6653
# the smallest timers Open vSwitch accepts: ports forward 2 × 4 s after they come up
STP_TIMERS = {"stp-forward-delay": "4", "stp-max-age": "6", "stp-hello-time": "1"}
LOG_ARGS = ["-vconsole:info", "-vsyslog:off"]
START_TIMEOUT = 10.0


# ------------------------------------------------------------------ availability


def schema_path() -> str | None:
    return next((p for p in SCHEMA_PATHS if os.path.exists(p)), None)


def missing_tools(controller: bool = False) -> str:
    """'' when Open vSwitch (and, if asked, the test controller) is usable here; else one
    sentence naming what is missing and the package that brings it."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing or schema_path() is None:
        what = ", ".join(missing) or "vswitch.ovsschema"
        return (
            f"switch: ovs needs Open vSwitch, which is not installed here ({what} not found): "
            f"apt-get install -y {PACKAGE}"
        )
    if controller and shutil.which("ovs-testcontroller") is None:
        return (
            "controller: standalone runs ovs-testcontroller, which is not installed here: "
            f"apt-get install -y {CONTROLLER_PACKAGE}"
        )
    return ""


def unreachable_controller(ovs: OvsPlan) -> bool:
    """A tcp: controller off the switch's loopback: a switch node has no lab address (it
    is layer 2), so its ovs-vswitchd, inside the node's namespace, cannot reach it."""
    match = re.fullmatch(r"tcp:(\[[^\]]+\]|[0-9.]+)(?::\d+)?", ovs.controller)
    return match is not None and not ip_address(match.group(1).strip("[]")).is_loopback


def warnings(plan: LabPlan) -> list[str]:
    """Things that will not work as written but do not stop the lab (said during `up`)."""
    out = []
    for node in plan.nodes.values():
        ovs = node.ovs
        if ovs is not None and unreachable_controller(ovs):
            out.append(
                f"warning: {node.name}: controller {ovs.controller} is not on the switch's "
                "loopback; a switch node has no lab address (it is layer 2), so it could "
                f"never connect. {node.name} runs without a controller, as a learning switch"
            )
        elif ovs is not None and ovs.controller.startswith("tcp:"):
            out.append(
                f"note: {node.name}: until a controller answers at {ovs.controller}, "
                f"{node.name} drops traffic; Open vSwitch falls back to a learning switch "
                "(fail_mode standalone) about 15 s after the connection fails"
            )
    return out


FAIL_OPEN_WAIT = 20.0  # seconds `up` waits when a switch may fall back to a learning switch


def waits_for_fail_open(plan: LabPlan) -> bool:
    return any(
        n.ovs.controller.startswith("tcp:") and not unreachable_controller(n.ovs)
        for n in plan.nodes.values()
        if n.ovs
    )


# ------------------------------------------------------------------ paths and commands


def run_dir(lab: Lab, node: str) -> str:
    """The host's path of the node's /run/openvswitch (db.sock, conf.db, pid files)."""
    private = lab.private_run_dir(node)
    assert private is not None, "an OVS node always has a private /run"
    return os.path.join(private, "openvswitch")


def db_url(lab: Lab, node: str) -> str:
    """`unix:…/db.sock` of the node's ovsdb-server, usable from the host (ovs-vsctl --db=)."""
    return f"unix:{run_dir(lab, node)}/db.sock"


def vsctl(lab: Lab, node: str, *args: str, timeout: float = START_TIMEOUT) -> str:
    """ovs-vsctl against NODE's database, run from the host (the socket is a file)."""
    argv = ["ovs-vsctl", f"--db={db_url(lab, node)}", f"--timeout={max(1, int(timeout))}", *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 5)
    except subprocess.TimeoutExpired:
        raise LabError(f"{node}: ovs-vsctl {' '.join(args[:3])} timed out") from None
    if done.returncode != 0:
        raise LabError(f"{node}: ovs-vsctl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def appctl(lab: Lab, node: str, *args: str) -> str:
    """ovs-appctl to NODE's ovs-vswitchd (its control socket, named by its pid file)."""
    rd = run_dir(lab, node)
    with open(os.path.join(rd, "ovs-vswitchd.pid")) as fh:
        pid = fh.read().strip()
    target = os.path.join(rd, f"ovs-vswitchd.{pid}.ctl")
    done = subprocess.run(
        ["ovs-appctl", "-t", target, *args], capture_output=True, text=True, timeout=10
    )
    if done.returncode != 0:
        raise LabError(f"{node}: ovs-appctl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def config_args(node: NodePlan) -> list[str]:
    """One ovs-vsctl transaction: the bridge on the userspace datapath with its dpid, STP,
    ports and controller (what the seed's toolbelt does in six commands)."""
    ovs = node.ovs
    assert ovs is not None
    br = ovs.bridge
    bridge = [
        "datapath_type=netdev",
        f"other_config:datapath-id={ovs.dpid}",
        "other_config:disable-in-band=true",
        f"stp_enable={str(ovs.stp).lower()}",
    ]
    if ovs.stp:
        bridge += [f"other_config:{k}={v}" for k, v in STP_TIMERS.items()]
    args = ["--", "init", "--", "add-br", br, "--", "set", "Bridge", br, *bridge]
    # TCP segmentation in the datapath: ports are read and written with virtio-net headers,
    # so a veth's unsegmented 64 KB frames with partial checksums pass as they are
    args += ["--", "set", "Open_vSwitch", ".", "other_config:userspace-tso-enable=true"]
    for iface in node.ifaces:
        args += ["--", "add-port", br, iface.name]
    controller = controller_target(ovs)
    if controller:
        mode = "secure" if ovs.controller == "standalone" else "standalone"
        args += ["--", "set-controller", br, controller, "--", "set-fail-mode", br, mode]
    return args


def controller_target(ovs: OvsPlan) -> str | None:
    if ovs.controller == "none":
        return None
    if ovs.controller == "standalone":
        return f"tcp:127.0.0.1:{CONTROLLER_PORT}"
    return None if unreachable_controller(ovs) else ovs.controller


def daemon_argvs(ovs: OvsPlan) -> dict[str, list[str]]:
    """name → command line, in start order; paths are the node's (private /run)."""
    rd = RUN_IN_NODE
    out = {
        "ovsdb-server": [
            "ovsdb-server",
            f"{rd}/conf.db",
            f"--remote=punix:{rd}/db.sock",
            f"--pidfile={rd}/ovsdb-server.pid",
            *LOG_ARGS,
        ],
    }
    if ovs.controller == "standalone":
        out["ovs-testcontroller"] = [
            "ovs-testcontroller",
            f"ptcp:{CONTROLLER_PORT}:127.0.0.1",
            f"--pidfile={rd}/ovs-testcontroller.pid",
            *LOG_ARGS,
        ]
    out["ovs-vswitchd"] = [
        "ovs-vswitchd",
        f"unix:{rd}/db.sock",
        f"--pidfile={rd}/ovs-vswitchd.pid",
        *LOG_ARGS,
    ]
    return out


# ------------------------------------------------------------------ start and wait


def ovs_nodes(plan: LabPlan) -> list[NodePlan]:
    return [n for n in plan.nodes.values() if n.ovs is not None]


def start(lab: Lab, say: Callable[[str], None]) -> None:
    """Start every OVS switch node of the lab and wait until ovs-vswitchd has built its
    bridge (and, with `controller: standalone`, until the controller is connected)."""
    nodes = ovs_nodes(lab.plan)
    if not nodes:
        return
    problem = missing_tools(any(n.ovs and n.ovs.controller == "standalone" for n in nodes))
    if problem:
        raise LabError(problem)
    say(f"starting Open vSwitch in {', '.join(n.name for n in nodes)} (userspace datapath)")
    for text in warnings(lab.plan):
        say(text)
    schema = schema_path()
    assert schema is not None
    for node in nodes:
        assert node.ovs is not None
        rd = run_dir(lab, node.name)
        os.makedirs(rd, exist_ok=True)
        done = subprocess.run(
            ["ovsdb-tool", "create", f"{rd}/conf.db", schema], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise LabError(f"{node.name}: ovsdb-tool create: {done.stderr.strip()}")
        argvs = daemon_argvs(node.ovs)
        for name in ("ovsdb-server", "ovs-testcontroller"):
            if name in argvs:
                daemons.start(lab, node.name, name, argvs[name])
    for node in nodes:
        assert node.ovs is not None
        socket = os.path.join(run_dir(lab, node.name), "db.sock")
        _wait_for(lab, node.name, "its database", functools.partial(os.path.exists, socket))
        vsctl(lab, node.name, "--no-wait", *config_args(node))
        daemons.start(lab, node.name, "ovs-vswitchd", daemon_argvs(node.ovs)["ovs-vswitchd"])
    for node in nodes:
        # a change without --no-wait returns once ovs-vswitchd has applied the database
        vsctl(lab, node.name, "set", "Open_vSwitch", ".", f"external_ids:netrig-lab={lab.name}")
        if node.ovs is not None and node.ovs.controller == "standalone":
            name = node.name
            _wait_for(lab, name, "its controller", functools.partial(_connected, lab, name))


def _wait_for(lab: Lab, node: str, what: str, ready: Callable[[], bool]) -> None:
    daemons.wait_until(lab, ready, START_TIMEOUT, f"{node}: Open vSwitch did not get {what}")


def _connected(lab: Lab, node: str) -> bool:
    return "true" in vsctl(lab, node, "--bare", "--columns=is_connected", "list", "Controller")


def stp_settling(lab: Lab, only: Collection[str] | None = None) -> list[str]:
    """`node:port` of every OVS STP port (of the nodes ONLY names, if given) still
    listening or learning."""
    out = []
    for node in ovs_nodes(lab.plan):
        if node.ovs and node.ovs.stp and (only is None or node.name in only):
            try:
                text = appctl(lab, node.name, "stp/show", node.ovs.bridge)
            except LabError as exc:  # a daemon just started: the bridge's STP comes a little later
                if "no such stp object" not in str(exc):
                    raise
                out.append(f"{node.name}: STP not running yet")
                continue
            for port, state in re.findall(r"^\s+(\S+)\s+\S+\s+(listening|learning)\b", text, re.M):
                out.append(f"{node.name}:{port} {state}")
    return out


def wait_stp(lab: Lab, timeout: float, only: Collection[str] | None = None) -> list[str]:
    """Wait until no OVS STP port (of the nodes ONLY names, if given) is listening or
    learning; return those that still are."""
    deadline = time.monotonic() + timeout
    settling = stp_settling(lab, only)
    while settling and time.monotonic() < deadline:
        time.sleep(0.2)
        settling = stp_settling(lab, only)
    return settling


RESTART_WAIT = 20.0  # s: at most, for a switch started again to forward (STP: ~8 s)


def wait_restarted(lab: Lab, node: str, timeout: float = RESTART_WAIT) -> list[str]:
    """After NODE's daemons were started again (`netrig node LAB s1 start`, with the
    database they had): wait, as `up` does, until ovs-vswitchd has built the bridge, a
    standalone controller is connected and, with STP, every port has left listening and
    learning (~8 s); return the ports still settling after TIMEOUT s ([]: it forwards)."""
    plan = lab.plan.node(node).ovs
    if plan is None:
        return []
    socket = os.path.join(run_dir(lab, node), "db.sock")
    _wait_for(lab, node, "its database", functools.partial(daemons.answers, socket))
    # a change without --no-wait returns once ovs-vswitchd has applied the database
    vsctl(lab, node, "set", "Open_vSwitch", ".", f"external_ids:netrig-lab={lab.name}")
    if plan.controller == "standalone":
        _wait_for(lab, node, "its controller", functools.partial(_connected, lab, node))
    return wait_stp(lab, timeout, [node]) if plan.stp else []


def bridge_facts(lab: Lab, node: str) -> dict[str, str | bool]:
    """datapath_type, dpid, stp_enable and fail_mode of NODE's bridge, as OVS reports them
    (stp_enable a bool)."""
    cols = "name,datapath_type,datapath_id,stp_enable,fail_mode"
    data = json.loads(vsctl(lab, node, "--format=json", f"--columns={cols}", "list", "Bridge"))
    row = dict(zip(data["headings"], data["data"][0], strict=True))
    return {k: v if isinstance(v, str | bool) else json.dumps(v) for k, v in row.items()}
