"""Fixtures for the report tests: a results store recorded by shootout_data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from shootout_data import HOST, record_shootout

from netrig.base.sample import Sample
from netrig.results.store import ResultStore


@pytest.fixture
def shootout_db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "shootout.db"
    with ResultStore(path) as store:
        record_shootout(store)
        single = store.begin_experiment("single", "name: single\n", HOST)
        for rep, rate in enumerate([9.1e9, 9.3e9, 9.2e9, 9.0e9]):
            samples = {"iperf3": [Sample("throughput", rate, "bit/s")]}
            store.record_run(single, {}, rep, "ok", samples)
        store.finish_experiment(single, "ok")
    yield path
