"""SQLite results store: experiments, their runs, and the runs' samples.

Why SQLite: one file, safe to read while an experiment writes (WAL), and each run is written
in one transaction, so a crash or Ctrl-C never leaves half a run. The schema carries its
version (``PRAGMA user_version``) and a list of migrations, so a database made by an older
netrig opens under a newer one.

    with ResultStore("netrig.db") as store:
        eid = store.begin_experiment("pair-iperf3", file_text, collect_host_facts(["iperf3"]))
        store.record_run(eid, {"hops": 1}, 0, "ok", {"iperf3": result.samples},
                         started=t0, ended=t1)
        store.finish_experiment(eid, "ok")
        store.export_csv(sys.stdout, eid)
"""

from __future__ import annotations

import csv
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

from netrig.base.sample import Sample
from netrig.base.sqlitefile import connect_readonly, track, writable_sqlite
from netrig.base.values import render
from netrig.plan.runs import point_key
from netrig.results.owner import alive as owner_alive
from netrig.results.owner import current as current_owner
from netrig.results.owner import of as owner_of

RunStatus = Literal["ok", "failed", "interrupted"]
ExperimentStatus = Literal["running", "ok", "failed", "interrupted"]
RUN_STATUSES: tuple[str, ...] = ("ok", "failed", "interrupted")
EXPERIMENT_STATUSES: tuple[str, ...] = ("running", "ok", "failed", "interrupted")

# Migration i (0-based) takes a database from version i to version i + 1. Append new steps;
# never edit a released one, since databases in the field already ran it.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # v1: experiments, runs, samples.
    (
        """CREATE TABLE experiments (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            file_text TEXT NOT NULL,
            file_hash TEXT NOT NULL,          -- sha256 of file_text, hex
            started TEXT NOT NULL,            -- ISO 8601, UTC
            ended TEXT,
            status TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'ok', 'failed', 'interrupted')),
            host_facts TEXT NOT NULL DEFAULT '{}'   -- JSON object
        )""",
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
            point TEXT NOT NULL DEFAULT '{}',  -- JSON object: this run's vary: values
            repetition INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'interrupted')),
            reason TEXT,
            stderr TEXT,
            started TEXT,
            ended TEXT,
            duration REAL                      -- seconds
        )""",
        """CREATE TABLE samples (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            measurement TEXT NOT NULL,         -- e.g. 'iperf3'
            metric TEXT NOT NULL,              -- e.g. 'throughput'
            value REAL NOT NULL,
            unit TEXT NOT NULL DEFAULT '',
            t REAL                             -- interval start, s; NULL: the run's summary
        )""",
        "CREATE INDEX samples_by_run ON samples(run_id)",
        "CREATE INDEX runs_by_experiment ON runs(experiment_id)",
        "CREATE INDEX experiments_by_name ON experiments(name, started)",
    ),
    # v2: a label per sample (parallel iperf3 streams, fping targets).
    ("ALTER TABLE samples ADD COLUMN stream TEXT",),
    # v3: text results beside the samples (a command's stdout).
    (
        """CREATE TABLE outputs (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            measurement TEXT NOT NULL,
            name TEXT NOT NULL,                -- e.g. 'stdout'
            text TEXT NOT NULL
        )""",
        "CREATE INDEX outputs_by_run ON outputs(run_id)",
    ),
    # v4: the host a run ran on and its facts (netrig run --cluster); NULL: this host.
    (
        "ALTER TABLE runs ADD COLUMN host TEXT",
        "ALTER TABLE runs ADD COLUMN host_facts TEXT",  # JSON object
    ),
    # v5: the process running an experiment (see results/owner.py), so a 'running' one
    # whose process died reads as interrupted.
    ("ALTER TABLE experiments ADD COLUMN owner TEXT",),
    # v6: which measurements of a failed run failed (JSON list); NULL: the whole run (its
    # lab, an event), or a run stored before v6.
    ("ALTER TABLE runs ADD COLUMN failed_measurements TEXT",),
    # v7: each measurement's plugin by its name (JSON object), so a named one (`name:
    # ping-baseline` on an iperf3) shows its plugin's metrics; NULL: stored before v7.
    ("ALTER TABLE experiments ADD COLUMN measurements TEXT",),
)
SCHEMA_VERSION = len(MIGRATIONS)
# A file not writable by its reader cannot be migrated: from this version on, the later
# migrations only add columns that may be NULL, and NULL_COLUMNS[i] reads a version-i file
# as if it had them (one entry per migration from READABLE_AS_IS on).
READABLE_AS_IS = 5
NULL_COLUMNS: tuple[tuple[str, ...], ...] = (
    (), (), (), (), (),
    ("CREATE TEMP VIEW runs AS SELECT *, NULL AS failed_measurements FROM main.runs",),
    ("CREATE TEMP VIEW experiments AS SELECT *, NULL AS measurements FROM main.experiments",),
)
assert len(NULL_COLUMNS) == SCHEMA_VERSION, "a new migration needs its NULL_COLUMNS entry"

# Columns every tidy row has; sweep parameters go between RUN_COLUMNS and SAMPLE_COLUMNS.
RUN_COLUMNS: tuple[str, ...] = (
    "experiment", "experiment_id", "run", "repetition", "status", "reason",
)
SAMPLE_COLUMNS: tuple[str, ...] = ("measurement", "metric", "stream", "value", "unit", "t")
EXPORT_FORMAT_VERSION = 1


class StoreError(Exception):
    """The database cannot be used as asked (newer schema, unknown experiment, bad input)."""


class NotAStore(StoreError):
    """The file is not a netrig results database netrig can open: not SQLite, another
    program's SQLite, or a newer schema. Bad input (the command line names it), not a
    failure of the store."""


V1_TABLES = frozenset({"experiments", "runs", "samples"})  # what migration 0 makes


@dataclass(frozen=True)
class ExperimentRecord:
    """One `netrig run` of one experiment file, with the facts of the host it ran on."""

    id: int
    name: str
    file_text: str
    file_hash: str
    started: datetime
    ended: datetime | None
    status: str
    host_facts: dict[str, Any]
    measurements: dict[str, str] = field(default_factory=dict)  # name → plugin (v7 on)


@dataclass(frozen=True)
class Run:
    """One sweep point × repetition; `reason` and `stderr` explain a failed run."""

    id: int
    experiment_id: int
    point: dict[str, Any]
    repetition: int
    status: str
    reason: str | None
    stderr: str | None
    started: datetime | None
    ended: datetime | None
    duration: float | None
    host: str | None = None  # the cluster host it ran on (None: where the experiment ran)
    # a failed run whose failure was these measurements' alone; None: the whole run failed
    failed_measurements: tuple[str, ...] | None = None

    def counts_for(self, measurement: str) -> bool:
        """Whether this run's values of `measurement` are results (see `counts`)."""
        return counts(self.status, self.failed_measurements, measurement)

    def failed_for(self, measurement: str) -> bool:
        """A failed run that has no result for `measurement`."""
        return self.status == "failed" and not self.counts_for(measurement)


