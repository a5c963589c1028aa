"""ResultStore: round trips, one transaction per run, migrations, resume bookkeeping."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from netrig.base.sample import Sample
from netrig.measure.parse_iperf3 import parse_iperf3
from netrig.results.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    NotAStore,
    ResultStore,
    StoreError,
    point_key,
)

FILE = "name: pair-iperf3\ntopology: {kind: pair}\nvary:\n  hops: [1, 5]\nrepeat: 2\n"
FACTS = {"kernel": "6.1.0", "cpu_model": "Test CPU", "cpu_count": 2,
         "tool_versions": {"iperf3": "iperf 3.12"}}
T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
IPERF3 = Path(__file__).resolve().parent.parent / "data" / "iperf3"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with ResultStore(tmp_path / "results.db") as opened:
        yield opened


def iperf3_samples(name: str = "tcp") -> tuple[Sample, ...]:
    return parse_iperf3((IPERF3 / f"{name}.stdout").read_text()).samples


def filled(store: ResultStore) -> tuple[int, list[int]]:
    """An experiment with two good runs, a failed one and an interrupted one."""
    eid = store.begin_experiment("pair-iperf3", FILE, FACTS)
    runs = [
        store.record_run(eid, {"hops": 1}, 0, "ok", {"iperf3": iperf3_samples("tcp")},
                         started=T0, ended=T0 + timedelta(seconds=2.5)),
        store.record_run(eid, {"hops": 5}, 0, "ok", {"iperf3": iperf3_samples("tcp-p2")},
                         started=T0, ended=T0 + timedelta(seconds=3)),
        store.record_run(eid, {"hops": 1}, 1, "failed", {},
                         reason="iperf3: unable to connect to server: Connection refused",
                         stderr="iperf3: error\n", started=T0, ended=T0),
        store.record_run(eid, {"hops": 5}, 1, "interrupted", None, reason="interrupted"),
    ]
    store.finish_experiment(eid, "interrupted")
    return eid, runs


def test_database_is_wal_with_foreign_keys(store: ResultStore) -> None:
    db = store._db
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.schema_version == SCHEMA_VERSION
    with pytest.raises(sqlite3.IntegrityError):  # the schema itself refuses orphans
        db.execute("INSERT INTO runs (experiment_id, repetition, status) VALUES (999, 0, 'ok')")
    with pytest.raises(StoreError, match="no experiment"):
        store.record_run(999, {}, 0, "ok", {})


def test_experiment_metadata_round_trip(store: ResultStore) -> None:
    eid, _ = filled(store)
    [experiment] = store.experiments()
    assert experiment.id == eid and experiment.name == "pair-iperf3"
    assert experiment.file_text == FILE
    assert experiment.file_hash == hashlib.sha256(FILE.encode()).hexdigest()
    assert experiment.host_facts == FACTS
    assert experiment.status == "interrupted"
    assert experiment.ended is not None and experiment.ended >= experiment.started


def test_runs_round_trip(store: ResultStore) -> None:
    eid, ids = filled(store)
    runs = store.runs(eid)
    assert [r.id for r in runs] == ids
    assert [(r.point, r.repetition, r.status) for r in runs] == [
        ({"hops": 1}, 0, "ok"), ({"hops": 5}, 0, "ok"),
        ({"hops": 1}, 1, "failed"), ({"hops": 5}, 1, "interrupted"),
    ]
    assert runs[0].started == T0 and runs[0].duration == 2.5
    assert runs[2].reason == "iperf3: unable to connect to server: Connection refused"
    assert runs[2].stderr == "iperf3: error\n"
    assert runs[3].started is None and runs[3].duration is None
    assert store.run(ids[1]) == runs[1]


def test_samples_round_trip_exactly(store: ResultStore) -> None:
    _, ids = filled(store)
    stored = store.samples(ids[1])
    assert {name for name, _ in stored} == {"iperf3"}
    assert tuple(sample for _, sample in stored) == iperf3_samples("tcp-p2")
    assert store.samples(ids[2]) == []


def test_tidy_rows_one_per_sample_and_per_failed_run(store: ResultStore) -> None:
    eid, ids = filled(store)
    rows = store.tidy_rows(eid)
    assert len(rows) == len(iperf3_samples("tcp")) + len(iperf3_samples("tcp-p2")) + 2
    assert list(rows[0]) == ["experiment", "experiment_id", "run", "repetition", "status",
                             "reason", "hops", "measurement", "metric", "stream", "value",
                             "unit", "t"]
    summary = [r for r in rows if r["run"] == ids[0] and r["metric"] == "throughput"
               and r["t"] is None]
    assert len(summary) == 1
    expected = json.loads((IPERF3 / "tcp.stdout").read_text())["end"]["sum_received"]
    assert summary[0]["value"] == expected["bits_per_second"]
    assert summary[0]["hops"] == 1 and summary[0]["experiment"] == "pair-iperf3"
    assert summary[0]["unit"] == "bit/s" and summary[0]["measurement"] == "iperf3"
    [failed] = [r for r in rows if r["run"] == ids[2]]
    assert failed["status"] == "failed" and failed["value"] is None and failed["metric"] is None
    assert failed["reason"].startswith("iperf3: unable to connect")
    assert {r["stream"] for r in rows if r["run"] == ids[1]} == {None, "1", "2"}


def test_tidy_rows_of_all_experiments_and_clashing_names(store: ResultStore) -> None:
    filled(store)
    other = store.begin_experiment("clash", "x", {})
    store.record_run(other, {"metric": "a", "rate": 10}, 0, "ok", {"m": [Sample("v", 1, "")]})
    rows = store.tidy_rows()
    assert {r["experiment"] for r in rows} == {"pair-iperf3", "clash"}
    [row] = [r for r in rows if r["experiment"] == "clash"]
    # A sweep parameter named like a fixed column must not overwrite it.
    assert (row["metric"], row["vary_metric"], row["rate"], row["hops"]) == ("v", "a", 10, None)
    assert store.tidy_rows(other) == [
        {k: v for k, v in row.items() if k != "hops"}
    ]


def test_csv_round_trip(store: ResultStore) -> None:
    eid, _ = filled(store)
    out = io.StringIO()
    count = store.export_csv(out, eid)
    rows = store.tidy_rows(eid)
    back = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert count == len(back) == len(rows)
    for mine, read in zip(rows, back, strict=True):
        assert read.keys() == mine.keys()
        assert (float(read["value"]) if read["value"] else None) == mine["value"]
        assert (float(read["t"]) if read["t"] else None) == mine["t"]
        assert int(read["run"]) == mine["run"] and int(read["hops"]) == mine["hops"]
        assert read["metric"] == (mine["metric"] or "")
        assert read["status"] == mine["status"]


def test_json_round_trip_is_self_describing(store: ResultStore) -> None:
    eid, _ = filled(store)
    out = io.StringIO()
    count = store.export_json(out, eid)
    document = json.loads(out.getvalue())
    assert document["format"] == "netrig-results"
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["rows"] == store.tidy_rows(eid)
    assert count == len(document["rows"])
    assert document["columns"] == list(document["rows"][0])
    [experiment] = document["experiments"]
    assert experiment["file_text"] == FILE and experiment["host_facts"] == FACTS


def test_a_run_is_all_or_nothing(store: ResultStore) -> None:
    eid, ids = filled(store)
    before = store.tidy_rows(eid)

    def samples_then_crash() -> Iterator[Sample]:
        yield Sample("throughput", 1e9, "bit/s", 0.0)
        yield Sample("throughput", 2e9, "bit/s", 1.0)
        raise RuntimeError("tool died mid-write")

    with pytest.raises(RuntimeError, match="mid-write"):
        store.record_run(eid, {"hops": 8}, 0, "ok", {"iperf3": samples_then_crash()})
    assert [r.id for r in store.runs(eid)] == ids
    assert store.tidy_rows(eid) == before
    count = store._db.execute("SELECT count(*) FROM samples WHERE value IN (1e9, 2e9)")
    assert count.fetchone()[0] == 0
    # And the store still takes the next run.
    new = store.record_run(eid, {"hops": 8}, 0, "ok", {"iperf3": [Sample("x", 1, "")]})
    assert store.samples(new) == [("iperf3", Sample("x", 1, ""))]


def test_a_killed_process_leaves_no_half_run(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    script = textwrap.dedent(f"""
        import os
        from netrig.results.store import ResultStore
        from netrig.base.sample import Sample
        store = ResultStore({str(path)!r})
        eid = store.begin_experiment("e", "f", {{}})
        store.record_run(eid, {{"n": 1}}, 0, "ok", {{"m": [Sample("kept", 1, "")]}})
        def dying():
            yield Sample("lost", 2, "")
            os._exit(3)  # no cleanup, no rollback: as if the power went
        store.record_run(eid, {{"n": 2}}, 0, "ok", {{"m": dying()}})
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30, check=False, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 3, done.stderr
    with ResultStore(path) as store:
        [experiment] = store.experiments()
        assert [r.point for r in store.runs(experiment.id)] == [{"n": 1}]
        assert [r["metric"] for r in store.tidy_rows()] == ["kept"]


