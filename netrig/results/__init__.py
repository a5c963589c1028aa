"""Results: samples, the SQLite store they are kept in, and the host facts stored with them."""

from netrig.results.hostfacts import collect_host_facts, tool_version
from netrig.results.sample import MeasurementFailed, Sample
from netrig.results.store import (
    SCHEMA_VERSION,
    Experiment,
    ResultStore,
    Run,
    StoreError,
    point_key,
)

__all__ = [
    "SCHEMA_VERSION",
    "Experiment",
    "MeasurementFailed",
    "ResultStore",
    "Run",
    "Sample",
    "StoreError",
    "collect_host_facts",
    "point_key",
    "tool_version",
]
