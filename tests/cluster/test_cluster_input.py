"""Bad input to the cluster commands: one message, exit 2 (or 1 for an unreachable
scheduler), nothing created, no traceback."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from netrig.lab import netns
from tests.conftest import netrig_cli, requires_root


@requires_root
def test_a_bad_cluster_name_is_refused_before_anything_exists() -> None:
    before = netns.list_names()
    done = netrig_cli("cluster", "local", "up", "--hosts", "2", "--name", "no-dash")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "cluster name 'no-dash'" in done.stderr
    # only its own: other tests on this machine may add or remove namespaces meanwhile
    assert [n for n in netns.list_names() if n not in before and "no-dash" in n] == []


def test_status_of_a_cluster_that_is_not_up() -> None:
    done = netrig_cli("cluster", "local", "status", "--name", "nosuchclu")
    assert done.returncode == 2 and "no local cluster 'nosuchclu' is up" in done.stderr


def test_down_of_a_cluster_that_is_not_up_succeeds() -> None:
    done = netrig_cli("cluster", "local", "down", "--name", "nosuchclu")
    assert done.returncode == 0 and "Traceback" not in done.stderr


def test_an_unreachable_scheduler_is_one_message(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exp = tmp_path / "e.yaml"
    exp.write_text("name: unreach\ntopology: {kind: pair}\nmeasure:\n"
                   "  - ping: {src: n1, dst: n2, count: 1}\n")
    done = netrig_cli("run", str(exp), "--db", str(tmp_path / "r.db"), "--cluster",
                      f"tcp://127.0.0.1:{port}", timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    # said after REFUSED_GRACE, not after the Client's 10 s of tries
    assert "cannot reach the cluster scheduler" in done.stderr
    assert "connection refused (nothing listens there" in done.stderr


def _free_port() -> int:
    with socket.socket() as probe:  # bound, then closed: nobody listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_refused_for_a_while_tells_nobody_listening_from_a_scheduler_starting() -> None:
    """Refused for the whole grace: True. Listening, or listening within the grace (a
    scheduler still starting): False, and the Client connects as before. Another scheme or
    an address without a port: False, left to the Client."""
    from netrig.cluster.sweep import REFUSED_GRACE, refused_for_a_while

    assert refused_for_a_while(f"tcp://127.0.0.1:{_free_port()}")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert not refused_for_a_while(f"tcp://127.0.0.1:{server.getsockname()[1]}")
    with socket.socket() as late:
        late.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        late.bind(("127.0.0.1", 0))  # bound, not yet listening: connections are refused
        timer = threading.Timer(REFUSED_GRACE / 3, late.listen)
        timer.start()
        try:
            assert not refused_for_a_while(f"tcp://127.0.0.1:{late.getsockname()[1]}")
        finally:
            timer.join()
    assert not refused_for_a_while(f"tls://127.0.0.1:{_free_port()}")
    assert not refused_for_a_while("tcp://127.0.0.1")


@requires_root
def test_a_worker_whose_scheduler_never_answers_says_so_after_its_join_timeout(
    tmp_path: Path,
) -> None:
    """Dask closes a worker that cannot join in time with a TimeoutError: one message."""
    done = netrig_cli("worker", "--scheduler", f"tcp://127.0.0.1:{_free_port()}",
                      "--join-timeout", "2", "--state-dir", str(tmp_path / "state"), timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "cannot reach the cluster scheduler" in done.stderr and " in 2 s" in done.stderr


def test_a_sweep_whose_lab_has_placement_goes_to_the_cluster(tmp_path: Path) -> None:
    """A lab with `placement:` (inline, or in the lab file that `lab:` names) is spread over
    the cluster's hosts: it gets as far as the (absent) scheduler, exit 1, and a bad
    `placement:` is still refused at its line (exit 2) before any scheduler is asked."""
    inline = tmp_path / "inline.yaml"
    inline.write_text("name: plc1\ntopology: {kind: ring, nodes: 6}\n"
                      "placement: {hosts: 2}\nmeasure:\n"
                      "  - ping: {src: n1, dst: n4, count: 1}\n")
    (tmp_path / "ring.yaml").write_text("name: plc2\ntopology: {kind: ring, nodes: 6}\n\n"
                                        "placement: {hosts: 3}\n")
    named = tmp_path / "named.yaml"
    named.write_text("lab: ring.yaml\nmeasure:\n  - ping: {src: n1, dst: n4, count: 1}\n")
    for exp in (inline, named):
        done = netrig_cli("run", str(exp), "--db", str(tmp_path / "r.db"), "--cluster",
                          "tcp://127.0.0.1:9", timeout=60)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "cannot reach the cluster scheduler" in done.stderr
    (tmp_path / "ring.yaml").write_text("name: plc2\ntopology: {kind: ring, nodes: 6}\n\n"
                                        "placement: {hosts: 0}\n")
    db = tmp_path / "bad.db"
    done = netrig_cli("run", str(named), "--db", str(db), "--cluster", "tcp://127.0.0.1:9",
                      timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"{tmp_path / 'ring.yaml'}:4:"), done.stderr
    assert not db.exists()


def test_cluster_ssh_without_asyncssh_names_the_optional_dependency() -> None:
    """asyncssh is the optional dependency `cluster-ssh`: without it, `netrig cluster ssh`
    says how to install it (exit 2), before connecting anywhere."""
    import importlib.util

    if importlib.util.find_spec("asyncssh") is not None:
        import pytest

        pytest.skip("asyncssh is installed here")
    done = netrig_cli("cluster", "ssh", "lab1.example.net", "lab2.example.net", timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "pip install asyncssh (netrig's optional dependency cluster-ssh)" in done.stderr


@requires_root
def test_a_cluster_that_fails_to_come_up_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """An underlay that does not answer: `up` fails, and removes its namespaces and its
    state dir (a dir left behind read as a cluster to `status` and `down`)."""
    import os

    from netrig.cluster import local, underlay
    from netrig.lab.build import LabError
    from tests.conftest import RUN_TAG

    name = f"cf{RUN_TAG}"
    monkeypatch.setattr(underlay, "reachable", lambda layout: ["198.51.100.12"])
    with pytest.raises(LabError, match=r"198\.51\.100\.12 not reachable"):
        local.up(2, name)
    assert not os.path.exists(local.cluster_root(name))
    assert [n for n in netns.list_names() if name in n] == []
