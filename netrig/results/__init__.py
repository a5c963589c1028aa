"""Results: the SQLite store of runs and their samples, and the host facts stored with them."""

from netrig.host.facts import collect_host_facts, tool_version
from netrig.results.store import (
    SCHEMA_VERSION,
    ExperimentRecord,
    ResultStore,
    Run,
    StoreError,
    point_key,
)

__all__ = [
    "SCHEMA_VERSION",
    "ExperimentRecord",
    "ResultStore",
    "Run",
    "StoreError",
    "collect_host_facts",
    "point_key",
    "tool_version",
]
