"""A simulated 3-host cluster, for real: a sweep spread over the hosts, Ctrl-C, a worker
killed with kill -9 mid-sweep without losing a run, and nothing left after `down`.

The tests share one cluster (starting one takes seconds) and run in file order: the
kill -9 test comes last, since it leaves two hosts.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrig.cluster import local as sim
from netrig.lab import netns
from tests.conftest import RUN_TAG, netrig_cli, new_lab_name, requires_root, requires_tool, running

pytestmark = [requires_root, requires_tool("iperf3"), pytest.mark.root, pytest.mark.slow]

CLUSTER = f"tc{RUN_TAG}"


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """`netrig cluster local up --hosts 3`; afterwards `down`, and proof that nothing of it
    is left: no namespace, no process it started."""
    done = netrig_cli("cluster", "local", "up", "--hosts", "3", "--name", CLUSTER, timeout=120)
    assert done.returncode == 0, done.stderr
    address = done.stdout.strip().splitlines()[-1]
    state, hosts = sim.status(CLUSTER)
    pids = [h.pid for h in hosts] + _scheduler_pid()
    try:
        yield address
    finally:
        down = netrig_cli("cluster", "local", "down", "--name", CLUSTER, timeout=180)
        assert down.returncode == 0, down.stderr
        left = [ns for ns in netns.list_names() if ns.startswith((f"nrc-{CLUSTER}-", CLUSTER))]
        assert left == [], f"left behind: {left}"
        alive = [pid for pid in pids if pid and running(pid)]
        assert alive == [], f"processes left: {alive}"
        assert not os.path.exists(state.root)


def _scheduler_pid() -> list[int | None]:
    from netrig.lab.ledger import Ledger

    ledger = Ledger(sim.cluster_root(CLUSTER))
    try:
        return [o.pid for o in ledger.objects(CLUSTER, "process") if o.name == "scheduler"]
    finally:
        ledger.close()


def _experiment(tmp_path: Path, repeat: int, duration: int = 1) -> tuple[Path, str]:
    name = new_lab_name("dk")
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        "topology: {kind: chain, nodes: 3}\n"
        "measure:\n"
        f"  - iperf3: {{client: n1, server: \"n{{1 + hops}}\", duration: {duration}}}\n"
        "vary: {hops: [1, 2]}\n"
        f"repeat: {repeat}\n"
        "order: interleaved\n"
    )
    return path, name


def _runs(db: Path) -> list[tuple[str, int, str, str | None, str | None]]:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute(
                "SELECT point, repetition, status, host, host_facts FROM runs ORDER BY id"
            ).fetchall()
    except sqlite3.OperationalError:  # created, not yet migrated
        return []


def _labs_on_hosts() -> dict[str, list[str]]:
    return {h.host.name: h.labs for h in sim.status(CLUSTER)[1]}


def test_up_status_and_listening_only_on_loopback(cluster: str) -> None:
    assert cluster.startswith("tcp://127.0.0.1:")
    done = netrig_cli("cluster", "local", "status", "--name", CLUSTER)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith(f"{CLUSTER}-h")]
    assert len(lines) == 3 and all(" pid " in line and "running" in line for line in lines)
    _, hosts = sim.status(CLUSTER)
    assert len({h.host.ns_prefix for h in hosts}) == 3
    assert len({h.host.state_dir for h in hosts}) == 3
    ours = {str(h.pid) for h in hosts} | {str(p) for p in _scheduler_pid()}
    listening = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    mine = [line for line in listening.splitlines() if any(f"pid={p}," in line for p in ours)]
    assert mine and all(line.split()[3].startswith("127.0.0.1:") for line in mine), mine
    # each host's underlay: its own namespace, 198.51.100.0/24, reaching the others
    for i, h in enumerate(hosts, 1):
        addrs = subprocess.run(["ip", "-n", h.host.underlay_ns, "-4", "-o", "addr"],
                               capture_output=True, text=True).stdout
        assert f"198.51.100.{10 + i}/24" in addrs
    ping = subprocess.run(["ip", "netns", "exec", hosts[0].host.underlay_ns, "ping", "-c1",
                           "-W2", hosts[2].host.underlay_addr], capture_output=True)
    assert ping.returncode == 0


def test_a_sweep_spreads_over_the_hosts_and_comes_back_to_one_db(
    cluster: str, tmp_path: Path
) -> None:
    path, _ = _experiment(tmp_path, repeat=3)
    db = tmp_path / "r.db"
    done = netrig_cli("run", str(path), "--db", str(db), env={**os.environ,
                      "NETRIG_CLUSTER": cluster}, timeout=300)
    assert done.returncode == 0, done.stderr
    runs = _runs(db)
    assert len(runs) == 6 and all(r[2] == "ok" for r in runs)
    hosts = Counter(r[3] for r in runs)
    assert set(hosts) == {f"{CLUSTER}-h1", f"{CLUSTER}-h2", f"{CLUSTER}-h3"}
    # every host ran both sweep points (the host is a block)
    for host in hosts:
        assert {json.loads(r[0])["hops"] for r in runs if r[3] == host} == {1, 2}
    facts = json.loads(runs[0][4])
    assert facts["kernel"] == os.uname().release and "iperf3" in facts["tool_versions"]
    export = netrig_cli("results", "export", "--db", str(db))
    assert export.stdout.splitlines()[0].split(",")[6] == "host"
    stat = netrig_cli("stat", "--experiment", "1", "--by", "host", "-A", "--db", str(db))
    assert stat.returncode in (0, 1) and f"host={CLUSTER}-h2" in stat.stdout
    show = netrig_cli("results", "show", "1", "--db", str(db)).stdout
    for host in hosts:  # each host's own facts, not the client's
        assert f"{host}: kernel {os.uname().release}" in show, show
    assert "None" not in show.split("runs", 1)[0]
    assert all(labs == [] for labs in _labs_on_hosts().values())  # released after the sweep


def test_ctrl_c_stops_the_sweep_and_every_host_releases_its_lab(
    cluster: str, tmp_path: Path
) -> None:
    path, _ = _experiment(tmp_path, repeat=6, duration=4)
    db = tmp_path / "c.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrig", "run", str(path), "--db", str(db), "--cluster",
         cluster], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (db.exists() and _all_hosts_busy()):
        time.sleep(0.3)
    time.sleep(1.5)  # inside the measurements
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 30  # cut short, not run to the end (12 × 4 s)
    statuses = Counter(r[2] for r in _runs(db))
    assert statuses["interrupted"] >= 1 and sum(statuses.values()) < 12
    assert all(labs == [] for labs in _labs_on_hosts().values())
    left = [ns for ns in netns.list_names() if path.stem in ns]
    assert left == []
    # --resume on the cluster: the runs not stored yet, and the experiment is complete
    again = netrig_cli("run", str(path), "--db", str(db), "--cluster", cluster, "--resume",
                       timeout=300)
    assert again.returncode == 0, again.stderr
    ok = [(json.loads(r[0])["hops"], r[1]) for r in _runs(db) if r[2] == "ok"]
    assert sorted(ok) == sorted((h, rep) for h in (1, 2) for rep in range(1, 7))


def _all_hosts_busy() -> bool:
    return all(_labs_on_hosts().values())


def test_a_60_node_ring_on_3_hosts_n1_reaches_n31_across_hosts(
    cluster: str, tmp_path: Path
) -> None:
    name = new_lab_name("dr")
    path = tmp_path / "ring60.yaml"
    path.write_text(f"name: {name}\ntopology: {{kind: ring, nodes: 60}}\n"
                    "placement: {hosts: 3}\n")
    done = netrig_cli("up", str(path), "--cluster", cluster, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "3 links are VXLAN tunnels" in done.stdout
    try:
        labs = _labs_on_hosts()
        assert all(labs[h] == [name] for h in labs)  # every host has a part
        again = netrig_cli("up", str(path), "--cluster", cluster, timeout=180)
        assert again.returncode == 2 and "is already up on" in again.stderr, again.stderr
        assert _labs_on_hosts() == labs  # refused: the running lab is left as it was
        from netrig.rig import Lab

        plan = Lab.from_file(str(path)).plan
        ping = netrig_cli("exec", name, "n1", "--cluster", cluster, "--", "ping", "-c1",
                          "-W2", plan.addr("n31"))
        assert ping.returncode == 0, ping.stdout + ping.stderr
        assert "ttl=35" in ping.stdout  # 30 hops around the ring: 29 routers on the way
        # the nodes at a cut: their link is a VXLAN tunnel with the MTU 50 bytes smaller
        where = {}
        for host in sim.status(CLUSTER)[1]:
            for ns in netns.list_names():
                if ns.startswith(host.host.ns_prefix + name + "-"):
                    where[ns.rsplit("-", 1)[1]] = host.host.name
        assert len(set(where.values())) == 3 and len(where) == 60
        cut = [lk for lk in plan.links if where[lk.a] != where[lk.b]]
        assert len(cut) == 3
        link = cut[0]
        shown = netrig_cli("exec", name, link.a, "--cluster", cluster, "--", "ip", "-d",
                           "link", "show", link.a_iface)
        assert "vxlan id" in shown.stdout and "mtu 1450" in shown.stdout, shown.stdout
        trace = netrig_cli("trace", name, "n1", plan.addr("n31"), "--cluster", cluster)
        assert trace.returncode == 0, trace.stderr
        assert ": 30 hops" in trace.stdout
        assert sum(trace.stdout.count(f"[{h}]") for h in set(where.values())) >= 2
        status = netrig_cli("status", "--cluster", cluster)
        assert status.stdout.count(f"{name} (up, 20 nodes)") == 3
        assert "one that has left the cluster is not asked" in status.stdout
    finally:
        down = netrig_cli("down", name, "--cluster", cluster, timeout=120)
    assert down.returncode == 0, down.stderr
    assert [ns for ns in netns.list_names() if name in ns] == []
    # again: no host has it; a host that left (a killed worker) is not asked, and says how
    again = netrig_cli("down", name, "--cluster", cluster, timeout=120)
    assert again.returncode == 0 and "on none of the hosts connected now (" in again.stdout
    assert "until `netrig clean` runs on it" in again.stdout, again.stdout
    assert all(labs == [] for labs in _labs_on_hosts().values())


def _where(name: str) -> dict[str, str]:
    """node → the simulated host whose namespaces have it."""
    where = {}
    names = netns.list_names()
    for host in sim.status(CLUSTER)[1]:
        for ns in names:
            if ns.startswith(host.host.ns_prefix + name + "-"):
                where[ns.rsplit("-", 1)[1]] = host.host.name
    return where


def _node_state(cluster: str, lab: str, node: str, iface: str) -> tuple[str, str]:
    """A node's IPv4 routes and the addresses of one of its interfaces."""
    routes = netrig_cli("exec", lab, node, "--cluster", cluster, "--", "ip", "-4", "route")
    addrs = netrig_cli("exec", lab, node, "--cluster", cluster, "--", "ip", "-o", "addr",
                       "show", iface)
    return routes.stdout, addrs.stdout