def test_bad_input_writes_nothing(store: ResultStore) -> None:
    eid = store.begin_experiment("e", "f", {})
    with pytest.raises(StoreError, match="status"):
        store.record_run(eid, {}, 0, "great", {})  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="time zone"):
        store.record_run(eid, {}, 0, "ok", {}, started=datetime(2025, 1, 1),
                         ended=datetime(2025, 1, 1))
    with pytest.raises(StoreError, match="not a Sample"):
        store.record_run(eid, {}, 0, "ok", {"m": [("throughput", 1.0)]})  # type: ignore[list-item]
    with pytest.raises(StoreError, match="keys"):
        store.record_run(eid, {1: "a"}, 0, "ok", {})  # type: ignore[dict-item]
    with pytest.raises(StoreError, match="not JSON"):
        store.record_run(eid, {"a": {1, 2}}, 0, "ok", {})
    assert store.runs(eid) == []
    with pytest.raises(StoreError):
        store.finish_experiment(eid, "running")
    with pytest.raises(StoreError, match="no experiment"):
        store.finish_experiment(eid + 1, "ok")


def test_find_experiment_by_id_or_newest_name(store: ResultStore) -> None:
    first = store.begin_experiment("sweep", "a", {})
    second = store.begin_experiment("sweep", "b", {})
    numbered = store.begin_experiment("42", "c", {})
    found = store.find_experiment("sweep")
    assert found is not None and found.id == second and found.file_text == "b"
    assert store.find_experiment(first) == store.experiment(first)
    assert store.find_experiment(str(first)) == store.experiment(first)
    # Digits are an id first; with no such id, a name.
    assert store.find_experiment("42") == store.experiment(numbered)
    assert store.find_experiment("nothing") is None
    assert store.find_experiment(999) is None
    with pytest.raises(StoreError):
        store.experiment(999)


