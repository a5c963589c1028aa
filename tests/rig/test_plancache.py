"""Remembered plans (netrig.rig.plancache): found only for the same bytes, name, code and a
host that still has what the plan needs; never read when others could have written them;
and `netrig up` of a file built before reads neither YAML nor pydantic, yet builds the
same lab, checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from netrig.rig import plancache, prepare
from netrig.rig.hostneeds import Need
from tests.conftest import netrig_cli, new_lab_name, requires_root
from tests.test_startup import HEAVY, imported, tops

RING = "name: {name}\ntopology: {{kind: ring, nodes: {n}}}\nrouting: {{protocol: static}}\n"


def remember(path: Path, name: str | None = None, needs: list[Need] | None = None) -> str:
    """Plan the file as `netrig up` does on a miss and remember it; its plan's JSON."""
    found = plancache.lookup(str(path), name)
    assert found is not None and found.plan is None
    planned = prepare.plan_netrig_bytes(str(path), found.data, name)
    assert planned is not None
    plan, found_needs = planned
    found.remember(plan, found_needs if needs is None else needs)
    return plan.to_json(with_routes=True)


def entry_of(path: Path) -> Path:
    found = plancache.lookup(str(path))
    assert found is not None and found.directory is not None
    return Path(found.directory) / f"{found.digest}.plan"


def found_plan(path: Path, name: str | None = None) -> str | None:
    found = plancache.lookup(str(path), name)
    assert found is not None
    return None if found.plan is None else found.plan.to_json(with_routes=True)


def test_the_same_bytes_find_the_same_plan_routes_and_all(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name="pc", n=8))
    made = remember(path)
    assert '"routes": [{"dst"' in made  # the routes are in what is compared
    assert found_plan(path) == made
    assert list(cache.iterdir()) == [entry_of(path)]


def test_an_edit_another_name_or_other_code_finds_nothing(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name="pc", n=8))
    remember(path)
    assert found_plan(path, name="other") is None
    path.write_text(RING.format(name="pc", n=8) + "# a comment\n")
    assert found_plan(path) is None
    path.write_text(RING.format(name="pc", n=8))
    assert found_plan(path) is not None
    code = tmp_path / "code"
    (code / "sub").mkdir(parents=True)
    (code / "sub" / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(plancache, "PACKAGE_DIR", str(code))
    remember(path)
    assert found_plan(path) is not None
    (code / "sub" / "m.py").write_text("x = 22\n")  # netrig's code changed: size and mtime
    assert found_plan(path) is None


def test_a_need_the_host_lacks_makes_the_file_read_again(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name="pc", n=4))
    remember(path, needs=[("program", "no-such-program-netrig")])
    assert found_plan(path) is None
    remember(path, needs=[("program", "ip"), ("path", str(path))])
    assert found_plan(path) is not None


def test_needs_are_those_the_preflight_asks_about(tmp_path: Path) -> None:
    source = tmp_path / "www"
    source.mkdir()
    path = tmp_path / "lab.yaml"
    path.write_text(
        "name: pn\ntopology: {kind: pair}\nrouting: {protocol: babel}\n"
        f"nodes:\n  - name: n1\n    binds: ['{source}:/srv']\n"
    )
    planned = prepare.plan_netrig_bytes(str(path), path.read_bytes())
    assert planned is not None
    assert set(planned[1]) == {("program", "babeld"), ("path", str(source))}


def test_entries_others_could_write_are_never_read(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name="pc", n=4))
    remember(path)
    (entry,) = cache.iterdir()
    entry.chmod(0o620)
    assert found_plan(path) is None
    entry.chmod(0o600)
    assert found_plan(path) is not None
    entry.write_bytes(entry.read_bytes()[:100])  # torn
    assert found_plan(path) is None
    entry.unlink()
    os.mkfifo(entry, 0o600)  # not a plain file (no writer: a blocking open would hang)
    assert found_plan(path) is None
    entry.unlink()
    cache.chmod(0o777)
    remember(path)  # not written where others can write
    assert found_plan(path) is None
    cache.chmod(0o700)


