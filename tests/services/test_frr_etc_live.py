"""Each FRR node has its own /etc/frr: `vtysh -c 'write memory'` run by hand in a node
(`netrig exec`) saves the node's files and never the host's. An FRR node without binds (the
frr service in a netrig file, a containerlab node whose image is FRR) had seen the host's
very /etc/frr, and a `write memory` there replaced the host's frr.conf (the original renamed
to frr.conf.sav).

The host's /etc/frr is compared byte for byte, mode and mtime, before and after; were it
changed, the test puts it back as it was before failing."""

from __future__ import annotations

import os
import shutil
import stat
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from netrig.rig import Lab
from tests.conftest import netrig_cli, new_lab_name, requires_root, requires_tool

pytestmark = [requires_root, requires_tool("vtysh"), pytest.mark.root]
HOST_ETC = "/etc/frr"
Snapshot = dict[str, tuple[bytes, int, int, int, int]]  # name → bytes, mode, uid, gid, mtime


def snapshot() -> Snapshot:
    out: Snapshot = {}
    for name in sorted(os.listdir(HOST_ETC)):
        path = os.path.join(HOST_ETC, name)
        st = os.lstat(path)
        body = Path(path).read_bytes() if stat.S_ISREG(st.st_mode) else b""
        out[name] = (body, st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns)
    return out


def restore(before: Snapshot) -> None:
    """Put the host's /etc/frr back as `before` had it (only the regular files netrig's
    FRR could have written or renamed: frr.conf, frr.conf.sav, the daemons' files)."""
    for name in set(os.listdir(HOST_ETC)) - set(before):
        path = os.path.join(HOST_ETC, name)
        if os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)
    for name, (body, mode, uid, gid, mtime) in before.items():
        path = os.path.join(HOST_ETC, name)
        if not stat.S_ISREG(mode):
            continue
        try:
            same = os.lstat(path).st_mtime_ns == mtime and Path(path).read_bytes() == body
        except FileNotFoundError:
            same = False
        if not same:
            Path(path).write_bytes(body)
            os.chown(path, uid, gid)
            os.chmod(path, stat.S_IMODE(mode))
            os.utime(path, ns=(mtime, mtime))


@pytest.fixture
def host_etc_kept() -> Iterator[Callable[[], None]]:
    """check(): the host's /etc/frr is as it was (asserts); afterwards it is put back
    whatever happened, so a failing test never leaves the host's files changed."""
    if not os.path.isdir(HOST_ETC):
        pytest.skip("the host has no /etc/frr")
    before = snapshot()
    folder = os.stat(HOST_ETC)

    def check() -> None:
        after = snapshot()
        changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
        assert not changed, f"the host's {HOST_ETC} changed: {changed}"

    try:
        yield check
    finally:
        restore(before)
        if os.stat(HOST_ETC).st_mtime_ns != folder.st_mtime_ns:  # a file made and removed
            os.utime(HOST_ETC, ns=(folder.st_atime_ns, folder.st_mtime_ns))