def test_completed_points_for_resume(store: ResultStore) -> None:
    eid, _ = filled(store)
    done = store.completed_points(eid)
    # ok and failed runs are results; the interrupted one must run again.
    assert done == {(point_key({"hops": 1}), 0), (point_key({"hops": 5}), 0),
                    (point_key({"hops": 1}), 1)}
    assert (point_key({"hops": 5}), 1) not in done
    assert store.completed_points(eid, statuses=["ok"]) == {
        (point_key({"hops": 1}), 0), (point_key({"hops": 5}), 0)
    }
    assert store.completed_points(eid + 1) == set()


def test_point_key_ignores_key_order() -> None:
    assert point_key({"a": 1, "b": [1, 2]}) == point_key({"b": [1, 2], "a": 1})
    assert point_key({"a": 1}) != point_key({"a": "1"})


def make_v1_database(path: Path) -> None:
    """A database exactly as the first schema version left it, with one run in it."""
    db = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        db.execute(statement)
    db.execute("PRAGMA user_version = 1")
    db.execute("INSERT INTO experiments (id, name, file_text, file_hash, started, status,"
               " host_facts) VALUES (1, 'old', 'name: old', 'ab', '2024-05-01T10:00:00+00:00',"
               " 'ok', '{\"kernel\": \"5.10\"}')")
    db.execute("INSERT INTO runs (id, experiment_id, point, repetition, status)"
               " VALUES (1, 1, '{\"rate\": 5}', 0, 'ok')")
    db.execute("INSERT INTO samples (run_id, measurement, metric, value, unit, t)"
               " VALUES (1, 'ping', 'rtt_avg', 0.25, 'ms', NULL)")
    db.commit()
    db.close()