def counts(status: str, failed: Sequence[str] | None, measurement: str) -> bool:
    """Whether a run's values of `measurement` are results: an ok run's, or a failed run's
    where other measurements failed (`failed`; None: the whole run): a diagnostic
    command's exit code does not void the iperf3 numbers measured beside it."""
    if status == "ok":
        return True
    return status == "failed" and failed is not None and measurement not in failed


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise StoreError(f"timestamp {moment!r} has no time zone; use datetime.now(UTC)")
    return moment.astimezone(UTC).isoformat()


def _from_iso(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _now() -> datetime:
    return datetime.now(UTC)


def _open_error(path: str, exc: sqlite3.Error) -> StoreError:
    if "not a database" in str(exc) or "malformed" in str(exc):
        return NotAStore(f"{path}: not a netrig results database ({exc})")
    return StoreError(f"{path}: cannot open: {exc}")


def _refuse_foreign(db: sqlite3.Connection, path: str) -> None:
    """Raise NotAStore for another program's SQLite file, before anything is written to it
    (the WAL switch or netrig's tables): an empty file at version 0 is new, a netrig
    database at version >= 1 has at least the tables its first migration made."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    tables = {
        row[0]
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if (version == 0 and tables) or (version > 0 and not tables >= V1_TABLES):
        shown = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        raise NotAStore(
            f"{path}: not a netrig results database (another program's SQLite file: "
            f"{f'tables {shown}' if tables else 'no tables'}, user_version {version}); "
            "netrig writes its results into a file of its own: choose another --db"
        )


class ResultStore:
    """The results database at `path`, created and migrated to SCHEMA_VERSION on open."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        # Another user's database (readable, not writable: `netrig stat` as any user) is
        # opened read-only: no WAL switch, no migration, no -wal/-shm files left behind.
        self.readonly = self.path != ":memory:" and not writable_sqlite(self.path)
        if self.path != ":memory:" and not self.readonly:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a transaction is
            # exactly what _transaction() encloses and nothing commits behind our back.
            self._db = (
                connect_readonly(self.path)
                if self.readonly
                else sqlite3.connect(self.path, isolation_level=None, timeout=10.0)
            )
        except sqlite3.Error as exc:
            raise _open_error(self.path, exc) from None
        self._db.row_factory = sqlite3.Row
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            _refuse_foreign(self._db, self.path)
            if not self.readonly:
                self._db.execute("PRAGMA journal_mode = WAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:  # not a SQLite file, or a damaged one
            self._db.close()
            raise _open_error(self.path, exc) from None
        except BaseException:
            self._db.close()
            raise
        track(self, self._db)

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; the store is unusable afterwards."""
        self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so two writers queue instead of failing
        # half-way; BaseException so Ctrl-C also rolls back.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        if self.schema_version > SCHEMA_VERSION:
            raise NotAStore(
                f"{self.path}: results schema v{self.schema_version} is newer than this "
                f"netrig understands (v{SCHEMA_VERSION}); upgrade netrig"
            )
        if self.readonly and self.schema_version >= READABLE_AS_IS:
            # a newer schema's columns that an older file lacks read as NULL, through
            # views of this connection only (TEMP names come before the file's)
            for version in range(self.schema_version, SCHEMA_VERSION):
                for statement in NULL_COLUMNS[version]:
                    self._db.execute(statement)
            return
        if self.readonly and self.schema_version < SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: results schema v{self.schema_version} is older than this netrig's"
                f" (v{SCHEMA_VERSION}) and the file is not writable by you; open it once as"
                " its owner (e.g. `netrig results list`) to upgrade it"
            )
        while self.schema_version < SCHEMA_VERSION:
            with self._transaction() as db:
                # Read again under the lock: another process may have migrated meanwhile.
                version = int(db.execute("PRAGMA user_version").fetchone()[0])
                if version >= SCHEMA_VERSION:
                    break
                for statement in MIGRATIONS[version]:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {version + 1}")

    # -- writing ----------------------------------------------------------------------------

    def begin_experiment(
        self,
        name: str,
        file_text: str,
        host_facts: Mapping[str, Any],
        measurements: Mapping[str, str] | None = None,
    ) -> int:
        """Record the start of an experiment (status 'running') and return its id;
        `measurements`: each measurement's plugin by its name."""
        file_hash = hashlib.sha256(file_text.encode()).hexdigest()
        facts = json.dumps(dict(host_facts), sort_keys=True)
        kinds = None if measurements is None else json.dumps(dict(measurements), sort_keys=True)
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO experiments (name, file_text, file_hash, started, host_facts, owner,"
                " measurements) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, file_text, file_hash, _iso(_now()), facts, current_owner(), kinds),
            )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def record_run(
        self,
        experiment_id: int,
        point: Mapping[str, Any],
        repetition: int,
        status: RunStatus,
        samples: Mapping[str, Iterable[Sample]] | None = None,
        reason: str | None = None,
        stderr: str | None = None,
        *,
        started: datetime | None = None,
        ended: datetime | None = None,
        outputs: Mapping[str, Mapping[str, str]] | None = None,
        host: str | None = None,
        host_facts: Mapping[str, Any] | None = None,
        failed_measurements: Iterable[str] | None = None,
    ) -> int:
        """Store one run and its samples (measurement name → samples) in one transaction.

        `outputs` holds text results (measurement name → {output name: text}), such as a
        command's stdout; `host` and `host_facts` the cluster host the run ran on (netrig
        run --cluster); `failed_measurements` those that failed in a failed run, when the
        failure was theirs alone (None: the whole run failed). Either all of it is in the
        database afterwards or, on any exception, none of it.
        """
        if status not in RUN_STATUSES:
            raise StoreError(f"run status must be one of {RUN_STATUSES}, not {status!r}")
        if not all(isinstance(key, str) for key in point):
            raise StoreError(f"sweep point keys must be strings: {dict(point)!r}")
        try:
            point_text = json.dumps(dict(point))
        except (TypeError, ValueError) as error:
            raise StoreError(f"sweep point {dict(point)!r} is not JSON: {error}") from None
        duration = (ended - started).total_seconds() if started and ended else None
        failed_text = (
            json.dumps(sorted(set(failed_measurements)))
            if status == "failed" and failed_measurements
            else None
        )

        def sample_rows(run_id: int) -> Iterator[tuple[Any, ...]]:
            for measurement, items in (samples or {}).items():
                for sample in items:
                    if not isinstance(sample, Sample):
                        raise StoreError(f"{measurement}: not a Sample: {sample!r}")
                    yield (run_id, measurement, sample.metric, sample.value, sample.unit,
                           sample.t, sample.stream)

        if not self._db.execute(
            "SELECT 1 FROM experiments WHERE id = ?", (experiment_id,)
        ).fetchone():
            raise StoreError(f"no experiment with id {experiment_id}")
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO runs (experiment_id, point, repetition, status, reason, stderr,"
                " started, ended, duration, host, host_facts, failed_measurements)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (experiment_id, point_text, repetition, status, reason, stderr,
                 _iso(started), _iso(ended), duration, host,
                 None if host_facts is None else json.dumps(dict(host_facts), sort_keys=True),
                 failed_text),
            )
            run_id = cursor.lastrowid
            assert run_id is not None
            db.executemany(
                "INSERT INTO samples (run_id, measurement, metric, value, unit, t, stream)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                sample_rows(run_id),
            )
            db.executemany(
                "INSERT INTO outputs (run_id, measurement, name, text) VALUES (?, ?, ?, ?)",
                [(run_id, measurement, name, str(text))
                 for measurement, texts in (outputs or {}).items()
                 for name, text in texts.items()],
            )
        return run_id

    def owned_by(self, pid: int, starttime: int | None) -> bool:
        """An experiment here is (or was last) run by that process of this boot: a lab it
        built and left (kill -9 of `netrig run`) is a run's, not one a user brought up."""
        owner = owner_of(pid, starttime)
        row = self._db.execute("SELECT 1 FROM experiments WHERE owner = ? LIMIT 1", (owner,))
        return row.fetchone() is not None

    def resume_experiment(self, experiment_id: int) -> None:
        """This process continues the experiment (`--resume`): running again, owned by it."""
        with self._transaction() as db:
            db.execute(
                "UPDATE experiments SET status = 'running', ended = NULL, owner = ? WHERE id = ?",
                (current_owner(), experiment_id),
            )

    def finish_experiment(self, experiment_id: int, status: ExperimentStatus) -> None:
        """Mark an experiment as ended with `status` ('ok', 'failed' or 'interrupted')."""
        if status not in EXPERIMENT_STATUSES or status == "running":
            raise StoreError(
                f"an experiment ends as 'ok', 'failed' or 'interrupted', not {status!r}"
            )
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE experiments SET status = ?, ended = ? WHERE id = ?",
                (status, _iso(_now()), experiment_id),
            )
        if cursor.rowcount != 1:
            raise StoreError(f"no experiment with id {experiment_id}")

    # -- reading ----------------------------------------------------------------------------

    @staticmethod
    def _experiment(row: sqlite3.Row) -> ExperimentRecord:
        status = row["status"]
        if status == "running" and owner_alive(row["owner"]) is False:
            status = "interrupted"  # its process died without saying so (kill -9, crash)
        return ExperimentRecord(
            id=row["id"], name=row["name"], file_text=row["file_text"],
            file_hash=row["file_hash"], started=datetime.fromisoformat(row["started"]),
            ended=_from_iso(row["ended"]), status=status,
            host_facts=json.loads(row["host_facts"]),
            measurements=json.loads(row["measurements"] or "{}"),
        )

    @staticmethod
    def _run(row: sqlite3.Row) -> Run:
        return Run(
            id=row["id"], experiment_id=row["experiment_id"], point=json.loads(row["point"]),
            repetition=row["repetition"], status=row["status"], reason=row["reason"],
            stderr=row["stderr"], started=_from_iso(row["started"]),
            ended=_from_iso(row["ended"]), duration=row["duration"], host=row["host"],
            failed_measurements=(
                None if row["failed_measurements"] is None
                else tuple(json.loads(row["failed_measurements"]))
            ),
        )

    def experiments(self) -> list[ExperimentRecord]:
        """All experiments, oldest first."""
        rows = self._db.execute("SELECT * FROM experiments ORDER BY id").fetchall()
        return [self._experiment(row) for row in rows]

    def experiment(self, experiment_id: int) -> ExperimentRecord:
        """The experiment with this id; StoreError if there is none."""
        row = self._db.execute(
            "SELECT * FROM experiments WHERE id = ?", (experiment_id,)
        ).fetchone()
        if row is None:
            raise StoreError(f"no experiment with id {experiment_id}")
        return self._experiment(row)

    def find_experiment(self, id_or_name: int | str) -> ExperimentRecord | None:
        """An experiment by id, or the newest one of that name.

        A string of digits is tried as an id first, then as a name; None if nothing matches.
        """
        if isinstance(id_or_name, int) or id_or_name.isdigit():
            wanted = int(id_or_name)
            row = (
                self._db.execute("SELECT * FROM experiments WHERE id = ?", (wanted,)).fetchone()
                if _is_rowid(wanted)
                else None
            )
            if row is not None or isinstance(id_or_name, int):
                return None if row is None else self._experiment(row)
        row = self._db.execute(
            "SELECT * FROM experiments WHERE name = ? ORDER BY started DESC, id DESC LIMIT 1",
            (id_or_name,),
        ).fetchone()
        return None if row is None else self._experiment(row)

    def runs(self, experiment_id: int) -> list[Run]:
        """The runs of an experiment in the order they were recorded."""
        rows = self._db.execute(
            "SELECT * FROM runs WHERE experiment_id = ? ORDER BY id", (experiment_id,)
        ).fetchall()
        return [self._run(row) for row in rows]

    def hosts_facts(self, experiment_id: int) -> dict[str, dict[str, Any]]:
        """The facts of each cluster host the experiment's runs ran on (netrig run
        --cluster), by host name; empty for an experiment run on one host."""
        rows = self._db.execute(
            "SELECT host, host_facts FROM runs WHERE experiment_id = ? AND host IS NOT NULL"
            " ORDER BY id",
            (experiment_id,),
        ).fetchall()
        found: dict[str, dict[str, Any]] = {}
        for row in rows:
            facts = json.loads(row["host_facts"] or "{}")
            names = row["host"].split("+")  # a run of a lab spread over hosts: each host's
            per = facts if len(names) > 1 and set(facts) == set(names) else {row["host"]: facts}
            for host, known in per.items():
                if host not in found or not found[host]:
                    found[host] = known
        return found

    def run(self, run_id: int) -> Run:
        """One run by id; StoreError if there is none."""
        row = (
            self._db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if _is_rowid(run_id)
            else None
        )
        if row is None:
            raise StoreError(f"no run with id {run_id}")
        return self._run(row)

    def samples(self, run_id: int) -> list[tuple[str, Sample]]:
        """(measurement name, sample) pairs of one run, in the order they were recorded."""
        rows = self._db.execute(
            "SELECT measurement, metric, value, unit, t, stream FROM samples"
            " WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        ).fetchall()
        return [
            (row["measurement"],
             Sample(row["metric"], row["value"], row["unit"], row["t"], row["stream"]))
            for row in rows
        ]

    def outputs(self, run_id: int) -> list[tuple[str, str, str]]:
        """(measurement, output name, text) of one run, in the order they were recorded."""
        rows = self._db.execute(
            "SELECT measurement, name, text FROM outputs WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        ).fetchall()
        return [(row["measurement"], row["name"], row["text"]) for row in rows]

    def completed_points(
        self, experiment_id: int, statuses: Iterable[str] = ("ok", "failed")
    ) -> set[tuple[str, int]]:
        """(point_key(point), repetition) of the runs that need not run again on --resume.

        A failed run is a result, so it counts as done; an interrupted one does not.
        """
        wanted = tuple(statuses)
        marks = ", ".join("?" for _ in wanted)
        rows = self._db.execute(
            f"SELECT point, repetition FROM runs WHERE experiment_id = ? AND status IN ({marks})",
            (experiment_id, *wanted),
        ).fetchall()
        return {(point_key(json.loads(row["point"])), row["repetition"]) for row in rows}

    # -- tidy export --------------------------------------------------------------------------

    def _tidy(self, experiment_id: int | None) -> tuple[list[str], list[dict[str, Any]]]:
        where, args = ("", ()) if experiment_id is None else ("WHERE e.id = ?", (experiment_id,))
        # LEFT JOIN: a run without samples (typically a failed one) still gives one row.
        rows = self._db.execute(
            "SELECT e.name AS experiment, e.id AS experiment_id, r.id AS run, r.repetition,"
            " r.status, r.reason, r.host, r.point, r.failed_measurements, s.measurement, s.metric,"
            " s.stream, s.value, s.unit, s.t FROM runs r JOIN experiments e"
            " ON e.id = r.experiment_id"
            f" LEFT JOIN samples s ON s.run_id = r.id {where}"
            " ORDER BY e.id, r.id, s.rowid",
            args,
        ).fetchall()
        # a `host` column when some run ran on a cluster host (netrig run --cluster)
        run_columns = (*RUN_COLUMNS, "host") if any(r["host"] for r in rows) else RUN_COLUMNS
        # a `counts` column when a run failed by some of its measurements only: whether
        # the row's value is a result (stat and the summary count it) or not
        partial = any(r["failed_measurements"] for r in rows)
        if partial:
            run_columns = (*run_columns, "counts")
        fixed = set(run_columns) | set(SAMPLE_COLUMNS)
        params: dict[str, str] = {}  # sweep parameter → its column, in order of appearance
        tidy: list[dict[str, Any]] = []
        for row in rows:
            point = json.loads(row["point"])
            for name in point:
                # A parameter named like a fixed column (say `metric`) gets a prefix.
                params.setdefault(name, f"vary_{name}" if name in fixed else name)
            record = {column: row[column] for column in run_columns if column != "counts"}
            if partial:
                failed = json.loads(row["failed_measurements"] or "null")
                record["counts"] = row["measurement"] is not None and counts(
                    row["status"], failed, row["measurement"]
                )
            record.update({params[name]: value for name, value in point.items()})
            record.update({column: row[column] for column in SAMPLE_COLUMNS})
            tidy.append(record)
        columns = [*run_columns, *params.values(), *SAMPLE_COLUMNS]
        return columns, [{column: record.get(column) for column in columns} for record in tidy]

    def tidy_rows(self, experiment_id: int | None = None) -> list[dict[str, Any]]:
        """One dict per sample (one per sample-less run), with a key per sweep parameter.

        Ready for pandas or gnuplot; `t` is None for a run's summary values, and a failed
        run shows its status and reason with `value` None.
        """
        return self._tidy(experiment_id)[1]

    def export_csv(self, fileobj: IO[str], experiment_id: int | None = None) -> int:
        """Write the tidy rows as CSV (empty cell for None); return the number of rows."""
        columns, rows = self._tidy(experiment_id)
        writer = csv.DictWriter(fileobj, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _csv_cell(value) for key, value in row.items()})
        return len(rows)

    def export_json(self, fileobj: IO[str], experiment_id: int | None = None) -> int:
        """Write the tidy rows as self-describing JSON; return the number of rows.

        The document names its format and version, and carries each experiment's file and
        host facts, so an exported file can be understood without the database.
        """
        columns, rows = self._tidy(experiment_id)
        chosen = (
            self.experiments() if experiment_id is None else [self.experiment(experiment_id)]
        )
        document = {
            "format": "netrig-results",
            "format_version": EXPORT_FORMAT_VERSION,
            "schema_version": SCHEMA_VERSION,
            "experiments": [
                {
                    "id": e.id, "name": e.name, "status": e.status,
                    "started": _iso(e.started), "ended": _iso(e.ended),
                    "file_hash": e.file_hash, "file_text": e.file_text,
                    "host_facts": e.host_facts, "measurements": e.measurements,
                }
                for e in chosen
            ],
            "columns": columns,
            "rows": rows,
        }
        json.dump(document, fileobj, indent=1)
        fileobj.write("\n")
        return len(rows)

    def to_dataframe(self, experiment_id: int | None = None) -> Any:
        """The tidy rows as a pandas DataFrame (pandas is optional, imported only here)."""
        try:
            import pandas
        except ImportError as error:
            raise ImportError(
                "to_dataframe needs pandas (pip install pandas); tidy_rows() gives the same"
                " rows as dicts"
            ) from error
        columns, rows = self._tidy(experiment_id)
        return pandas.DataFrame(rows, columns=columns)


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value)
    if isinstance(value, bool):  # as the file writes it (and a filter takes it): true
        return render(value)
    return value


def _is_rowid(value: int) -> bool:
    """Can SQLite hold this id (a 64-bit signed integer)? A bigger one names nothing."""
    return -(2**63) <= value < 2**63