def test_other_tools_files_and_turned_off(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert plancache.lookup(str(tmp_path / "fabric.clab.yml")) is None
    assert plancache.lookup(str(tmp_path / "topo.py")) is None
    assert plancache.lookup(str(tmp_path / "ring.yaml"), topo="tree,2") is None
    clab = tmp_path / "c.yaml"  # containerlab by content, not by name
    clab.write_text("name: c\ntopology:\n  nodes:\n    a: {kind: linux}\n    b: {kind: linux}\n")
    assert prepare.plan_netrig_bytes(str(clab), clab.read_bytes()) is None
    monkeypatch.setenv("NETRIG_PLAN_CACHE", "off")
    assert plancache.cache_dir() is None
    monkeypatch.delenv("NETRIG_PLAN_CACHE")
    if os.geteuid() == 0:
        assert plancache.cache_dir() == "/var/cache/netrig/plans"


def test_the_newest_entries_are_kept(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plancache, "MAX_ENTRIES", 2)
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"r{i}.yaml")
        paths[-1].write_text(RING.format(name=f"pc{i}", n=3))
        remember(paths[-1])
        os.utime(entry_of(paths[-1]), ns=(i, i))  # written in this order, whatever the clock
    assert len(list(cache.iterdir())) == 2
    assert found_plan(paths[2]) is not None
    monkeypatch.setattr(plancache, "MAX_TOTAL_BYTES", entry_of(paths[2]).stat().st_size + 10)
    paths[0].write_text(RING.format(name="pc0", n=3) + "# again\n")
    remember(paths[0])  # the newest, alone within the bytes allowed
    assert [found_plan(p) is not None for p in paths] == [True, False, False]


def built(summary: str) -> tuple[str, ...]:
    """Nodes, links, routes and pairs checked, from `netrig up -q`'s line."""
    found = re.search(r"(\d+) nodes, (\d+) links, (\d+) routes .*; (\d+) pairs reachable", summary)
    assert found, summary
    return found.groups()


def expected(path: Path) -> tuple[str, ...]:
    """What planning the file here says `up` builds; every ordered pair checked, both families."""
    plan = prepare.plan_file(str(path))
    nodes = len(plan.nodes)
    return str(nodes), str(len(plan.links)), str(plan.route_count()), str(nodes * (nodes - 1) * 2)


@requires_root
def test_up_of_a_file_built_before_reads_no_yaml_and_builds_it_checked(
    cache: Path, tmp_path: Path
) -> None:
    name = new_lab_name("pc")
    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name=name, n=6))

    def down() -> None:
        subprocess.run([sys.executable, "-m", "netrig", "down", name], capture_output=True)

    try:
        first = netrig_cli("up", "-q", str(path))
        assert first.returncode == 0, first.stderr
        down()
        assert len(list(cache.glob("*.plan"))) == 1
        modules = imported("up", "-q", str(path), after=down)
        assert "netrig.lab.build" in modules and "netrig.lab.check" in modules
        assert not tops(modules) & (HEAVY | {"pydantic", "yaml", "click"})
        unchecked = imported("up", "-q", "--no-check", str(path), after=down)
        assert "netrig.lab.settle" in unchecked and "netrig.cli.bringup" in unchecked
        assert not {"netrig.lab.check", "netrig.lab.fibcheck", "click"} & unchecked
        reading = {"netrig.model.load", "netrig.model.models", "netrig.model.yamlmarks",
                   "netrig.model.nodecount", "netrig.plan.lab", "netrig.rig.prepare"}  # fmt: skip
        assert not modules & reading
        assert not {m for m in modules if m.startswith("netrig.routing")}
        again = netrig_cli("up", "-q", str(path))
        assert again.returncode == 0, again.stderr
        assert built(again.stdout) == built(first.stdout) == expected(path)
        down()
        path.write_text(RING.format(name=name, n=7))  # edited: read again, the new ring built
        edited = netrig_cli("up", "-q", str(path))
        assert edited.returncode == 0, edited.stderr
        assert built(edited.stdout) == expected(path)
    finally:
        down()


@requires_root
def test_a_host_that_lost_a_need_gets_the_preflight_message(
    cache: Path, tmp_path: Path, lab_name: str
) -> None:
    source = tmp_path / "www"
    source.mkdir()
    path = tmp_path / "lab.yaml"
    path.write_text(
        f"name: {lab_name}\ntopology: {{kind: pair}}\nrouting: {{protocol: static}}\n"
        f"nodes:\n  - name: n1\n    binds: ['{source}:/srv']\n"
    )
    first = netrig_cli("up", "-q", "--no-check", str(path))
    assert first.returncode == 0, first.stderr
    netrig_cli("down", lab_name, check=True)
    source.rmdir()
    again = netrig_cli("up", "-q", str(path))
    assert again.returncode == 2
    assert f"{path}:6:" in again.stderr and "does not exist on this host" in again.stderr


