"""Namespaces made ahead (netns.SpareNamespaces) while `up` reads its file, and their names
made as hard links of one file (netns.make_mount_points): nothing unnamed outlives the
process's hold on it, the build names the spare ones, and a wrong file leaves nothing."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path

import pytest

from netrig.lab import netns
from netrig.lab.build import LabError, build
from netrig.rig import Lab
from tests.conftest import (
    SigintStop,
    interrupt_main_thread,
    netrig_cli,
    new_lab_name,
    requires_root,
    running,
)

HOST_NETNS = os.stat("/proc/self/ns/net").st_ino


def held_namespaces(pid: int | str = "self") -> set[int]:
    """nsfs inodes of the network namespaces a process holds by a descriptor."""
    held = set()
    with suppress(OSError):  # a process that ended holds none
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("net:["):
                    held.add(int(target[5:-1]))
    return held


def named(lab: str) -> set[str]:
    """The names in /run/netns of lab LAB's namespaces (the whole set is not compared:
    other labs on the host may come and go meanwhile)."""
    return {n for n in netns.list_names() if n.startswith(f"{lab}-")}


@requires_root
def test_spare_namespaces_are_new_unnamed_and_let_go_on_close() -> None:
    before = held_namespaces()
    spare = netns.SpareNamespaces(5).start()
    assert spare.wait() == 5 and spare.error is None
    made = held_namespaces() - before
    assert len(made) == 5 and HOST_NETNS not in made  # five distinct new namespaces
    named = {netns.ns_inode(n) for n in netns.list_names()}  # (others' labs may come and go)
    assert not made & named  # none has a name
    fd = spare.take()
    assert fd is not None and os.fstat(fd).st_ino in made
    os.close(fd)
    spare.close()
    assert held_namespaces() == before
    assert spare.take() is None


@requires_root
def test_spare_count_is_bounded() -> None:
    descriptors = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert netns.SpareNamespaces(10**6).count == min(netns.SpareNamespaces.MAX, descriptors // 4)
    assert netns.SpareNamespaces(-3).start().wait() == 0


@requires_root
def test_mount_points_are_links_of_one_file_and_each_names_its_namespace() -> None:
    names = [f"{new_lab_name('mp')}-{i}" for i in range(3)]
    try:
        netns.make_mount_points(names)
        inodes = {os.stat(netns.ns_path(n)).st_ino for n in names}
        assert len(inodes) == 1  # one file, three names
        assert os.stat(netns.ns_path(names[0])).st_nlink == 3

        def name_new_ones() -> list[int]:
            out = []
            for name in names:
                netns.unshare(netns.CLONE_NEWNET)
                netns.mount_here(name)
                out.append(os.stat("/proc/thread-self/ns/net").st_ino)
            return out

        made = netns.run_in_thread(name_new_ones)
        assert [netns.ns_inode(n) for n in names] == made and len(set(made)) == 3
        shown = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert all(n in shown for n in names)
        with pytest.raises(FileExistsError):
            netns.make_mount_points([f"{names[0]}-new", names[1]])
    finally:
        for name in [*names, f"{names[0]}-new"]:
            netns.delete(name)
    assert not any(netns.exists(n) for n in names)


@requires_root
def test_the_build_names_the_spare_namespaces_and_makes_the_rest(lab_name: str) -> None:
    lab = Lab.from_spec({"name": lab_name, "topology": {"kind": "ring", "nodes": 6}})
    before = held_namespaces()
    with netns.SpareNamespaces(4) as spare:
        assert spare.wait() == 4
        ready = held_namespaces() - before
        assert len(ready) == 4
        try:
            lab.up(spare=spare)
            assert spare.take() is None  # all four taken
            named = {netns.ns_inode(n.ns) for n in lab.plan.nodes.values()}
            assert ready <= named and len(named) == 6  # four adopted, two made
            assert lab.check_result is not None and lab.check_result.ok
        finally:
            lab.down()
    assert not any(netns.exists(n.ns) for n in lab.plan.nodes.values())


@requires_root
def test_a_name_taken_after_preflight_fails_the_build_and_stays_theirs(lab_name: str) -> None:
    lab = Lab.from_spec({"name": lab_name, "topology": {"kind": "chain", "nodes": 3}})
    taken = lab.plan.nodes["n2"].ns
    netns.make_mount_points([taken])  # someone else's, made after preflight looked
    try:
        with pytest.raises(LabError, match=f"{taken} exists"):
            build(lab.plan, lab.ledger)
        assert netns.exists(lab.plan.nodes["n1"].ns)  # ours, made before
        lab.down()
        assert netns.exists(taken)  # theirs: untouched by the clean-up
        assert not netns.exists(lab.plan.nodes["n1"].ns)
    finally:
        lab.down()
        os.unlink(netns.ns_path(taken))
    assert not any(netns.exists(n.ns) for n in lab.plan.nodes.values())


@requires_root
def test_up_of_a_wrong_file_leaves_nothing(tmp_path: Path) -> None:
    name = new_lab_name()
    lab_file = tmp_path / "bad.yaml"
    # 40 nodes ahead by the hint, then an error the model finds at the end of the file
    lab_file.write_text(
        f"name: {name}\ntopology: {{kind: ring, nodes: 40}}\nlinks:\n  - [n1, n99]\n"
    )
    done = netrig_cli("up", str(lab_file))
    assert done.returncode == 2, done.stderr
    assert "bad.yaml:4" in done.stderr and "Traceback" not in done.stderr
    assert named(name) == set()


@requires_root
def test_up_killed_while_reading_leaves_no_namespace(tmp_path: Path) -> None:
    """SIGKILL while the spare thread works: unnamed namespaces die with the process."""
    name = new_lab_name()
    lab_file = tmp_path / "ring.yaml"
    lab_file.write_text(f"name: {name}\ntopology: {{kind: ring, nodes: 300}}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrig", "up", "-q", str(lab_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not held_namespaces(proc.pid) and running(proc.pid):
            assert time.monotonic() < deadline
        assert running(proc.pid), "`up` finished before a namespace it held was seen"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        netrig_cli("down", name)  # whatever it named before the kill (if it got so far)
    assert named(name) == set()


@requires_root
def test_a_signal_held_over_the_spare_threads_start_stops_it(
    sigint_raises: type[SigintStop], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `with` that would have closed it is never entered: start() itself lets go."""
    real_quiet = netns.forked.quiet

    def quiet_then_interrupt(thread: threading.Thread) -> threading.Thread:
        interrupt_main_thread()
        return real_quiet(thread)

    before = held_namespaces()
    monkeypatch.setattr(netns.forked, "quiet", quiet_then_interrupt)
    spare = netns.SpareNamespaces(50)
    with pytest.raises(sigint_raises):
        spare.start()
    monkeypatch.undo()
    assert spare._thread is not None and not spare._thread.is_alive()
    assert held_namespaces() == before


