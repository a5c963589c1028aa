"""Processes started in a node: in its namespace, with its own /sys and (when asked) /run,
from many threads at once (no preexec_fn), with the compiled helper or the Python one."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from netrig.lab import netns, run
from netrig.native import compile as native_compile
from tests.conftest import requires_root

pytestmark = requires_root


def _ns_id(ns: str) -> str:
    return f"net:[{netns.ns_inode(ns)}]"


def test_processes_started_from_many_threads_run_in_their_node(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 4}}, check=False)
    nodes = list(lab.plan.nodes)
    seen: dict[str, set[str]] = {n: set() for n in nodes}
    errors: list[BaseException] = []

    def worker(node: str) -> None:
        try:
            for _ in range(15):
                out = lab.exec(node, ["readlink", "/proc/self/ns/net"], capture_output=True)
                seen[node].add(out.stdout.strip())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in nodes for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert seen == {n: {_ns_id(lab.ns(n))} for n in nodes}
    host = os.readlink("/proc/self/ns/net")
    assert all(host not in ids for ids in seen.values())


def test_sys_shows_the_nodes_devices_and_run_is_private(make_lab, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3}}, check=False)
    listing = lab.exec("n2", ["ls", "/sys/class/net"], capture_output=True).stdout.split()
    assert sorted(listing) == ["eth0", "eth1", "lo"]
    private = tmp_path / "run-n1"
    private.mkdir()
    done = run.run(lab.ns("n1"), ["sh", "-c", "echo here > /run/marker"], str(private))
    assert done.returncode == 0
    assert (private / "marker").read_text() == "here\n"
    assert not os.path.exists("/run/marker")  # the host's /run is untouched


def test_a_missing_program_is_file_not_found_in_the_caller(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "pair"}}, check=False)
    with pytest.raises(FileNotFoundError):
        lab.exec("n1", ["netrig-no-such-program"])
    with pytest.raises(FileNotFoundError):
        lab.exec("n1", ["/nonexistent/prog"])
    assert lab.exec("n1", ["sh", "-c", "exit 3"]).returncode == 3


def test_a_node_that_cannot_be_entered_exits_125_with_the_reason() -> None:
    done = run.run("netrig-no-such-namespace", ["true"], capture_output=True, text=True)
    assert done.returncode == 125
    assert "netrig-no-such-namespace" in done.stderr


def test_the_python_helper_does_the_same_without_a_compiler(make_lab, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def no_compiler() -> str:
        raise native_compile.BuildError("building netrig_nsexec.c needs gcc")

    monkeypatch.setattr(native_compile, "nsexec", no_compiler)
    run.helper.cache_clear()
    try:
        assert run.helper()[1:] == ("-m", "netrig.lab.nsexec")
        lab = make_lab({"topology": {"kind": "pair"}}, check=False)
        out = lab.exec("n2", ["readlink", "/proc/self/ns/net"], capture_output=True, text=True)
        assert out.stdout.strip() == _ns_id(lab.ns("n2"))
        listing = lab.exec("n2", ["ls", "/sys/class/net"], capture_output=True, text=True)
        assert sorted(listing.stdout.split()) == ["eth0", "lo"]
        bad = run.run("netrig-no-such-namespace", ["true"], capture_output=True, text=True)
        assert bad.returncode == 125
    finally:
        run.helper.cache_clear()


def test_no_preexec_fn_anywhere_in_netrig() -> None:
    """The claim of netrig/lab/run.py, kept true: no Python code runs between fork and exec."""
    root = Path(__file__).resolve().parents[2] / "netrig"
    users = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "preexec_fn=" in p.read_text(encoding="utf-8")
    ]
    assert users == []
    assert subprocess.run(["grep", "-rq", "preexec_fn=", str(root)]).returncode == 1