def test_link_down_and_up_across_hosts_and_within_one(cluster: str, tmp_path: Path) -> None:
    """`netrig link … --cluster`: a cut link (a tunnel end on each of two hosts) and a link
    within one host go down (the static route through them breaks) and come back up as
    they were (addresses, routes); trace names a node as DST."""
    name = new_lab_name("dl")
    path = tmp_path / "ring12.yaml"
    path.write_text(f"name: {name}\ntopology: {{kind: ring, nodes: 12}}\n"
                    "placement: {hosts: 3}\n")
    done = netrig_cli("up", str(path), "--cluster", cluster, timeout=180)
    assert done.returncode == 0, done.stderr
    try:
        from netrig.rig import Lab

        plan = Lab.from_file(str(path)).plan
        where = _where(name)
        cut = next(lk for lk in plan.links if where[lk.a] != where[lk.b])
        inside = next(lk for lk in plan.links if where[lk.a] == where[lk.b])
        for link, kind in ((cut, "VXLAN tunnel"), (inside, "within one host")):
            a, b = link.a, link.b
            before = _node_state(cluster, name, a, link.a_iface)
            assert "inet6 2001:2:" in before[1]
            down = netrig_cli("link", name, a, b, "down", "--cluster", cluster)
            assert down.returncode == 0, down.stderr
            assert kind in down.stdout, down.stdout
            ends = f"{a}:{link.a_iface} ({where[a]}) – {b}:{link.b_iface} ({where[b]})"
            assert f"link {ends} down (" in down.stdout, down.stdout
            ping = netrig_cli("exec", name, a, "--cluster", cluster, "--", "ping", "-c1",
                              "-W1", plan.addr(b))
            assert ping.returncode != 0  # static routing: no way round while it is down
            trace = netrig_cli("trace", name, a, b, "--cluster", cluster)
            assert trace.returncode == 1 and f"{a} → {b} ({plan.addr(b)})" in trace.stdout
            up = netrig_cli("link", name, b, a, "up", "--cluster", cluster)
            assert up.returncode == 0, up.stderr
            # the ends in the command's order, whichever host answered first
            assert (
                f"link {b}:{link.b_iface} ({where[b]}) – {a}:{link.a_iface} ({where[a]}) up ("
                in up.stdout
            ), up.stdout
            assert _node_state(cluster, name, a, link.a_iface) == before  # routes and addresses (IPv6 too) as they were
            ping = netrig_cli("exec", name, a, "--cluster", cluster, "--", "ping", "-c1",
                              "-W2", plan.addr(b))
            assert ping.returncode == 0, ping.stdout + ping.stderr
            trace = netrig_cli("trace", name, a, b, "--cluster", cluster)
            assert trace.returncode == 0 and ": 1 hop\n" in trace.stdout, trace.stdout
        wrong = netrig_cli("link", name, cut.a, "n99", "down", "--cluster", cluster)
        assert wrong.returncode == 2 and "no link" in wrong.stderr
        count = netrig_cli("trace", name, "n1", "n5", "--count", "4", "--cluster", cluster)
        assert count.returncode == 0 and "4 tcp flows n1 → n5" in count.stdout, count.stderr
    finally:
        down = netrig_cli("down", name, "--cluster", cluster, timeout=120)
    assert down.returncode == 0, down.stderr
    assert [ns for ns in netns.list_names() if name in ns] == []


