"""A running lab as the lab core and the plugins see it: its plan, its ledger, its nodes'
folders, and processes started in its nodes (recorded by PID). The rig's `Lab` adds building
and routing on top; plugins and faults take a `LabRuntime`, so they need not import the rig.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from netrig.lab import netns, procs, run
from netrig.lab.ledger import Ledger, process_alive, process_starttime
from netrig.model.catalog import Catalog
from netrig.plan.model import LabPlan


class RoutingBehaviour(Protocol):
    """What the lab core asks of a routing plugin (netrig.routing.RoutingProtocol has it)."""

    name: ClassVar[str]
    restores_dropped_routes: ClassVar[bool]

    # read-only here; a daemon protocol sets them per instance (for its lab)
    @property
    def convergence_timeout(self) -> float: ...
    @property
    def poll_interval(self) -> float: ...

    def runs_daemons(self) -> bool: ...
    def routes(self, plan: Any) -> dict[str, list[Any]]: ...
    def is_ours(self, route: Any) -> bool: ...
    def start(self, lab: Any) -> None: ...
    def stop(self, lab: Any) -> None: ...
    def converged(self, lab: Any) -> bool: ...
    def pending(self) -> str: ...


class ServiceSupervision(Protocol):
    """What a measurement asks of the lab's services between and after runs (the rig hands
    down netrig.services, which a measurement plugin may not import)."""

    def planned(self, lab: Any) -> list[Any]: ...
    def revive(self, lab: Any) -> list[str]: ...
    def exit_report(self, lab: Any, lines: int = 10) -> str: ...
    def restart(self, lab: Any, node: str) -> list[str]: ...


RuntimeT = TypeVar("RuntimeT", bound="LabRuntime")


class LabRuntime:
    """A lab that exists (or is being built): what plugins and faults work with.

    `catalog` holds the plugin registries when the rig made this lab, so one plugin can
    reach another by name (an XDP measurement putting back the node's XDP firewall)
    without importing its package."""

    catalog: Catalog | None = None

    def __init__(self, plan: LabPlan, ledger: Ledger | None = None) -> None:
        self.plan = plan
        self.ledger = ledger or Ledger()

    @classmethod
    def attach(cls: type[RuntimeT], name: str, ledger: Ledger | None = None) -> RuntimeT:
        """A lab that is up (built by this or another process), from its saved plan: all
        that `netrig exec` needs, with no file read, model or plugin loaded."""
        ledger = ledger or Ledger()
        if ledger.lab(name) is None:
            from netrig.lab.build import BadInput

            raise BadInput(f"no lab named {name!r} is up (see `netrig status`)")
        try:
            with open(ledger.plan_path(name)) as fh:
                plan = LabPlan.from_json(fh.read())
        except FileNotFoundError:
            from netrig.lab.build import LabError

            raise LabError(
                f"lab {name!r} is recorded but was never completed; `netrig down {name}`"
            ) from None
        return cls(plan, ledger)

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def protocol(self) -> RoutingBehaviour:
        """The lab's routing plugin; the rig's Lab provides it."""
        raise NotImplementedError("a bare LabRuntime has no routing plugin")

    @property
    def services(self) -> ServiceSupervision:
        """Supervision of the lab's services; the rig's Lab provides it."""
        raise NotImplementedError("a bare LabRuntime runs no services")

    def with_ledger(self, ledger: Ledger) -> LabRuntime:
        """The same lab through another ledger connection (one per thread: SQLite's rule)."""
        return type(self)(self.plan, ledger)

    # ------------------------------------------------------------ use

    def nodes(self) -> list[str]:
        return list(self.plan.nodes)

    def addr(self, node: str, family: int = 4) -> str:
        return self.plan.addr(node, family)

    def ns(self, node: str) -> str:
        return self.plan.node(node).ns

    def node_dir(self, node: str) -> str:
        """Per-node files of a running lab (daemon configs and logs): gone with the lab."""
        self.plan.node(node)
        path = os.path.join(self.ledger.lab_dir(self.name), "nodes", node)
        os.makedirs(path, exist_ok=True)
        return path

    def private_run_dir(self, node: str) -> str | None:
        plan = self.plan.node(node)
        if not (self.plan.private_run or plan.private_run) and plan.ovs is None:
            return None
        path = os.path.join(self.node_dir(node), "run")
        if not os.path.isdir(path):
            os.makedirs(path, exist_ok=True)
            point = run.node_dir_mount_point(path)  # where its config files stay in sight
            if point is not None:
                os.makedirs(point, exist_ok=True)
            # its /var/tmp, as the host's: anyone may write, only the owner removes
            var_tmp = os.path.join(self.node_dir(node), run.VAR_TMP)
            os.makedirs(var_tmp, exist_ok=True)
            os.chmod(var_tmp, 0o1777)
        return path

    def start_daemon(self, node: str, argv: Sequence[str], name: str) -> subprocess.Popen[Any]:
        """A supervised daemon: output to <node dir>/<name>.log, recorded as node/name."""
        log_path = os.path.join(self.node_dir(node), f"{name}.log")
        with open(log_path, "ab") as log:
            return self.popen(
                node,
                argv,
                label=f"{self.name}/{node}/{name}",
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def daemon_failures(self, lines: int = 20) -> list[tuple[str, str]]:
        """(label, log tail) of every daemon of this lab (a process of `start_daemon`, which
        has a log) that is no longer running; a measurement's processes are not daemons."""
        failed = []
        for obj in self.ledger.objects(self.name, "process"):
            label = obj.name.removeprefix(f"{self.name}/")
            log = os.path.join(self.ledger.lab_dir(self.name), "nodes", f"{label}.log")
            if obj.pid and os.path.exists(log) and not process_alive(obj.pid, obj.starttime):
                failed.append((label, log_tail(log, lines)))
        return failed

    def exec(
        self, node: str, argv: Sequence[str], **kwargs: Any
    ) -> subprocess.CompletedProcess[Any]:
        """Run a command in a node and wait for it (subprocess.run's keywords apply)."""
        argv = _words(argv)
        self._require_up(node)
        kwargs.setdefault("text", True)
        binds = self.plan.node(node).binds
        return run.run(self.ns(node), argv, self.private_run_dir(node), binds, **kwargs)

    def _require_up(self, node: str) -> None:
        """A node whose namespace is not there (the lab not up, or taken down): said so, as
        an error (exec had returned 125 and printed netrig-nsexec's "open /run/netns/…")."""
        if not netns.exists(self.ns(node)):
            from netrig.lab.build import LabError

            raise LabError(f"lab {self.name} is not up (node {node} has no namespace); "
                           "bring it up first (lab.up())")

    def popen(
        self, node: str, argv: Sequence[str], label: str | None = None, **kwargs: Any
    ) -> subprocess.Popen[Any]:
        """Start a long-running process in a node, recorded in the ledger by PID."""
        argv = _words(argv)
        self._require_up(node)
        label = label or f"{self.name}/{node}/{os.path.basename(argv[0])}/{time.monotonic_ns()}"
        oid = self.ledger.intend_process(self.name, label, node)
        binds = self.plan.node(node).binds
        proc = run.popen(self.ns(node), argv, self.private_run_dir(node), binds, **kwargs)
        self.ledger.created_process(oid, proc.pid, process_starttime(proc.pid) or 0)
        return proc

    def listening_ports(
        self, node: str, proc: subprocess.Popen[Any], proto: str = "tcp"
    ) -> set[int]:
        """The ports a process started by `popen` listens on, once it is inside the node's
        namespace (it starts in ours); empty before. A lab spread over hosts asks the
        node's host."""
        try:
            inside = os.stat(f"/proc/{proc.pid}/ns/net").st_ino == netns.ns_inode(self.ns(node))
        except OSError:
            return set()
        return procs.listening_ports(proc.pid, proto) if inside else set()

    def exists(self) -> bool:
        return all(netns.exists(n.ns) for n in self.plan.nodes.values())


def log_tail(path: str, lines: int) -> str:
    """The last lines of a daemon's log, for a crash report."""
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return "(no log)"


def _words(argv: Sequence[str]) -> list[str]:
    """A command as its words: a string would be run letter by letter ('i', 'p', …)."""
    if isinstance(argv, str | bytes):
        raise TypeError(
            f"a command is a list of words, e.g. {str(argv).split()!r}, not one string "
            "(a shell line: ['sh', '-c', LINE])"
        )
    words = list(argv)
    if not words:
        raise ValueError("an empty command: give at least the program to run")
    return words