def test_validate_says_the_same_from_a_remembered_plan_without_reading_yaml(
    cache: Path, tmp_path: Path
) -> None:
    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name="pv", n=12))
    first = netrig_cli("validate", str(path))
    assert first.returncode == 0, first.stderr
    assert "12 hosts, 12 links, routing static" in first.stdout
    assert len(list(cache.iterdir())) == 1  # validated: remembered
    modules = imported("validate", str(path))
    assert not tops(modules) & {"pydantic", "yaml"}
    assert "netrig.rig.prepare" not in modules
    again = netrig_cli("validate", str(path))
    assert (again.returncode, again.stdout) == (0, first.stdout)


def test_validate_of_a_remembered_file_whose_bind_went_away_says_where(
    cache: Path, tmp_path: Path
) -> None:
    source = tmp_path / "www"
    source.mkdir()
    path = tmp_path / "lab.yaml"
    path.write_text(
        "name: pb\ntopology: {kind: pair}\nrouting: {protocol: static}\n"
        f"nodes:\n  - name: n1\n    binds: ['{source}:/srv']\n"
    )
    assert netrig_cli("validate", str(path)).returncode == 0
    source.rmdir()
    again = netrig_cli("validate", str(path))
    assert again.returncode == 2
    assert f"{path}:6:" in again.stderr and "does not exist on this host" in again.stderr


@requires_root
def test_the_python_api_remembers_when_asked(cache: Path, tmp_path: Path) -> None:
    from netrig.rig import Lab

    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name=new_lab_name("pa"), n=4))
    first = Lab.from_file(str(path), cache=True)
    assert not cache.exists()  # remembered once it is up, not before
    with first:
        assert first.check_result is not None and not first.check_result.failed
    assert len(list(cache.iterdir())) == 1
    again = Lab.from_file(str(path), cache=True)
    assert again._remember is None  # found, so not to be remembered again
    fresh = Lab.from_file(str(path)).plan.to_json(with_routes=True)
    assert again.plan.to_json(with_routes=True) == first.plan.to_json(with_routes=True) == fresh
    with again:
        assert again.check_result is not None and not again.check_result.failed


def test_no_name_is_not_an_empty_name(cache: Path, tmp_path: Path) -> None:
    """--name "" is refused when the file is read: it must not find the plan kept without
    --name."""
    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name="pe", n=3))
    remember(path)
    assert found_plan(path) is not None and found_plan(path, name="") is None


def test_pruning_removes_only_its_own_entries(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plancache, "MAX_ENTRIES", 1)
    cache.mkdir(mode=0o700)
    mine = cache / "project.plan"  # a user's file in a directory they chose
    mine.write_text("not an entry")
    theirs = cache / ("ab" * 20 + ".plan")  # an entry's name, another owner's file
    theirs.write_text("x")
    os.chown(theirs, 12345, 12345)
    stale = cache / f"{plancache.TMP_PREFIX}x1.tmp"  # a killed writer's
    stale.write_text("half")
    os.utime(stale, (0, 0))
    for i in range(3):
        path = tmp_path / f"r{i}.yaml"
        path.write_text(RING.format(name=f"pp{i}", n=3))
        remember(path)
        os.utime(entry_of(path), ns=(i, i))
    left = sorted(p.name for p in cache.iterdir())
    assert left == sorted([mine.name, theirs.name, entry_of(path).name])


def test_a_user_without_a_home_keeps_no_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NETRIG_PLAN_CACHE")
    monkeypatch.setattr(os, "geteuid", lambda: 12345)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored: not absolute
    monkeypatch.setenv("HOME", "/home/u")
    assert plancache.cache_dir() == "/home/u/.cache/netrig/plans"
    monkeypatch.setattr(os.path, "expanduser", lambda p: p)  # no HOME, no passwd entry
    assert plancache.cache_dir() is None


@requires_root
def test_a_signal_while_the_plan_is_kept_removes_the_lab(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan is kept before the lab counts as up: an interruption there takes the lab
    down, as `up` then says."""
    from netrig.lab.ledger import Ledger
    from netrig.rig import Lab

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(plancache, "_store", interrupted)
    path = tmp_path / "ring.yaml"
    name = new_lab_name("ps")
    path.write_text(RING.format(name=name, n=3))
    lab = Lab.from_file(str(path), cache=True)
    with pytest.raises(KeyboardInterrupt):
        lab.up(check_reachability=False)
    assert Ledger().lab(name) is None