def test_a_v1_database_opens_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    make_v1_database(path)
    with ResultStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION > 1
        [old] = store.experiments()
        assert old.name == "old" and old.host_facts == {"kernel": "5.10"}
        assert store.samples(1) == [("ping", Sample("rtt_avg", 0.25, "ms"))]
        run = store.record_run(1, {"rate": 6}, 0, "ok",
                               {"iperf3": [Sample("throughput", 1e9, "bit/s", stream="1")]})
        rows = store.tidy_rows(1)
        assert [(r["rate"], r["metric"], r["stream"]) for r in rows] == [
            (5, "rtt_avg", None), (6, "throughput", "1")
        ]
        assert rows[1]["run"] == run
    with ResultStore(path) as again:  # a migrated database opens without migrating again
        assert again.schema_version == SCHEMA_VERSION
        assert len(again.tidy_rows()) == 2


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with ResultStore(path):
        pass
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer"):
        ResultStore(path)


def _sqlite_file(path: Path, *statements: str) -> bytes:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path.read_bytes()


@pytest.mark.parametrize(
    "statements",
    [
        ("CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('keep me')"),
        # another program that versions its schema as netrig does
        ("CREATE TABLE runs (x)", "PRAGMA user_version = 1"),
    ],
)
def test_another_programs_sqlite_file_is_refused_untouched(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    """`--db` naming the wrong file: refused before the WAL switch or netrig's tables
    change a byte of it, and no -wal/-shm files beside it."""
    path = tmp_path / "other.db"
    before = _sqlite_file(path, *statements)
    with pytest.raises(NotAStore, match="another program's SQLite file: tables"):
        ResultStore(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_an_empty_sqlite_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    _sqlite_file(path, "PRAGMA user_version = 0")
    with ResultStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION


def test_dataframe_needs_pandas_and_says_so(
    store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pandas"):
        store.to_dataframe()


def test_dataframe_has_the_tidy_columns_and_the_stored_values(store: ResultStore) -> None:
    import pandas  # installed by the test set-up (pyproject's test extra): never skipped

    eid, _ = filled(store)
    frame = store.to_dataframe(eid)
    rows = store.tidy_rows(eid)
    assert list(frame.columns) == list(rows[0])
    assert len(frame) == len(rows)
    # every cell as the store has it (NaN where the store has NULL)
    for row, record in zip(rows, frame.to_dict("records"), strict=True):
        for column, value in row.items():
            got = record[column]
            assert (value is None and pandas.isna(got)) or got == value, (column, value, got)
    # and the same frame as pandas makes from the CSV export
    out = io.StringIO()
    store.export_csv(out, eid)
    from_csv = pandas.read_csv(io.StringIO(out.getvalue()))
    assert from_csv["value"].tolist() == pytest.approx(frame["value"].tolist(), nan_ok=True)
