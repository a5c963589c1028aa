"""Shared fixtures: unique lab names, labs that are always removed, root/tool skips (which
fail the suite under CI=true).

Every lab a test builds goes through `make_lab` (or is named by `lab_name`), and the
session ends by checking that none of this run's namespaces is left on the host.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from netrig.lab import netns
from netrig.lab.ledger import Ledger
from netrig.lab.teardown import teardown
from netrig.rig import Lab

RUN_TAG = uuid.uuid4().hex[:4]
_names: list[str] = []

# the plans `netrig up` remembers (netrig.rig.plancache) go to a directory of this run's,
# not the host's: none is left behind (this module is imported twice: made once)
PLAN_CACHE_PREFIX = "netrig-test-plans-"
if "NETRIG_PLAN_CACHE" not in os.environ:  # one the user chose is kept
    os.environ["NETRIG_PLAN_CACHE"] = tempfile.mkdtemp(prefix=PLAN_CACHE_PREFIX)

requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")


def requires_tool(tool: str) -> pytest.MarkDecorator:
    """Skip without the tool (which fails the suite under CI=true). Importing netrig puts
    /usr/sbin and /sbin on PATH, so a non-login root shell finds ip, bird, nft… too."""
    return pytest.mark.skipif(shutil.which(tool) is None, reason=f"{tool} is not installed")


def running(pid: int) -> bool:
    """True while pid runs (a zombie does not: it only waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def new_lab_name(prefix: str = "t") -> str:
    """Unique per test and per run, short enough for namespace names."""
    name = f"{prefix}{RUN_TAG}{len(_names):03d}"
    _names.append(name)
    return name


@pytest.fixture
def lab_name() -> Iterator[str]:
    """A unique lab name; whatever lab of that name exists after the test is removed."""
    name = new_lab_name()
    yield name
    ledger = Ledger()
    if name in ledger.all_lab_names():
        teardown(ledger, name)
    ledger.close()


@pytest.fixture
def make_lab() -> Iterator[Callable[..., Lab]]:
    """Build a lab from a dict (name filled in); every lab built is removed after the test."""
    built: list[Lab] = []

    def make(spec: dict[str, Any], check: bool = True) -> Lab:
        spec = {"name": new_lab_name(), **spec}
        lab = Lab.from_spec(spec)
        built.append(lab)
        lab.up(check_reachability=check)
        return lab

    yield make
    for lab in built:
        lab.down()


def netrig_cli(*args: str, check: bool = False, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run the real command line, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "netrig", *args],
        capture_output=True,
        text=True,
        check=check,
        **kwargs,
    )


_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember every skipped test (an expected failure, xfail, is not a skip)."""
    if report.skipped and not hasattr(report, "wasxfail"):
        where = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        _skipped.append(f"{report.nodeid}: {where}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI=true a skipped test fails the suite (a tool or root missing there means the
    claim went untested); and no test of this run may leave a namespace behind."""
    if os.environ.get("CI") == "true" and _skipped:
        session.exitstatus = 1
        print(f"\nERROR: CI=true and {len(_skipped)} tests were skipped:", file=sys.stderr)
        for line in _skipped[:20]:
            print(f"  {line}", file=sys.stderr)
    plans = os.environ.get("NETRIG_PLAN_CACHE", "")
    if os.path.basename(plans).startswith(PLAN_CACHE_PREFIX):
        shutil.rmtree(plans, ignore_errors=True)
    if os.geteuid() != 0:
        return
    leftovers = [ns for ns in netns.list_names() if any(ns.startswith(n + "-") for n in _names)]
    if leftovers:
        ledger = Ledger()
        for name in {n for n in _names for ns in leftovers if ns.startswith(n + "-")}:
            teardown(ledger, name)
        session.exitstatus = 1
        print(f"\nERROR: tests left namespaces behind: {leftovers[:10]}", file=sys.stderr)


class SigintStop(Exception):
    """What SIGINT raises under the `sigint_raises` fixture (not KeyboardInterrupt, which
    pytest takes as the user's)."""


@pytest.fixture
def sigint_raises() -> Iterator[type[SigintStop]]:
    """SIGINT raises the class this yields (take it from here: pytest's `conftest` and an
    imported `tests.conftest` are two modules with a class each). One left pending, or
    blocked by a failing test, is delivered and dropped before the handler is put back."""

    def handler(signum: int, frame: object) -> None:
        raise SigintStop

    before = signal.signal(signal.SIGINT, handler)
    try:
        yield SigintStop
    finally:
        with contextlib.suppress(SigintStop):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        with contextlib.suppress(SigintStop):
            time.sleep(0.01)
        signal.signal(signal.SIGINT, before)


def interrupt_main_thread() -> None:
    """SIGINT to the main thread alone: while it holds the stop signals
    (netrig.base.stopsignals.held), it comes as they are released."""
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
