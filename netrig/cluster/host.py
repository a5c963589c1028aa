"""The host a `netrig worker` stands for: its name, its own state dir and namespace prefix.

Two workers on one machine (the simulated cluster) must never see each other's labs: each
keeps its ledger and node folders in its own state dir, and prefixes every namespace it
creates with its own prefix. On a real host the prefix is empty and the state dir the
default one.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace

from netrig.lab.ledger import STATE_DIR, Ledger
from netrig.plan.model import LabPlan

RESOURCE = "netrig-host"  # one unit per worker: one run (or lab part) at a time on a host
FACTS_KEY = "netrig-hosts"  # scheduler metadata: host name → its facts


@dataclass(frozen=True)
class HostConfig:
    """What makes this host's labs its own."""

    name: str
    state_dir: str = STATE_DIR
    ns_prefix: str = ""
    underlay_ns: str | None = None  # the namespace holding this host's underlay address
    underlay_addr: str | None = None  # the address VXLAN tunnels leave from

    @classmethod
    def from_env(cls) -> HostConfig:
        """The host described by NETRIG_HOST_NAME, NETRIG_STATE_DIR, NETRIG_NS_PREFIX..."""
        env = os.environ
        return cls(
            name=env.get("NETRIG_HOST_NAME") or socket.gethostname(),
            state_dir=env.get("NETRIG_STATE_DIR") or STATE_DIR,
            ns_prefix=env.get("NETRIG_NS_PREFIX", ""),
            underlay_ns=env.get("NETRIG_UNDERLAY_NS") or None,
            underlay_addr=env.get("NETRIG_UNDERLAY_ADDR") or None,
        )

    def ledger(self) -> Ledger:
        return Ledger(self.state_dir)

    def localize(self, plan: LabPlan) -> LabPlan:
        """The plan with this host's namespace names (the prefix in front of each)."""
        if not self.ns_prefix:
            return plan
        nodes = {
            name: node if node.ns.startswith(self.ns_prefix) else replace(
                node, ns=self.ns_prefix + node.ns
            )
            for name, node in plan.nodes.items()
        }
        return replace(plan, nodes=nodes)


# Dask's background work that a lab host does not need: the statistical profiler samples
# every thread's stack every 10 ms, and the event loop's health tick runs every 20 ms; with
# several simulated hosts sharing a machine's cores, that was ~3% of a core per idle worker,
# taken from the runs being measured.
QUIET_DASK = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "200ms",
}


def quiet_dask() -> None:
    """Dask's profiler and frequent ticks off in this process (a worker, a scheduler)."""
    import dask

    dask.config.set(QUIET_DASK)


_current: HostConfig | None = None


def current() -> HostConfig:
    """The host of this process (set by `netrig worker`; else from the environment)."""
    global _current
    if _current is None:
        _current = HostConfig.from_env()
    return _current


def set_current(config: HostConfig) -> None:
    global _current
    _current = config


def remove_leftovers(config: HostConfig) -> list[str]:
    """Tear down this host's labs whose builder is gone (a worker killed before): what
    `netrig clean` does, for this host's ledger only. Returns the labs removed."""
    from netrig.lab.teardown import teardown

    ledger = config.ledger()
    removed = []
    try:
        for record in ledger.labs():
            if not record.builder_alive():
                teardown(ledger, record.name)
                removed.append(record.name)
        # objects recorded without a lab row (a kill between the two records)
        for name in ledger.all_lab_names():
            if ledger.lab(name) is None:
                teardown(ledger, name)
                removed.append(name)
    finally:
        ledger.close()
    return removed
