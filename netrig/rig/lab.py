"""The Python API of a lab: build it from a file or from code, use it, remove it.

    with Lab.from_file("ring.yaml") as lab:
        lab.exec("n1", ["ping", "-c1", lab.addr("n5")])

A running lab is also reachable by name from another process: `Lab.attach("ring")`.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from netrig.lab import settle
from netrig.lab.build import BuildTimings, LabError, Progress, build, preflight
from netrig.lab.ledger import Ledger, save_text
from netrig.lab.runtime import LabRuntime, ServiceSupervision
from netrig.plan.model import LabPlan
from netrig.rig.catalog import catalog

if TYPE_CHECKING:
    from netrig.lab import check, netns, teardown
    from netrig.model.models import LabSpec
    from netrig.rig.hostneeds import Need
    from netrig.rig.plancache import Lookup
    from netrig.routing import RoutingProtocol

# Imported where they are used, not here: a lab without firewalls, services, exec lines or
# daemons (a static ring) never loads the firewall or service plugins, the process helpers
# of the lab core or its teardown (`netrig up` starts fast; tests/test_startup.py); a lab
# whose plan was remembered (netrig.rig.plancache) loads neither the model nor its routing
# plugin when its routing runs no daemons.


LARGE_LAB = 2000  # nodes: from here a check that ran out of time may just need longer


def _longer_hint(nodes: int, timeout: float, result: check.CheckResult) -> str:
    """For a large lab whose every failure is an echo unanswered in time (its FIBs
    proved nothing wrong): how to give it longer. A hub of 4,000 ports takes ~15 s."""
    from netrig.lab import check

    unanswered = all(result.reasons.get(p, check.NO_REPLY) == check.NO_REPLY for p in result.failed)
    if nodes < LARGE_LAB or not unanswered:
        return ""
    return (
        f"; a lab of {nodes} nodes may need longer to answer every echo: try "
        f"`check: {{timeout: {max(60.0, 6 * timeout):g}}}`"
    )


class Lab(LabRuntime):
    """A lab with its plugins: built by `up`, removed by `down` (or the `with` block)."""

    def __init__(self, plan: LabPlan, ledger: Ledger | None = None) -> None:
        super().__init__(plan, ledger)
        self.catalog = catalog()
        self.timings: BuildTimings | None = None
        self.check_result: check.CheckResult | None = None
        self._owner = False  # True when this object built the lab (and so removes it on exit)
        self._protocol: RoutingProtocol | None = None
        # where to remember the plan once the lab is up, and what it needs from a host
        self._remember: tuple[Lookup, list[Need]] | None = None

    # ------------------------------------------------------------ construction

    @classmethod
    def from_file(
        cls,
        path: str,
        name: str | None = None,
        topo: str | None = None,
        up_next: bool = False,
        cache: bool = False,
    ) -> Lab:
        """A lab file (netrig, containerlab or Mininet), as lab NAME if given. up_next: `up`
        follows at once, so static routes are planned in a forked child meanwhile (`up`
        waits for them before installing them; if it is not called, call
        `lab.plan.cancel_routes()`). cache: use the plan an earlier `up` of the same file
        made, and remember this one once up (netrig.rig.plancache; what `netrig up` does).
        An experiment file gives the lab of its first sweep point, as `netrig up` does."""
        from netrig.rig.prepare import first_point, is_experiment_file

        if topo is None and is_experiment_file(path):
            return cls(first_point(path, name).plan)
        return cls.from_lab_file(path, name, topo, up_next, cache)

    @classmethod
    def from_lab_file(
        cls,
        path: str,
        name: str | None = None,
        topo: str | None = None,
        up_next: bool = False,
        cache: bool = False,
    ) -> Lab:
        """from_file of a file known to be a lab file (read once: `netrig up` has looked)."""
        from netrig.rig.prepare import plan_file

        if cache:
            from netrig.rig.plancache import lookup

            found = lookup(path, name, topo)
            if found is not None:
                return cls.from_lookup(found, up_next)
        plan = plan_file(path, name, topo, defer_routes=up_next)
        plan.source_file = os.path.abspath(path)
        return cls(plan)

    @classmethod
    def from_lookup(cls, found: Lookup, up_next: bool = False) -> Lab:
        """The lab of a file looked up in the plans remembered (netrig.rig.plancache): the
        plan found, else the file's bytes as looked up planned now, and remembered once
        the lab is up."""
        if found.plan is not None:
            found.plan.source_file = os.path.abspath(found.path)
            return cls(found.plan)
        from netrig.rig.prepare import plan_netrig_bytes

        planned = plan_netrig_bytes(found.path, found.data, found.name, defer_routes=up_next)
        if planned is None:  # another tool's file after all (containerlab, by content)
            return cls.from_lab_file(found.path, found.name, up_next=up_next)
        plan, needs = planned
        plan.source_file = os.path.abspath(found.path)
        lab = cls(plan)
        lab._remember = (found, needs)
        return lab

    @classmethod
    def from_spec(cls, spec: LabSpec | dict[str, Any]) -> Lab:
        """A lab described in code: a LabSpec or the same dict a YAML file would hold."""
        from netrig.rig.prepare import from_spec, plan_lab

        return cls(plan_lab(from_spec(spec)))

    # ------------------------------------------------------------ lifecycle

    def up(
        self,
        *,
        check_reachability: bool = True,
        progress: Progress | None = None,
        spare: netns.SpareNamespaces | None = None,
    ) -> BuildTimings:
        """Build the lab and wait until it is usable (see `netrig up`). spare: namespaces
        made ahead while the file was read (netns.SpareNamespaces; the caller closes it)."""
        say = progress or (lambda _m: None)
        try:
            preflight(self.plan, self.ledger)
        except BaseException:
            self.plan.cancel_routes()
            raise
        self.ledger.begin_lab(self.name, len(self.plan.nodes), self.plan.source_file)
        self._owner = True
        ahead: dict[str, Any] = {}  # worked out from the plan while the kernel builds

        def meanwhile() -> None:
            ahead["json"] = self.plan.to_json()
            if check_reachability and self.plan.reachability != "none":
                from netrig.lab import check  # here: a lab not checked never loads it

                ahead["check"] = check.prepare(self.plan, self.plan.reachability)

        try:
            self.timings = build(self.plan, self.ledger, say, spare, meanwhile)
            nodes = self.plan.nodes.values()
            if any(n.firewall for n in nodes):
                from netrig.firewall import _lab as firewall

                firewall.apply_all(self, say)
            save_text(self.ledger.plan_path(self.name), ahead["json"])
            self._start_switches(say)
            self._start_routing(say)
            self._wait_usable(check_reachability, say, ahead.get("check"))
            if any(n.services for n in nodes):
                from netrig import services

                services.start_all(self, say)
            if any(n.cmd or n.exec for n in nodes):
                from netrig.lab import programs

                programs.start(self, say)
            if self._remember is not None:  # while a signal still removes the lab
                found, needs = self._remember
                self._remember = None
                found.remember(self.plan, needs)
        except BaseException:
            self.plan.cancel_routes()
            self.down()
            raise
        self.ledger.set_lab_state(self.name, "up")
        return self.timings

    @property
    def services(self) -> ServiceSupervision:
        from netrig import services

        return services

    @property
    def protocol(self) -> RoutingProtocol:
        """The routing plugin of this lab, configured as the file said."""
        if self._protocol is None:
            from netrig import routing

            self._protocol = routing.make(self.plan.protocol, self.plan.routing_options)
        return self._protocol

    def _start_switches(self, say: Progress) -> None:
        """Open vSwitch switch nodes run daemons: started before routing needs the fabric."""
        if any(n.ovs for n in self.plan.nodes.values()):
            from netrig.switch import ovs

            start = time.perf_counter()
            ovs.start(self, say)
            if self.timings:
                self.timings.extra["switches"] = time.perf_counter() - start

    def _start_routing(self, say: Progress) -> None:
        """Start the protocol's daemons (if any) and wait until it says it has converged."""
        if not self.plan.routing_daemons:
            return
        proto = self.protocol
        if not proto.runs_daemons():
            return
        say(f"starting {proto.name}")
        start = time.perf_counter()
        proto.start(self)
        self.wait_converged("during start-up")
        if self.timings:
            self.timings.extra["converged"] = time.perf_counter() - start
        say(f"{proto.name} converged in {time.perf_counter() - start:.2f} s")

    def wait_converged(self, when: str = "") -> float:
        """Wait until the routing protocol says every node reaches every other (at once for
        static routing); LabError naming a crashed daemon or the routes still missing.
        Returns the seconds waited."""
        if not self.plan.routing_daemons:
            return 0.0
        proto = self.protocol
        if not proto.runs_daemons():
            return 0.0
        start = time.monotonic()
        timeout = max(self.plan.check_timeout, proto.convergence_timeout)
        while not proto.converged(self):
            crashed = self.daemon_failures()
            if crashed:
                label, tail = crashed[0]
                during = f" {when}" if when else ""
                raise LabError(f"{label} exited{during}; last log lines:\n{tail}")
            if time.monotonic() - start > timeout:
                missing = proto.pending()
                raise LabError(
                    f"{proto.name} did not converge within {timeout:g} s"
                    + (f"; still missing: {missing}" if missing else "")
                )
            time.sleep(proto.poll_interval)
        return time.monotonic() - start

    def _wait_usable(
        self, check_reachability: bool, say: Progress, prepared: check.Prepared | None = None
    ) -> None:
        start = time.perf_counter()
        timeout = self.plan.check_timeout
        nodes = self.plan.nodes.values()
        ovs_nodes = any(n.ovs for n in nodes)
        if ovs_nodes:
            from netrig.switch import ovs
        settling: list[str] = []
        if any(n.bridge and n.bridge.stp for n in nodes):
            say("waiting for spanning tree to settle")
            settling += settle.wait_bridges(self.plan, max(timeout, 10.0))
        if any(n.ovs and n.ovs.stp for n in nodes):
            say("waiting for Open vSwitch spanning tree to settle")
            settling += ovs.wait_stp(self, max(timeout, 20.0))
        if settling:
            raise LabError(f"spanning tree still settling in {', '.join(settling[:5])}")
        pinged = 0  # pairs the check proved: none, and the links are waited for instead
        if check_reachability and self.plan.reachability != "none":
            if ovs_nodes and ovs.waits_for_fail_open(self.plan):
                timeout = max(timeout, ovs.FAIL_OPEN_WAIT)
            say("checking reachability")
            from netrig.lab import check

            result = check.verify(self.plan, self.plan.reachability, timeout, prepared)
            self.check_result = result
            if result.failed:
                raise LabError(
                    f"unreachable after {timeout:g} s: {result.describe()}"
                    + _longer_hint(len(self.plan.nodes), timeout, result)
                )
            pinged = result.pairs
        if not pinged:  # --no-check, or nothing to ping (no routing: a switch dropped ~0.5 s)
            dark = settle.wait_carrier(self.plan, timeout)
            if dark:
                raise LabError(f"no carrier after {timeout:g} s on {', '.join(dark[:5])}")
        if self.timings:
            self.timings.extra["usable"] = time.perf_counter() - start

    def down(self) -> teardown.TeardownReport:
        """Stop the protocol's daemons gently, then remove everything the ledger names."""
        from netrig.lab import teardown

        try:
            if self.ledger.objects(self.name, "process"):
                from netrig import services

                services.stop_all(self)
                self.protocol.stop(self)
        except Exception:  # a failing stop must never keep the lab from going away
            pass
        return teardown.teardown(self.ledger, self.name)

    def __enter__(self) -> Lab:
        """Up, unless a lab of this name is up already with this layout (then it is used as
        it is, and left up on exit); one with another layout is refused, as `up` refuses
        it: its nodes are not this plan's (exec of a node it lacks failed with 125)."""
        if self.ledger.lab(self.name) is None:
            self.up()
            return self
        running = type(self).attach(self.name, self.ledger)
        if _layout(running.plan) != _layout(self.plan):
            from netrig.lab.build import BadInput

            raise BadInput(
                f"lab {self.name!r} is already up with another layout (its routing, nodes, "
                f"links or addresses differ): `netrig down {self.name}`, or give this one "
                "another name"
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._owner:
            self.down()


def _layout(plan: LabPlan) -> tuple[object, ...]:
    """What two plans of one name must share for a lab that is up to be this plan's: its
    routing, nodes, links and every address (a lab up with another pool answers at
    addresses this plan does not know)."""
    return (
        plan.protocol,
        frozenset(
            (node.name, tuple(node.loopbacks), tuple((i.name, tuple(i.addrs)) for i in node.ifaces))
            for node in plan.nodes.values()
        ),
        frozenset((link.a, link.a_iface, link.b, link.b_iface) for link in plan.links),
    )