@requires_tool("bird")
def test_ospf_converges_across_hosts_over_the_tunnels(cluster: str, tmp_path: Path) -> None:
    name = new_lab_name("do")
    path = tmp_path / "ospf.yaml"
    path.write_text(f"name: {name}\ntopology: {{kind: ring, nodes: 9}}\n"
                    "routing: {protocol: ospf}\nplacement: {hosts: 3}\n")
    done = netrig_cli("up", str(path), "--cluster", cluster, timeout=240)
    try:
        assert done.returncode == 0, done.stderr
        from netrig.rig import Lab

        plan = Lab.from_file(str(path)).plan
        routes = netrig_cli("exec", name, "n1", "--cluster", cluster, "--", "ip", "route",
                            "show", plan.addr("n5"))
        assert "proto bird" in routes.stdout, routes.stdout  # learnt over a tunnel
        ping = netrig_cli("exec", name, "n1", "--cluster", cluster, "--", "ping", "-c1",
                          "-W2", plan.addr("n5"))
        assert ping.returncode == 0, ping.stdout
        # a tunnel down: OSPF finds the way round the ring; up again: the direct way back
        where = _where(name)
        cut = next(lk for lk in plan.links if where[lk.a] != where[lk.b])
        for state, hops in (("down", "8 hops"), ("up", "1 hop\n")):
            done = netrig_cli("link", name, cut.a, cut.b, state, "--cluster", cluster)
            assert done.returncode == 0 and "VXLAN tunnel" in done.stdout, done.stderr
            deadline, trace = time.monotonic() + 60, None
            while time.monotonic() < deadline:
                trace = netrig_cli("trace", name, cut.a, cut.b, "--cluster", cluster)
                if trace.returncode == 0 and f": {hops}" in trace.stdout:
                    break
                time.sleep(2)
            assert trace is not None and f": {hops}" in trace.stdout, trace.stdout
    finally:
        down = netrig_cli("down", name, "--cluster", cluster, timeout=120)
    assert down.returncode == 0, down.stderr
    assert [ns for ns in netns.list_names() if name in ns] == []
    bird = subprocess.run(["pgrep", "-a", "-x", "bird"], capture_output=True, text=True)
    assert name not in bird.stdout


