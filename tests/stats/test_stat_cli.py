"""`python -m netrig stat` end to end, as a user runs it, against the real ministat."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ministat_harness import INSTALL_HINT, ministat_path

from tests.processes import on_terminal

X1 = b"1\n2\n3\n"
X2 = b"10\n11\n13\n"
WIDE = b"".join(b"%d\n" % (i * 7 % 23) for i in range(30))


@pytest.fixture(scope="module")
def ministat() -> str:
    path = ministat_path()
    if path is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return path


def netrig_stat(*args: str | Path, stdin: bytes = b"", env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "netrig", "stat", *map(str, args)],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
    )


def real_ministat(binary: str, *args: str | Path, stdin: bytes = b""):
    return subprocess.run(
        ["ministat", *map(str, args)], executable=binary, input=stdin, capture_output=True
    )


@pytest.mark.parametrize(
    "args",
    [
        ["{a}", "{b}"],
        ["-s", "-c", "99", "{a}", "{b}", "{a}"],
        ["-x"],
        ["--", "{a}", "-n"],
        ["{a}", "{missing}"],
        ["-"],
    ],
)
def test_command_matches_ministat(ministat: str, tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "a").write_bytes(X1)
    (tmp_path / "b").write_bytes(X2)
    names = {"a": tmp_path / "a", "b": tmp_path / "b", "missing": tmp_path / "missing"}
    argv = [a.format(**names) for a in args]
    ours = netrig_stat(*argv, stdin=WIDE)
    real = real_ministat(ministat, *argv, stdin=WIDE)
    assert (ours.stdout, ours.stderr, ours.returncode) == (
        real.stdout,
        real.stderr,
        real.returncode,
    )


def test_help_still_works() -> None:
    p = netrig_stat("--help")
    assert p.returncode == 0
    assert b"netrig stat [-C column]" in p.stdout
    assert b"-h, --help" not in p.stdout
    assert b"ministat" in p.stdout and b"-c confidence" in p.stdout


def test_short_h_is_an_unknown_option_like_ministat() -> None:
    p = netrig_stat("-h")
    assert p.returncode == 2
    assert p.stderr.startswith(b"ministat: invalid option -- 'h'\nUnknown option\nUsage:")


@pytest.mark.parametrize("columns_env", [None, "50", "30x"])
def test_terminal_width_matches_ministat(
    ministat: str, tmp_path: Path, columns_env: str | None
) -> None:
    """On a terminal the width is $COLUMNS (atoi) or the window width - 2."""
    (tmp_path / "a").write_bytes(WIDE)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns_env is not None:
        env["COLUMNS"] = columns_env
    _, real = on_terminal([ministat, str(tmp_path / "a")], 100, env)
    _, ours = on_terminal([sys.executable, "-m", "netrig", "stat", str(tmp_path / "a")], 100, env)
    assert real.count(b"\n") > 5
    assert ours == real
