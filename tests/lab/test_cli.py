"""The command line as a user meets it: exit codes, messages, kill -9 and clean."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from netrig.lab import netns
from netrig.lab.ledger import Ledger
from tests.conftest import netrig_cli, requires_root

pytestmark = requires_root


def write_lab(tmp_path, name: str, body: str) -> str:  # type: ignore[no-untyped-def]
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\n{body}")
    return str(path)


def test_up_status_exec_trace_down(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    path = write_lab(
        tmp_path, lab_name, "topology: {kind: ring, nodes: 6}\nrouting: {protocol: ecmp}\n"
    )
    assert netrig_cli("validate", path).returncode == 0
    up = netrig_cli("up", path)
    assert up.returncode == 0, up.stderr
    assert f"lab {lab_name} is up" in up.stdout and "198.18.0.1/32" in up.stdout
    again = netrig_cli("up", path)
    assert again.returncode == 2 and "already up" in again.stderr
    assert lab_name in netrig_cli("status").stdout
    ping = netrig_cli("exec", lab_name, "n1", "--", "ping", "-c1", "-W1", "198.18.0.4")
    assert ping.returncode == 0 and "1 received" in ping.stdout
    assert netrig_cli("exec", lab_name, "n1", "--", "false").returncode == 1
    # a command ended by a signal: 128 + its number, as a shell says (it was 247 for SIGKILL)
    assert netrig_cli("exec", lab_name, "n1", "--", "sh", "-c", "kill -9 $$").returncode == 137
    trace = netrig_cli("trace", lab_name, "n1", "n4", "--count", "40")
    assert trace.returncode == 0 and trace.stdout.count("n1 (eth") == 2  # both 3-hop paths
    assert netrig_cli("exec", lab_name, "n99", "--", "true").returncode == 2
    down = netrig_cli("down", lab_name)
    assert down.returncode == 0 and "removed 6 namespaces" in down.stdout
    assert netrig_cli("down", lab_name).returncode == 0  # idempotent
    assert not any(ns.startswith(lab_name + "-") for ns in netns.list_names())


def test_link_down_up_puts_static_routes_back(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    """`netrig link` runs in a new process: the plan it reads back has no routes saved, yet
    `up` must put back every static route the kernel dropped with the link."""
    path = write_lab(
        tmp_path, lab_name, "topology: {kind: ring, nodes: 6}\nrouting: {protocol: static}\n"
    )
    assert netrig_cli("up", path).returncode == 0

    def routes(node: str) -> list[str]:
        argv = ["ip", "-n", f"{lab_name}-{node}", "route", "show"]
        return sorted(subprocess.run(argv, capture_output=True, text=True).stdout.splitlines())

    try:
        before = routes("n1")
        down = netrig_cli("link", lab_name, "n1", "n2", "down")
        assert down.returncode == 0, down.stderr
        assert len(routes("n1")) < len(before)  # the kernel dropped those through n2
        assert "link n1:eth0 – n2:eth0 down" in down.stdout, down.stdout
        up = netrig_cli("link", lab_name, "n2", "n1", "up")
        assert up.returncode == 0, up.stderr
        assert "link n2:eth0 – n1:eth0 up" in up.stdout, up.stdout  # in the command's order
        assert routes("n1") == before
        ping = netrig_cli("exec", lab_name, "n1", "--", "ping", "-c1", "-W2", "198.18.0.2")
        assert ping.returncode == 0, ping.stdout + ping.stderr
    finally:
        assert netrig_cli("down", lab_name).returncode == 0


def test_bad_input_exits_2_and_creates_nothing(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    path = write_lab(
        tmp_path, lab_name, "topology: {kind: chain, nodes: 3}\nlinks:\n  - {a: n1, b: n7}\n"
    )
    for cmd in ("validate", "up"):
        result = netrig_cli(cmd, path)
        assert result.returncode == 2
        assert f"{path}:4:16: link to unknown node 'n7'" in result.stderr
    assert not [n for n in netns.list_names() if n.startswith(f"{lab_name}-")]
    assert lab_name not in Ledger().all_lab_names()


def test_kill_9_mid_setup_then_clean_restores_the_host(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    foreign_ns = f"foreign{os.getpid()}"
    host_veth = f"fv{os.getpid() % 100000}"
    subprocess.run(["ip", "netns", "add", foreign_ns], check=True)
    subprocess.run(
        ["ip", "link", "add", host_veth, "type", "veth", "peer", "name", host_veth + "p"],
        check=True,
    )
    try:
        path = write_lab(tmp_path, lab_name, "topology: {kind: ring, nodes: 1500}\n")
        proc = subprocess.Popen(
            [sys.executable, "-m", "netrig", "up", "-q", path],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until it is mid-way through the namespaces
            made = [n for n in netns.list_names() if n.startswith(lab_name + "-")]
            if len(made) >= 50:
                break
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        made = [n for n in netns.list_names() if n.startswith(lab_name + "-")]
        assert 0 < len(made) < 1500, "the kill did not land mid-setup"
        clean = netrig_cli("clean", lab_name)  # only this test's lab: others may be running
        assert clean.returncode == 0, clean.stderr
        assert not [n for n in netns.list_names() if n.startswith(lab_name + "-")]
        assert foreign_ns in netns.list_names()
        link = subprocess.run(["ip", "link", "show", host_veth], capture_output=True)
        assert link.returncode == 0
        assert lab_name not in Ledger().all_lab_names()
    finally:
        subprocess.run(["ip", "netns", "del", foreign_ns], check=False)
        subprocess.run(["ip", "link", "del", host_veth], check=False)


def test_ctrl_c_during_up_of_1500_nodes_removes_the_partial_lab(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    path = write_lab(tmp_path, lab_name, "topology: {kind: ring, nodes: 1500}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrig", "up", "-q", path],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if len([n for n in netns.list_names() if n.startswith(lab_name + "-")]) >= 50:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert not [n for n in netns.list_names() if n.startswith(lab_name + "-")]


def test_clean_keeps_a_lab_in_use_unless_forced(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "pair"}})  # built by this (still running) process
    kept = netrig_cli("clean", lab.name)
    assert kept.returncode == 0 and f"kept lab {lab.name}" in kept.stdout
    assert lab.exists()
    forced = netrig_cli("clean", "--force", lab.name)
    assert forced.returncode == 0
    assert not lab.exists()


def test_up_accepts_an_experiment_file(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    path = write_lab(
        tmp_path, lab_name,
        "topology: {kind: chain, nodes: '{n}'}\nmeasure:\n  - ping: {src: n1, dst: n2}\n"
        "vary: {n: [3, 5]}\n",
    )
    up = netrig_cli("up", "-q", path)
    assert up.returncode == 0, up.stderr
    assert "first point (n=3)" in up.stderr and f"lab {lab_name} is up" in up.stdout
    assert len([n for n in netns.list_names() if n.startswith(lab_name + "-")]) == 3


def test_a_bind_whose_source_is_missing_is_refused_before_anything(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    missing = tmp_path / "absent.conf"
    path = write_lab(
        tmp_path,
        lab_name,
        f'topology: {{kind: pair}}\nnodes:\n  - name: n1\n    binds: ["{missing}:/etc/motd:ro"]\n',
    )
    for cmd in ("validate", "up"):
        result = netrig_cli(cmd, path)
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"{path}:5:13: n1: bind {missing} → /etc/motd: {missing} does not exist" in (
            result.stderr
        )
    assert not [n for n in netns.list_names() if n.startswith(f"{lab_name}-")]


def test_a_lab_whose_build_was_killed_is_named_so_and_clean_removes_it(  # type: ignore[no-untyped-def]
    tmp_path, lab_name
) -> None:
    """kill -9 in the middle of `up` leaves the lab 'building' with its builder gone: `up`
    again says so and what removes it (exit 2, nothing made), and `clean` does."""
    begun = subprocess.run(
        [sys.executable, "-c", "import sys; from netrig.lab.ledger import Ledger; "
         "Ledger().begin_lab(sys.argv[1], 2, None); import os; print(os.getpid())", lab_name],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid = int(begun.stdout)
    path = write_lab(tmp_path, lab_name, "topology: {kind: pair}\n")
    again = netrig_cli("up", path)
    assert again.returncode == 2 and "Traceback" not in again.stderr, again.stderr
    assert f"was being built by netrig process {pid}, which ended before it finished" in again.stderr
    assert f"`netrig clean {lab_name}`" in again.stderr
    # `status` had said `building` of it, forever
    status = netrig_cli("status", env={**os.environ, "COLUMNS": "200"})
    (row,) = [line for line in status.stdout.splitlines() if f" {lab_name} " in line]
    assert f"interrupted (builder gone): netrig clean {lab_name}" in row, status.stdout
    assert "building" not in row
    assert not [ns for ns in netns.list_names() if ns.startswith(lab_name + "-")]
    assert netrig_cli("clean", lab_name).returncode == 0
    assert lab_name not in Ledger().all_lab_names()


def test_trace_to_a_node_of_an_ipv6_only_lab_takes_its_ipv6_address(tmp_path, lab_name) -> None:  # type: ignore[no-untyped-def]
    """It had said "node 'n3' has no IPv4 address" unless -6 was given."""
    path = write_lab(tmp_path, lab_name, "topology: {kind: chain, nodes: 3}\n"
                                         "addressing: {ipv4: false}\n")  # fmt: skip
    assert netrig_cli("up", "-q", path).returncode == 0
    try:
        trace = netrig_cli("trace", lab_name, "n1", "n3")
        assert trace.returncode == 0, trace.stderr
        assert trace.stdout.startswith("n1 → n3 (2001:2::3)") and "→ n3" in trace.stdout
    finally:
        netrig_cli("down", lab_name)
