"""A cluster simulated on this one machine (`netrig cluster local up/status/down`).

A scheduler and N `netrig worker` processes, each worker a host of its own: its own state
dir (ledger, node folders), namespace prefix and underlay namespace (see `underlay`). The
scheduler and workers listen on 127.0.0.1 only. Everything is written down before it
exists, in the cluster's own ledger (STATE_DIR/clusters/NAME): the namespaces, and each
process with its PID and start time, so `down` ends exactly the processes `up` started.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from netrig.cluster import underlay
from netrig.lab import teardown
from netrig.lab.build import BadInput, LabError, Progress
from netrig.lab.ledger import STATE_DIR, Ledger, process_alive, process_starttime

LISTEN = "127.0.0.1"
START_TIMEOUT = 60.0


@dataclass
class SimHost:
    name: str
    state_dir: str
    ns_prefix: str
    underlay_ns: str
    underlay_addr: str
    log: str


@dataclass
class LocalCluster:
    name: str
    root: str
    scheduler: str = ""
    hosts: list[SimHost] | None = None

    @property
    def info_path(self) -> str:
        return os.path.join(self.root, "cluster.json")

    def save(self) -> None:
        os.makedirs(self.root, exist_ok=True)
        with open(self.info_path, "w") as fh:
            json.dump(asdict(self), fh, indent=1)

    @classmethod
    def load(cls, name: str, state_dir: str = STATE_DIR) -> LocalCluster | None:
        root = cluster_root(name, state_dir)
        try:
            with open(os.path.join(root, "cluster.json")) as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return None
        data["hosts"] = [SimHost(**h) for h in data["hosts"] or []]
        return cls(**data)


def cluster_root(name: str, state_dir: str = STATE_DIR) -> str:
    return os.path.join(state_dir, "clusters", name)


def _check_name(name: str) -> None:
    if not name or len(name) > 12 or not all(c.isalnum() for c in name):
        raise BadInput(f"cluster name {name!r}: use 1-12 letters or digits")


def _spawn(ledger: Ledger, lab: str, label: str, node: str | None, argv: list[str],
           log: str, env: dict[str, str] | None = None) -> int:
    """Start one process, recorded before it exists and with its PID as it starts."""
    record = ledger.intend_process(lab, label, node)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, env=env,  # a Ctrl-C in the terminal is not for them
        )
    ledger.created_process(record, proc.pid, process_starttime(proc.pid) or 0)
    return proc.pid


def _wait_file(path: str, pid: int, what: str, log: str) -> dict[str, str]:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            with open(path) as fh:
                return json.load(fh)
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        if not os.path.exists(f"/proc/{pid}"):
            break
        time.sleep(0.1)
    raise LabError(f"{what} did not start; its log {log}:\n{_tail(log)}")


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return ""


def up(
    hosts: int, name: str = "local", state_dir: str = STATE_DIR, say: Progress | None = None
) -> LocalCluster:
    """Start the simulated cluster; its scheduler address is `.scheduler`."""
    say = say or (lambda _m: None)
    _check_name(name)
    if os.geteuid() != 0:
        raise BadInput("netrig must run as root to create network namespaces")
    try:
        layout = underlay.plan(name, hosts)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    root = cluster_root(name, state_dir)
    os.makedirs(root, exist_ok=True)
    ledger = Ledger(root)
    began = done = False
    try:
        if ledger.lab(name) is not None:
            raise LabError(
                f"cluster {name!r} is already up; `netrig cluster local down --name {name}` "
                "ends it"
            )
        ledger.begin_lab(name, hosts, None)
        began = True
        cluster = LocalCluster(name, root, hosts=[])
        try:
            say(f"creating the underlay ({hosts} hosts, bridge in {layout.bridge_ns})")
            underlay.create(layout, ledger, name)
            missing = underlay.reachable(layout)
            if missing:
                raise LabError(f"underlay: {', '.join(missing)} not reachable from host 1")
            sched_file = os.path.join(root, "scheduler.json")
            with_log = os.path.join(root, "scheduler.log")
            pid = _spawn(ledger, name, "scheduler", None,
                         [sys.executable, "-m", "netrig.cluster.scheduler", "--host", LISTEN,
                          "--scheduler-file", sched_file], with_log)
            cluster.scheduler = _wait_file(sched_file, pid, "the scheduler", with_log)["address"]
            say(f"scheduler at {cluster.scheduler}")
            for i, (ns, addr) in enumerate(zip(layout.host_ns, layout.host_addrs, strict=True), 1):
                host = SimHost(
                    name=f"{name}-h{i}",
                    state_dir=os.path.join(root, "hosts", f"h{i}"),
                    ns_prefix=f"{name}h{i}-",
                    underlay_ns=ns,
                    underlay_addr=addr,
                    log=os.path.join(root, f"worker-h{i}.log"),
                )
                os.makedirs(host.state_dir, exist_ok=True)
                cluster.hosts.append(host)  # type: ignore[union-attr]
                cluster.save()
                _spawn(ledger, name, f"worker {host.name}", host.name,
                       [sys.executable, "-m", "netrig", "worker", "--scheduler", cluster.scheduler,
                        "--name", host.name, "--state-dir", host.state_dir,
                        "--ns-prefix", host.ns_prefix, "--underlay-ns", host.underlay_ns,
                        "--underlay-addr", host.underlay_addr, "--listen", LISTEN],
                       host.log)
            cluster.save()
            _wait_workers(cluster)
        except BaseException:
            _down(ledger, cluster)
            raise
        ledger.set_lab_state(name, "up")
        done = True
        return cluster
    finally:
        ledger.close()
        if began and not done:  # what it made is gone (`_down`): its state dir goes too
            shutil.rmtree(root, ignore_errors=True)


def _wait_workers(cluster: LocalCluster) -> None:
    from distributed import Client

    assert cluster.hosts is not None
    with Client(cluster.scheduler, timeout=START_TIMEOUT) as client:
        deadline = time.monotonic() + START_TIMEOUT
        while len(client.scheduler_info(n_workers=-1)["workers"]) < len(cluster.hosts):
            dead = [h for h in cluster.hosts if not _alive_worker(cluster, h)]
            if dead or time.monotonic() > deadline:
                host = (dead or cluster.hosts)[0]
                raise LabError(f"worker {host.name} did not join; its log:\n{_tail(host.log)}")
            time.sleep(0.1)


def _alive_worker(cluster: LocalCluster, host: SimHost) -> bool:
    ledger = Ledger(cluster.root)
    try:
        return any(process_alive(o.pid, o.starttime) for o in ledger.objects(kind="process")
                   if o.node == host.name and o.pid)
    finally:
        ledger.close()


@dataclass
class HostStatus:
    host: SimHost
    pid: int | None
    alive: bool
    labs: list[str]


def status(name: str = "local", state_dir: str = STATE_DIR) -> tuple[LocalCluster, list[HostStatus]]:
    """The cluster and, per host, its worker's PID, whether it runs, and its labs."""
    cluster = LocalCluster.load(name, state_dir)
    if cluster is None:
        raise BadInput(f"no local cluster {name!r} is up (`netrig cluster local up --hosts N`)")
    ledger = Ledger(cluster.root)
    try:
        procs = {o.node: o for o in ledger.objects(name, "process")}
    finally:
        ledger.close()
    out = []
    for host in cluster.hosts or []:
        rec = procs.get(host.name)
        host_ledger = Ledger(host.state_dir)
        try:
            labs = host_ledger.all_lab_names()
        finally:
            host_ledger.close()
        alive = bool(rec and rec.pid and process_alive(rec.pid, rec.starttime))
        out.append(HostStatus(host, rec.pid if rec else None, alive, labs))
    return cluster, out