@requires_root
def test_a_signal_while_names_are_made_spares_a_name_taken_meanwhile(
    lab_name: str, sigint_raises: type[SigintStop], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone takes a name after preflight, and Ctrl-C comes while netrig records and
    makes the names: the clean-up that follows leaves theirs alone (before the fix the
    signal started it with the taken name still recorded, and it was deleted)."""
    lab = Lab.from_spec({"name": lab_name, "topology": {"kind": "chain", "nodes": 3}})
    taken = lab.plan.nodes["n2"].ns
    real = netns.make_mount_points

    def taken_meanwhile(names: list[str], made: list[str] | None = None) -> None:
        real([taken])  # someone else's, made between the record and ours
        interrupt_main_thread()
        real(names, made)

    monkeypatch.setattr(netns, "make_mount_points", taken_meanwhile)
    try:
        with pytest.raises(sigint_raises):
            lab.up()  # its own clean-up runs on the way out
        monkeypatch.undo()
        assert netns.exists(taken)  # theirs: untouched
        assert not netns.exists(lab.plan.nodes["n1"].ns)
        lab.down()
        assert netns.exists(taken)
    finally:
        monkeypatch.undo()
        lab.down()
        os.unlink(netns.ns_path(taken))
    assert not any(netns.exists(n.ns) for n in lab.plan.nodes.values())


@requires_root
def test_a_size_the_hint_cannot_count_is_the_models_error(tmp_path: Path) -> None:
    lab_file = tmp_path / "inf.yaml"
    name = new_lab_name()
    lab_file.write_text(f"name: {name}\ntopology: {{kind: ring, nodes: .inf}}\n")
    done = netrig_cli("up", str(lab_file))
    assert done.returncode == 2, done.stderr
    assert "inf.yaml:2" in done.stderr and "Traceback" not in done.stderr
    assert named(name) == set()
