"""The Dask worker of one lab host (`netrig worker --scheduler tcp://HOST:PORT`).

It offers one unit of the resource `netrig-host`, so a host runs one run (or builds one lab
part) at a time however many threads it has, publishes its facts in the scheduler's
metadata (`netrig-hosts` → name → facts), removes the leftovers of a worker of this host
that was killed before, and tears its labs down when it is stopped (SIGTERM, SIGINT).
No nanny: the worker is the one process recorded for the host, and a worker that dies is
a lost host whose runs the client sends elsewhere.

A watchdog (`NetrigWorker.watch_clients`, every WATCH_INTERVAL seconds while this host keeps
a sweep's lab) asks the scheduler whether the leases of those sweeps' clients still exist;
the labs of a client that is gone (killed: it could not release them) are released here
(`tasks.reap`). One small request to the scheduler per tick, none while nothing is kept.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import Any

from distributed import Status, Worker
from tornado.ioloop import PeriodicCallback

from netrig.cluster import tasks
from netrig.cluster.host import (
    FACTS_KEY,
    RESOURCE,
    HostConfig,
    quiet_dask,
    remove_leftovers,
    set_current,
)
from netrig.host.facts import collect_host_facts
from netrig.lab.build import LabError

FACT_TOOLS = ("iperf3", "fping", "ping", "bird", "babeld", "batmand")
WATCH_INTERVAL = 2.0  # s between the watchdog's questions to the scheduler
log = logging.getLogger("netrig")


def host_facts(config: HostConfig) -> dict[str, Any]:
    """What the scheduler shows about this host: its facts, the kernel features netrig
    doctor probes, and how it keeps its labs."""
    from netrig.host.features import probe_features

    return {
        **collect_host_facts(FACT_TOOLS),
        "features": {name: r.status for name, r in probe_features().items()},  # netrig doctor's
        "netrig_host": config.name,
        "state_dir": config.state_dir,
        "ns_prefix": config.ns_prefix,
        "underlay_ns": config.underlay_ns,
        "underlay_addr": config.underlay_addr,
        "pid": os.getpid(),
    }


class NetrigWorker(Worker):
    """A Dask worker that is a netrig host: resource netrig-host=1, facts published.

    Also the `worker_class` of `netrig cluster ssh` (Dask's SSHCluster), where the host is
    described by its environment (HostConfig.from_env: NETRIG_HOST_NAME...)."""

    def __init__(self, *args: Any, host_config: HostConfig | None = None, **kwargs: Any) -> None:
        self.host_config = host_config or HostConfig.from_env()
        kwargs.setdefault("name", self.host_config.name)
        kwargs["resources"] = {**(kwargs.get("resources") or {}), RESOURCE: 1}
        kwargs.setdefault("memory_limit", 0)
        kwargs.setdefault("dashboard", False)
        kwargs.setdefault("local_directory", os.path.join(self.host_config.state_dir, "dask"))
        set_current(self.host_config)
        quiet_dask()
        super().__init__(*args, **kwargs)
        self._reaping = False
        self.periodic_callbacks["netrig-clients"] = PeriodicCallback(
            self.watch_clients, WATCH_INTERVAL * 1000)

    async def watch_clients(self) -> None:
        """Release the labs of sweeps whose client left the scheduler without releasing
        them: the scheduler has forgotten their lease. A question the scheduler cannot
        answer decides nothing."""
        held = tasks.leases()
        if not held or self._reaping or self.status != Status.running:
            return
        try:
            known = await self.scheduler.get_task_status(keys=sorted(held))
        except Exception:  # the scheduler away (reconnecting): ask again next time
            return
        gone = {key for key in held if known.get(key) is None}
        if not gone:
            return
        self._reaping = True
        try:
            removed = await asyncio.to_thread(tasks.reap, gone)
        except Exception:
            log.exception("releasing the labs of a client that left the cluster")
        else:
            if removed:
                log.warning("the client of lab %s left the cluster without releasing it: "
                            "released", ", ".join(removed))
        finally:
            self._reaping = False

    async def start_unsafe(self) -> NetrigWorker:
        if not _prepared:
            prepare(self.host_config)
        await super().start_unsafe()
        await self.scheduler.set_metadata(
            keys=[FACTS_KEY, self.host_config.name], value=host_facts(self.host_config)
        )
        return self


_prepared = False


def prepare(config: HostConfig) -> None:
    """Before joining: this host's state dir, the imports a run needs, and the removal of
    what a killed worker of this host left behind."""
    global _prepared
    os.makedirs(config.state_dir, exist_ok=True)
    os.environ["NETRIG_STATE_DIR"] = config.state_dir  # for anything that reads the default
    _preload()
    removed = remove_leftovers(config)
    if removed:
        logging.getLogger("netrig").warning("removed leftovers of a lost worker: %s", removed)
    _prepared = True


JOIN_TIMEOUT = 60.0  # s: a worker started before its scheduler waits this long for it


async def _serve(
    scheduler: str, config: HostConfig, listen: str | None, nthreads: int, join_timeout: float
) -> None:
    worker = NetrigWorker(
        scheduler, host_config=config, nthreads=nthreads, host=listen, death_timeout=join_timeout
    )
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    try:
        await worker
    except TimeoutError:  # Dask closed the worker: one message, not its traceback
        raise LabError(
            f"cannot reach the cluster scheduler {scheduler} in {join_timeout:g} s: start it "
            "first (or give --join-timeout more), and check its address"
        ) from None
    try:
        finished = asyncio.ensure_future(worker.finished())
        stopper = asyncio.ensure_future(stopping.wait())
        await asyncio.wait([finished, stopper], return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
    finally:
        await worker.close(timeout=5)


def _preload() -> None:
    """Import what a run needs (the plugins, the runner) before joining: the first run of a
    fresh worker should not pay seconds of imports on the clock of a sweep."""
    from netrig import measure, routing, services

    measure.load_plugins()
    routing.load_plugins()
    services.load_plugins()
    import netrig.plan.experiment  # noqa: F401  (unpickling an experiment needs it)


def run_worker(
    scheduler: str,
    config: HostConfig,
    listen: str | None = None,
    nthreads: int = 2,
    join_timeout: float = JOIN_TIMEOUT,
) -> None:
    """Serve as this host's worker until stopped; then remove this host's labs."""
    set_current(config)
    logging.getLogger("distributed").setLevel(logging.WARNING)
    prepare(config)
    try:
        asyncio.run(_serve(scheduler, config, listen, nthreads, join_timeout))
    finally:
        for sweep in list(tasks._sessions):
            tasks.release(sweep)
        remove_leftovers(config)