@dataclass
class DownReport:
    processes: int = 0
    namespaces: int = 0
    labs: int = 0


def down(name: str = "local", state_dir: str = STATE_DIR) -> DownReport:
    """End the workers (each tears its labs down), remove what a killed one left, end the
    scheduler, remove the underlay and the cluster's state. Idempotent."""
    _check_name(name)
    root = cluster_root(name, state_dir)
    if not os.path.exists(os.path.join(root, "ledger.sqlite")):
        return DownReport()
    cluster = LocalCluster.load(name, state_dir) or LocalCluster(name, root, hosts=[])
    ledger = Ledger(root)
    try:
        report = _down(ledger, cluster)
    finally:
        ledger.close()
    shutil.rmtree(root, ignore_errors=True)
    return report


def _down(ledger: Ledger, cluster: LocalCluster) -> DownReport:
    report = DownReport()
    procs = [o for o in ledger.objects(cluster.name, "process") if o.node]
    workers = {o.pid: o.starttime for o in procs if o.pid}
    # workers first, gently: each tears down its own labs when it gets SIGTERM
    report.processes += teardown.end_processes(workers, wait=30.0)
    for o in procs:
        ledger.forget_object(o.id)
    for host in cluster.hosts or []:  # what a killed worker left behind
        if not os.path.exists(os.path.join(host.state_dir, "ledger.sqlite")):
            continue
        host_ledger = Ledger(host.state_dir)
        try:
            for lab in host_ledger.all_lab_names():
                done = teardown.teardown(host_ledger, lab)
                report.labs += 1
                report.namespaces += done.namespaces
                report.processes += done.processes
        finally:
            host_ledger.close()
    rest = teardown.teardown(ledger, cluster.name)  # the scheduler, then the underlay
    report.processes += rest.processes
    report.namespaces += rest.namespaces
    return report