def write_memory(lab: Lab, node: str) -> str:
    """vtysh's `write memory` by hand, as a user runs it: through `netrig exec`."""
    out = netrig_cli("exec", lab.name, node, "--", "vtysh", "-c", "write memory", timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def own_etc(lab: Lab, node: str) -> Path:
    run = lab.private_run_dir(node)
    assert run is not None
    return Path(run) / "etc" / "frr"


def up(make: Callable[[], Lab]) -> Iterator[Lab]:
    lab = make()
    try:
        lab.up()
        yield lab
    finally:
        lab.down()


def test_frr_service_without_binds_writes_its_own_etc_frr(host_etc_kept) -> None:  # type: ignore[no-untyped-def]
    spec: dict[str, Any] = {
        "name": new_lab_name("fe"),
        "topology": {"kind": "pair"},
        "nodes": [{"name": "n1", "services": [{"frr": {}}]}],
    }
    for lab in up(lambda: Lab.from_spec(spec)):
        seen = lab.exec("n1", ["cat", "/etc/frr/frr.conf"], capture_output=True).stdout
        assert "hostname n1" in seen, seen  # the node's own file, not the host's
        said = write_memory(lab, "n1")
        assert "/etc/frr/frr.conf" in said, said
        host_etc_kept()
        saved = (own_etc(lab, "n1") / "frr.conf").read_text()
        assert "frr version" in saved and "(no bind gave one)" not in saved, saved  # vtysh's
        assert (own_etc(lab, "n1") / "frr.conf.sav").exists()


def test_clab_frr_node_without_binds_writes_its_own_etc_frr(host_etc_kept, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "frr0.clab.yml"
    path.write_text(textwrap.dedent(f"""\
        name: {new_lab_name("fc")}
        topology:
          nodes:
            r1: {{kind: linux, image: quay.io/frrouting/frr:9.1.0}}
            h1: {{kind: linux}}
          links: [{{endpoints: ["r1:eth1", "h1:eth1"]}}]
        """))  # fmt: skip
    for lab in up(lambda: Lab.from_file(str(path))):
        inside = lab.exec("r1", ["stat", "-c", "%d:%i", "/etc/frr"], capture_output=True).stdout
        st = os.stat(HOST_ETC)
        assert inside.strip() != f"{st.st_dev}:{st.st_ino}"  # not the host's very folder
        write_memory(lab, "r1")
        host_etc_kept()
        assert "frr version" in (own_etc(lab, "r1") / "frr.conf").read_text()


def test_clab_frr_node_with_bound_files_writes_only_its_own(host_etc_kept, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Binds of single files (daemons, frr.conf) into /etc/frr: the rest of the folder is
    the node's too, so the frr.conf.sav that `write` makes lands there, not on the host."""
    (tmp_path / "daemons").write_text("ospfd=yes\n")
    (tmp_path / "frr.conf").write_text("hostname r1\nrouter ospf\n network 192.0.2.0/24 area 0\n")
    path = tmp_path / "frr1.clab.yml"
    path.write_text(textwrap.dedent(f"""\
        name: {new_lab_name("fb")}
        topology:
          nodes:
            r1:
              kind: linux
              image: quay.io/frrouting/frr:8.4.1
              binds: [daemons:/etc/frr/daemons, frr.conf:/etc/frr/frr.conf]
            h1: {{kind: linux}}
          links: [{{endpoints: ["r1:eth1", "h1:eth1"]}}]
        """))  # fmt: skip
    for lab in up(lambda: Lab.from_file(str(path))):
        write_memory(lab, "r1")
        host_etc_kept()
        assert "router ospf" in (tmp_path / "frr.conf").read_text()  # the bound file, written


def test_frr_routing_plugin_writes_its_own_etc_frr(host_etc_kept) -> None:  # type: ignore[no-untyped-def]
    spec: dict[str, Any] = {
        "name": new_lab_name("fr"),
        "topology": {"kind": "pair"},
        "routing": {"protocol": "ospf", "daemon": "frr"},
    }
    for lab in up(lambda: Lab.from_spec(spec)):
        etc = own_etc(lab, "n1")
        before = (etc / "ospfd.conf").read_text()
        write_memory(lab, "n1")
        host_etc_kept()
        after = (etc / "ospfd.conf").read_text()
        assert after != before and "router ospf" in after, after  # vtysh's file now


def test_restore_puts_back_what_a_write_changed(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The safety net itself, on a copy: a changed file, a new one and a renamed one."""
    copy = tmp_path / "etc-frr"
    shutil.copytree(HOST_ETC, copy) if os.path.isdir(HOST_ETC) else copy.mkdir()
    (copy / "frr.conf").write_text("hostname host\n")
    monkeypatch.setattr(f"{__name__}.HOST_ETC", str(copy))
    before = snapshot()
    os.rename(copy / "frr.conf", copy / "frr.conf.sav")
    (copy / "frr.conf").write_text("hostname vm\n")
    restore(before)
    assert snapshot() == before
