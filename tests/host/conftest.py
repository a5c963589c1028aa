"""Fixtures for doctor tests: the host's network state, to prove probes leave no trace."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest

from netrig.doctor.declared import declare_plugin_programs

declare_plugin_programs()  # the table `netrig doctor` checks: the core's tools and every plugin's


def host_net_state() -> tuple[str, list[str], list[str]]:
    """`ip netns list`, the host's interfaces, and every thread's namespace of this process."""
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                           check=True).stdout
    links = sorted(os.listdir("/sys/class/net"))
    threads = sorted({os.readlink(f"/proc/self/task/{tid}/ns/net")
                      for tid in os.listdir("/proc/self/task")})
    return netns, links, threads


@pytest.fixture
def unchanged_host() -> Callable[[], None]:
    """Call the returned check after a doctor run: it fails if the host's state moved."""
    before = host_net_state()

    def check() -> None:
        after = host_net_state()
        assert after[0] == before[0], "ip netns list changed"
        assert after[1] == before[1], "interfaces appeared in the host namespace"
        assert after[2] == [os.readlink("/proc/self/ns/net")], "a thread is left in another ns"

    return check
