"""Where netrig keeps what it remembers between runs: the plans of lab files
(netrig.rig.plancache) and the namespace counts of command lines (netrig.rig.ahead).

A module of its own with nothing but `os`, so `netrig up` can look there first thing,
before it imports anything heavier.
"""

from __future__ import annotations

import os

# a temporary file being written there (an entry or the hints); one a killed writer left
# is pruned by plancache
TMP_PREFIX = "netrig-plan-"


def cache_dir() -> str | None:
    """Where entries live, or None when remembering is turned off (NETRIG_PLAN_CACHE=off)."""
    chosen = os.environ.get("NETRIG_PLAN_CACHE")
    if chosen is not None:
        return None if chosen in ("", "off", "0") else chosen
    if os.geteuid() == 0:
        return "/var/cache/netrig/plans"
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative: ignored, as the XDG spec says
        base = os.path.expanduser("~/.cache")
    if not os.path.isabs(base):  # no home (no HOME, no passwd entry): keep none
        return None
    return os.path.join(base, "netrig", "plans")
