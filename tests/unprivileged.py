"""Run netrig as a real unprivileged user (nobody, via setpriv), not a patched os.geteuid.

nobody must be able to read the interpreter, the installed packages and this tree; a venv
made from an interpreter under /root is not readable, so the system interpreter of the same
version is used with the venv's site-packages on PYTHONPATH.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _pythonpath() -> str:
    return os.pathsep.join([str(ROOT), *site.getsitepackages()])


@functools.cache
def nobody_python() -> str | None:
    """An interpreter nobody can run that imports netrig and its dependencies."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [os.path.realpath(sys.executable), f"/usr/bin/python{version}"]
    if shutil.which("setpriv") is None:
        return None
    for python in candidates:
        probe = subprocess.run(
            [*NOBODY, "env", f"PYTHONPATH={_pythonpath()}", python, "-c",
             "import sys, netrig.cli, pydantic, rich, click, matplotlib; "
             f"assert sys.version_info[:2] == {sys.version_info[:2]!r}"],
            capture_output=True, text=True, check=False, cwd="/",
        )  # fmt: skip
        if probe.returncode == 0:
            return python
    return None


def need_nobody() -> str:
    python = nobody_python()
    if python is None:
        pytest.skip("no interpreter with netrig's packages is readable by the user nobody")
    return python


@pytest.fixture
def nobody_dir() -> Iterator[Path]:
    """A directory nobody may read and write (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="netrig-nobody-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def as_nobody(
    *args: str, cwd: Path, env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """`netrig ARGS` run by the user nobody, in cwd."""
    python = need_nobody()
    environ = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "HOME": str(cwd),
        "MPLCONFIGDIR": str(cwd / ".mpl"),
        "PYTHONPATH": _pythonpath(),
        "LANG": "C.UTF-8",
        "COLUMNS": "200",
        **(env or {}),
    }
    return subprocess.run(
        [*NOBODY, "env", "-i", *(f"{k}={v}" for k, v in environ.items()), python, "-m",
         "netrig", *args],
        capture_output=True, text=True, check=False, cwd=cwd, timeout=120, **kwargs,
    )  # fmt: skip