def _sleeper(tmp_path: Path, seconds: float, repeat: int) -> tuple[Path, str]:
    """A sweep whose runs only sleep in a node (no CPU taken from the other tests)."""
    name = new_lab_name("dz")
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\ntopology: {{kind: pair}}\n"
                    f"measure:\n  - command: {{node: n1, cmd: 'sleep {seconds}'}}\n"
                    f"repeat: {repeat}\n")
    return path, name


def _namespaces_of(lab: str) -> list[str]:
    return [ns for ns in netns.list_names() if ns.startswith(CLUSTER) and f"-{lab}-" in ns]


def test_a_killed_client_s_labs_are_released_and_a_live_sweep_goes_on(
    cluster: str, tmp_path: Path
) -> None:
    """kill -9 of `netrig run --cluster`: every host releases that sweep's lab by itself
    within seconds (the scheduler forgets the dead client's lease), the run it was
    measuring cut short; another client's sweep on the same hosts runs on untouched."""
    victim_path, victim = _sleeper(tmp_path, 4, repeat=12)
    live_path, live = _sleeper(tmp_path, 1, repeat=9)
    run = [sys.executable, "-m", "netrig", "run", "--cluster", cluster, "--db"]
    procs = [subprocess.Popen([*run, str(tmp_path / "v.db"), str(victim_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not all(
                victim in labs for labs in _labs_on_hosts().values()):
            time.sleep(0.3)
        assert all(victim in labs for labs in _labs_on_hosts().values()), _labs_on_hosts()
        status = netrig_cli("status", "--cluster", cluster)
        assert f"{victim} (up, 2 nodes, a sweep)" in status.stdout, status.stdout
        assert "within seconds of its client leaving" in status.stdout
        procs.append(subprocess.Popen([*run, str(tmp_path / "l.db"), str(live_path)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
        while time.monotonic() < deadline and not any(
                live in labs for labs in _labs_on_hosts().values()):
            time.sleep(0.2)
        assert _namespaces_of(victim) and _namespaces_of(live)  # both sweeps' labs are up
        os.kill(procs[0].pid, signal.SIGKILL)
        procs[0].wait()
        killed = time.monotonic()
        while _namespaces_of(victim) and time.monotonic() - killed < 30:
            time.sleep(0.2)
        took = time.monotonic() - killed
        print(f"the killed client's lab was released on every host in {took:.1f} s")
        assert _namespaces_of(victim) == [] and took <= 20, _namespaces_of(victim)
        assert all(victim not in labs for labs in _labs_on_hosts().values())
        _out, err = procs[1].communicate(timeout=180)
        assert procs[1].returncode == 0, err
        runs = _runs(tmp_path / "l.db")
        assert len(runs) == 9 and all(r[2] == "ok" for r in runs), runs
        built = int(err.split(" lab build")[0].rsplit("; ", 1)[1])
        assert built <= 3, err  # each host built it once: never taken down under it
        assert all(live not in labs for labs in _labs_on_hosts().values())
    finally:
        for proc in procs:  # ours: by PID
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        netrig_cli("down", victim, "--cluster", cluster, timeout=120)
        netrig_cli("down", live, "--cluster", cluster, timeout=120)


def test_a_worker_killed_mid_sweep_loses_no_run(cluster: str, tmp_path: Path) -> None:
    path, name = _experiment(tmp_path, repeat=6)
    db = tmp_path / "k.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrig", "run", str(path), "--db", str(db), "--cluster",
         cluster], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (not db.exists() or len(_runs(db)) < 3):
        time.sleep(0.2)
    victim = next(h for h in sim.status(CLUSTER)[1] if h.host.name.endswith("-h2"))
    assert victim.alive and victim.labs == [name]  # it is in the middle of the sweep
    os.kill(victim.pid, signal.SIGKILL)  # type: ignore[arg-type]
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    runs = _runs(db)
    assert sorted((json.loads(r[0])["hops"], r[1]) for r in runs) == sorted(
        (hops, rep) for hops in (1, 2) for rep in range(1, 7)
    )  # every run stored, each once
    assert all(r[2] == "ok" for r in runs)
    assert "is gone" in err
    after = {h.host.name: h for h in sim.status(CLUSTER)[1]}
    assert not after[victim.host.name].alive
    assert after[victim.host.name].labs == [name]  # its leftovers
    # as on a real host that comes back: `netrig clean` with that host's state dir
    clean = netrig_cli("clean", env={**os.environ, "NETRIG_STATE_DIR": victim.host.state_dir})
    assert clean.returncode == 0, clean.stderr
    assert {h.host.name: h for h in sim.status(CLUSTER)[1]}[victim.host.name].labs == []
    assert [ns for ns in netns.list_names() if ns.startswith(victim.host.ns_prefix)] == []
