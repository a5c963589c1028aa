"""Namespaces made from the first moment (netrig.rig.ahead): `netrig up` with a command line
it ran before starts making them before click is imported, as many as it built last time;
the hint is read only when this user alone could have written it, and a wrong hint changes
nothing that is built."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from netrig.lab import netns
from netrig.rig import ahead
from tests.conftest import netrig_cli, new_lab_name, requires_root

RING = "name: {name}\ntopology: {{kind: ring, nodes: {n}}}\nrouting: {{protocol: static}}\n"


def test_hints_round_trip_newest_last_and_bounded(cache: Path) -> None:
    keys = [f"{i:032x}" for i in range(ahead.MAX_HINTS + 6)]
    for i, key in enumerate(keys):
        ahead.write_hint(str(cache), key, i + 1)
    ahead.write_hint(str(cache), keys[10], 999)  # set again: now the newest
    hints = ahead.read_hints(str(cache))
    assert len(hints) == ahead.MAX_HINTS
    assert list(hints)[-1] == keys[10] and hints[keys[10]] == 999
    assert not set(keys[:6]) & set(hints) and keys[6] in hints  # the oldest six went
    assert hints[keys[-1]] == len(keys)
    assert sorted(p.name for p in cache.iterdir()) == [ahead.HINTS_FILE]  # no temporary left
    assert (cache / ahead.HINTS_FILE).stat().st_mode & 0o077 == 0


def test_the_key_is_the_command_line_and_where_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    key = ahead.command_key(["up", "ring.yaml"])
    assert len(key) == 32 and key == ahead.command_key(["up", "ring.yaml"])
    assert key != ahead.command_key(["up", "--no-check", "ring.yaml"])
    assert key != ahead.command_key(["up", "ring.yaml", "--name", "x"])
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert key != ahead.command_key(["up", "ring.yaml"])


def test_garbage_lines_are_no_hints(cache: Path) -> None:
    cache.mkdir(mode=0o700)
    good = "a" * 32
    (cache / ahead.HINTS_FILE).write_text(
        f"nonsense\n{'b' * 32} -3\n{'c' * 31} 5\n{good} 7\n\x00\n{'e' * 32} {'9' * 5000}\n"
    )
    (cache / ahead.HINTS_FILE).chmod(0o600)
    assert ahead.read_hints(str(cache)) == {good: 7}  # 5,000 digits: no hint, and no error


def test_a_fifo_in_place_of_the_hints_file_is_not_waited_for(cache: Path) -> None:
    cache.mkdir(mode=0o700)
    os.mkfifo(cache / ahead.HINTS_FILE, 0o600)  # no writer: a blocking open would hang
    assert ahead.read_hints(str(cache)) == {}


def test_a_hints_file_others_could_write_is_not_read(cache: Path, tmp_path: Path) -> None:
    key = "d" * 32
    ahead.write_hint(str(cache), key, 5)
    path = cache / ahead.HINTS_FILE
    path.chmod(0o620)  # group-writable
    assert ahead.read_hints(str(cache)) == {}
    path.chmod(0o600)
    assert ahead.read_hints(str(cache)) == {key: 5}
    # a symbolic link to a file with hints is not followed
    path.rename(tmp_path / "real")
    path.symlink_to(tmp_path / "real")
    assert ahead.read_hints(str(cache)) == {}
    path.unlink()
    # a directory others can write to gets no hints file
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    ahead.write_hint(str(shared), key, 5)
    assert list(shared.iterdir()) == []


@requires_root
def test_a_hints_file_of_another_user_is_not_read(cache: Path) -> None:
    key = "e" * 32
    ahead.write_hint(str(cache), key, 5)
    os.chown(cache / ahead.HINTS_FILE, 65534, 65534)
    assert ahead.read_hints(str(cache)) == {}


def start_in_a_new_python(argv: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """ahead.start(argv) in a fresh interpreter: what it made before click was imported."""
    probe = (
        "import sys; from netrig.rig import ahead\n"
        f"ahead.start({argv!r})\n"
        "early = ahead._early\n"
        "made = early.wait() if early else 0\n"
        "print(ahead.hinted(), made, 'click' in sys.modules, 'netrig.cli' in sys.modules)\n"
        "spare = ahead.spares(3)\n"
        "print(spare is early, spare.count)\n"
        "spare.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


@requires_root
def test_start_makes_the_hinted_namespaces_before_click_only_for_up(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ)
    argv = ["up", "-q", "ring.yaml"]
    ahead.write_hint(str(cache), ahead.command_key(argv), 4)
    assert start_in_a_new_python(argv, tmp_path, env) == [
        "4", "4", "False", "False",  # made 4 with nothing of the command line imported
        "True", "3",  # then handed to the build, retargeted
    ]  # fmt: skip
    # another command line, another command, another directory: nothing made
    for other, where in (
        (["up", "ring.yaml"], tmp_path),
        (["validate", "-q", "ring.yaml"], tmp_path),
    ):
        assert start_in_a_new_python(other, where, env)[:2] == ["0", "0"]
    (tmp_path / "sub").mkdir()
    assert start_in_a_new_python(argv, tmp_path / "sub", env)[:2] == ["0", "0"]
    # and none with the plan cache off
    assert start_in_a_new_python(argv, tmp_path, dict(env, NETRIG_PLAN_CACHE="off"))[:2] == [
        "0",
        "0",
    ]


@requires_root
def test_a_command_line_without_a_hint_imports_nothing_more(cache: Path, tmp_path: Path) -> None:
    # a new command line must not pay for the lab core's imports before click (they come
    # later, with the gc off): only the hints file is looked at
    ahead.write_hint(str(cache), ahead.command_key(["up", "other.yaml"]), 4)
    probe = (
        "import sys; from netrig.rig import ahead\n"
        "ahead.start(['up', '-q', 'new.yaml'])\n"
        "print(ahead.hinted(), *sorted(m for m in sys.modules if m.startswith('netrig')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == [
        "0",
        "netrig",
        "netrig.rig",
        "netrig.rig.ahead",
        "netrig.rig.cachedir",
    ]


@requires_root
def test_spares_retargeted_while_being_made_stop_early() -> None:
    spare = netns.SpareNamespaces(200).start()
    assert spare.count == 200  # not bounded below it by the descriptors allowed here
    spare.retarget(3)
    try:
        made = spare.wait()
        assert 3 <= made < 50  # it stopped at the new count (or a few past it), not at 200
    finally:
        spare.close()
    later = netns.SpareNamespaces(0)
    later.retarget(2)  # before it starts: a count like the constructor's
    with later:
        assert later.wait() == 2


@requires_root
def test_spares_retargeted_after_they_were_made_make_the_rest() -> None:
    # a hint too small: the thread had finished when the build asked for more
    with netns.SpareNamespaces(2) as spare:
        assert spare.wait() == 2
        spare.retarget(5)
        assert spare.wait() == 5
        spare.stop()  # once stopped (the build names them), never again
        spare.retarget(8)
        assert spare.wait() == 5


@requires_root
def test_up_learns_its_count_and_a_wrong_hint_builds_the_file(cache: Path, tmp_path: Path) -> None:
    name = new_lab_name("ah")
    path = tmp_path / "ring.yaml"
    path.write_text(RING.format(name=name, n=4))
    argv = ["up", "-q", "--no-check", str(path)]
    key = ahead.command_key(argv)  # netrig_cli runs in this directory
    try:
        first = netrig_cli(*argv)
        assert first.returncode == 0, first.stderr
        assert ahead.read_hints(str(cache)).get(key) == 4
        netrig_cli("down", name, check=True)
        # the same again: the hint stands, the file is not written
        written = (cache / ahead.HINTS_FILE).stat().st_ino
        assert netrig_cli(*argv).returncode == 0
        assert (cache / ahead.HINTS_FILE).stat().st_ino == written
        netrig_cli("down", name, check=True)
        # the file grew: the hint (4) starts too few, the build makes the rest
        path.write_text(RING.format(name=name, n=6))
        again = netrig_cli(*argv)
        assert again.returncode == 0, again.stderr
        assert sorted(n for n in netns.list_names() if n.startswith(f"{name}-")) == [
            f"{name}-n{i}" for i in range(1, 7)
        ]
        assert ahead.read_hints(str(cache)).get(key) == 6
        netrig_cli("down", name, check=True)
        # a hint far too large: the lab is still the file's, and nothing else is named
        ahead.write_hint(str(cache), key, 40)
        third = netrig_cli(*argv)
        assert third.returncode == 0, third.stderr
        assert len([n for n in netns.list_names() if n.startswith(f"{name}-")]) == 6
        assert ahead.read_hints(str(cache)).get(key) == 6
    finally:
        netrig_cli("down", name)


@requires_root
def test_a_hint_among_the_older_half_is_written_again_as_the_newest(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["up", "-q", "ring.yaml"]
    key = ahead.command_key(argv)  # in tmp_path, where the probe runs
    probe = (
        "import os, sys; from netrig.rig import ahead\n"
        f"os.chdir({str(tmp_path)!r})\n"
        f"ahead.start({argv!r})\n"
        "ahead.spares(3).close()\n"
        "ahead.learn(3)\n"
    )
    for others in (ahead.MAX_HINTS // 2 - 1, ahead.MAX_HINTS // 2 + 1):
        ahead.write_hint(str(cache), key, 3)
        for i in range(others):
            ahead.write_hint(str(cache), f"{i:032x}", 9)
        written = (cache / ahead.HINTS_FILE).stat().st_ino
        subprocess.run([sys.executable, "-c", probe], check=True)
        hints = ahead.read_hints(str(cache))
        if others < ahead.MAX_HINTS // 2:  # among the newer half: left as it is
            assert (cache / ahead.HINTS_FILE).stat().st_ino == written
            assert next(iter(hints)) == key
        else:  # so a command line run often is not pushed out by 64 others
            assert list(hints)[-1] == key and hints[key] == 3


@requires_root
def test_a_removed_working_directory_is_no_error(cache: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    probe = (
        "import os, sys; from netrig.rig import ahead\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "ahead.start(['up', 'ring.yaml'])\n"
        "ahead.learn(5)\n"
        "print(ahead.hinted(), ahead._key)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (out.returncode, out.stdout.split()) == (0, ["0", "None"]), out.stderr
