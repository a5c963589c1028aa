"""As a real unprivileged user: commands that need root say so in one line (exit 2) before
touching anything; the others (validate, stat, compare, plot, report, results, status,
run --dry-run, doctor) work."""

from __future__ import annotations

import json
import os
import pwd
import sqlite3
from pathlib import Path

import pytest

from netrig.base.sample import Sample
from netrig.lab import netns
from netrig.lab.ledger import Ledger
from netrig.results.store import MIGRATIONS, READABLE_AS_IS, SCHEMA_VERSION, ResultStore
from tests.conftest import new_lab_name, requires_root
from tests.unprivileged import as_nobody, nobody_dir

__all__ = ["nobody_dir"]  # the fixture, imported for the tests here

pytestmark = requires_root  # root builds the lab and the store that nobody then meets


def _one_line_needs_root(result, command: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == 2, (command, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"netrig {command} needs root" in lines[0], result.stderr


def test_commands_that_need_root_refuse_before_touching_anything(
    make_lab, nobody_dir: Path
) -> None:
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3}})
    other = new_lab_name()
    (nobody_dir / "lab.yaml").write_text(f"name: {other}\ntopology: {{kind: pair}}\n")
    (nobody_dir / "exp.yaml").write_text(
        f"name: {other}\ntopology: {{kind: pair}}\nmeasure:\n  - ping: {{src: n1, dst: n2}}\n"
    )
    commands = {
        "up": ["up", "lab.yaml"],
        "run": ["run", "exp.yaml", "--db", "r.db"],
        "down": ["down", lab.name],
        "clean": ["clean", "--force", lab.name],
        "exec": ["exec", lab.name, "n1", "--", "true"],
        "shell": ["shell", lab.name, "n1"],
        "trace": ["trace", lab.name, "n1", "n3"],
        "link": ["link", lab.name, "n1", "n2", "down"],
        "node": ["node", lab.name, "n2", "stop"],
        "logs": ["logs", lab.name, "n1"],
    }
    for command, args in commands.items():
        _one_line_needs_root(as_nobody(*args, cwd=nobody_dir), command)
    # nothing touched: the lab is whole and up, the other lab never began, no database
    assert sorted(n.ns for n in lab.plan.nodes.values()) == sorted(
        ns for ns in netns.list_names() if ns.startswith(lab.name + "-")
    )
    ledger = Ledger()
    try:
        record = ledger.lab(lab.name)
        assert record is not None and record.state == "up"
        assert other not in ledger.all_lab_names()
    finally:
        ledger.close()
    assert not (nobody_dir / "r.db").exists()
    assert lab.exec("n1", ["ping", "-c1", "-W2", lab.addr("n3")]).returncode == 0


def test_without_a_ledger_nobody_gets_the_same_line_and_status_says_no_labs(
    nobody_dir: Path,
) -> None:
    """A fresh host (no /run/netrig yet, and nobody may not make it): no sqlite or
    permission traceback from opening the ledger."""
    (nobody_dir / "lab.yaml").write_text("name: fresh\ntopology: {kind: pair}\n")
    env = {"NETRIG_STATE_DIR": "/run/netrig-never-made"}
    _one_line_needs_root(as_nobody("up", "lab.yaml", cwd=nobody_dir, env=env), "up")
    _one_line_needs_root(as_nobody("down", "fresh", cwd=nobody_dir, env=env), "down")
    status = as_nobody("status", cwd=nobody_dir, env=env)
    assert status.returncode == 0 and "no labs are up" in status.stdout, status.stderr
    assert not os.path.exists("/run/netrig-never-made")


@pytest.fixture(params=["shared-folder", "root-folder"])
def stored(nobody_dir: Path, request: pytest.FixtureRequest) -> Path:
    """A results database root wrote (read-only for nobody), two experiments: in a folder
    nobody may write, or in root's own (where nobody cannot add a -wal or -shm file)."""
    folder = nobody_dir if request.param == "shared-folder" else nobody_dir / "root-only"
    folder.mkdir(mode=0o755, exist_ok=True)
    db = folder / "root.db"
    with ResultStore(db) as store:
        for name, rates in (("before", [9.1, 9.3, 9.2, 9.0]), ("after", [8.1, 8.2, 8.0, 8.3])):
            eid = store.begin_experiment(name, f"name: {name}\n", {"kernel": "x"})
            for rep, rate in enumerate(rates):
                samples = {"iperf3": [Sample("throughput", rate * 1e9, "bit/s")]}
                store.record_run(eid, {}, rep, "ok", samples)
            store.finish_experiment(eid, "ok")
    db.chmod(0o644)
    return db


def test_commands_without_root_work_as_any_user(
    make_lab, nobody_dir: Path, stored: Path
) -> None:
    lab = make_lab({"topology": {"kind": "pair"}})
    (nobody_dir / "lab.yaml").write_text("name: anyuser\ntopology: {kind: ring, nodes: 5}\n")
    (nobody_dir / "exp.yaml").write_text(
        "name: anyuser\ntopology: {kind: pair}\nmeasure:\n  - ping: {src: n1, dst: n2}\n"
    )
    (nobody_dir / "a.txt").write_text("1\n2\n3\n4\n")
    (nobody_dir / "b.txt").write_text("5\n6\n7\n8\n")
    db = str(stored)

    def ok(*args: str) -> str:
        result = as_nobody(*args, cwd=nobody_dir)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        return result.stdout

    assert "ok lab.yaml" in ok("validate", "lab.yaml")
    assert "1 run, 1 lab build" in ok("run", "exp.yaml", "--dry-run", "--repeat", "1")
    assert lab.name in ok("status")
    assert "Difference at 95.0% confidence" in ok("stat", "a.txt", "b.txt")
    assert "before" in ok("results", "list", "--db", db)
    assert "throughput" in ok("results", "show", "after", "--db", db)
    rows = json.loads(ok("results", "export", "--format", "json", "--db", db))
    assert rows  # parsed; its content is compared with the store in tests/results
    assert "throughput" in ok("compare", "before", "after", "--db", db)
    ok("plot", "after", "--kind", "box", "--y", "throughput", "-o", "p.png", "--db", db)
    assert (nobody_dir / "p.png").stat().st_size > 1000
    # nobody's home is /nonexistent: matplotlib had warned at every plot and report
    quiet = as_nobody("plot", "after", "--kind", "box", "--y", "throughput", "-o", "q.png",
                      "--db", db, cwd=nobody_dir,
                      env={"HOME": "/nonexistent", "MPLCONFIGDIR": "", "TMPDIR": str(nobody_dir)})  # fmt: skip
    assert quiet.returncode == 0 and "Matplotlib" not in quiet.stderr, quiet.stderr
    ok("report", "after", "-o", "r.html", "--db", db)
    assert "<html" in (nobody_dir / "r.html").read_text().lower()
    # nobody read the store without changing it, and left no file of its own beside it
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (8,)
    nobody_uid = pwd.getpwnam("nobody").pw_uid
    left = [p.name for p in stored.parent.iterdir() if p.stat().st_uid == nobody_uid]
    assert not [name for name in left if name.startswith("root.db")], left


def test_status_as_nobody_reads_roots_ledger_in_roots_folder(nobody_dir: Path) -> None:
    """A quiet host: root's ledger has no -wal/-shm beside it, in a folder only root may
    write; `netrig status` as anyone reads it as it is."""
    state = nobody_dir / "state"
    state.mkdir(mode=0o755)
    ledger = Ledger(str(state))
    ledger.begin_lab("quietlab", 3, None)
    ledger.close()
    assert sorted(os.listdir(state)) == ["ledger.sqlite"]
    result = as_nobody("status", cwd=nobody_dir, env={"NETRIG_STATE_DIR": str(state)})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "quietlab" in result.stdout
    assert sorted(os.listdir(state)) == ["ledger.sqlite"]


def test_not_a_database_is_one_line_not_a_traceback(nobody_dir: Path) -> None:
    (nobody_dir / "lab.yaml").write_text("name: x\ntopology: {kind: pair}\n")
    result = as_nobody("results", "list", "--db", "lab.yaml", cwd=nobody_dir)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "not a netrig results database" in result.stderr
    # every command that reads --db says the same, with the same exit code (bad input)
    for command in (
        ["compare", "1", "2"],
        ["stat", "--experiment", "1"],
        ["plot", "1", "-o", "p.png"],
        ["report", "1", "-o", "r.html"],
    ):
        result = as_nobody(*command, "--db", "lab.yaml", cwd=nobody_dir)
        assert result.returncode == 2, (command, result.stderr)
        assert "not a netrig results database" in result.stderr, command
    assert not (nobody_dir / "r.html").exists() and not (nobody_dir / "p.png").exists()


def test_an_older_store_nobody_may_not_upgrade_fails_alike_everywhere(
    nobody_dir: Path, stored: Path
) -> None:
    """A netrig database one schema behind, read-only for nobody: every command that reads
    --db says how to upgrade it, with one exit code (1: a failure, not bad input), and the
    file stays as it was."""
    with sqlite3.connect(stored) as conn:
        conn.execute(f"PRAGMA user_version = {READABLE_AS_IS - 1}")  # older than readable
    before = stored.read_bytes()
    for command in (
        ["results", "list"],
        ["compare", "before", "after"],
        ["stat", "--experiment", "after"],
        ["plot", "after", "-o", "p.png"],
        ["report", "after", "-o", "r.html"],
    ):
        result = as_nobody(*command, "--db", str(stored), cwd=nobody_dir)
        assert result.returncode == 1 and "Traceback" not in result.stderr, (command, result)
        assert f"is older than this netrig's (v{SCHEMA_VERSION})" in result.stderr, command
    assert stored.read_bytes() == before


def test_a_store_of_the_last_schemas_reads_for_anyone_without_upgrading(
    nobody_dir: Path,
) -> None:
    """A v5 file (before runs.failed_measurements and experiments.measurements), read-only
    for nobody: read as it is, the new columns as NULL (it had been refused until its owner
    opened it once), and left as it was."""
    db = nobody_dir / "v5.db"
    conn = sqlite3.connect(db)
    for statements in MIGRATIONS[:READABLE_AS_IS]:
        for statement in statements:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {READABLE_AS_IS}")
    conn.execute("INSERT INTO experiments (name, file_text, file_hash, started, status)"
                 " VALUES ('old', 'name: old\n', 'x', '2026-11-01T00:00:00+00:00', 'ok')")
    for rep, rate in enumerate([9.1, 9.3, 9.2]):
        run = conn.execute("INSERT INTO runs (experiment_id, repetition, status)"
                           " VALUES (1, ?, 'ok')", (rep,)).lastrowid  # fmt: skip
        conn.execute("INSERT INTO samples (run_id, measurement, metric, value, unit)"
                     " VALUES (?, 'iperf3', 'throughput', ?, 'bit/s')", (run, rate * 1e9))
    conn.commit()
    conn.close()
    db.chmod(0o644)
    before = db.read_bytes()
    listed = as_nobody("results", "list", "--db", str(db), cwd=nobody_dir)
    assert listed.returncode == 0 and "old" in listed.stdout, listed.stderr
    stat = as_nobody("stat", "--experiment", "old", "--db", str(db), cwd=nobody_dir)
    assert stat.returncode == 0 and "x   3" in stat.stdout, stat.stdout + stat.stderr
    assert db.read_bytes() == before


def test_doctor_as_nobody_reports_root_missing_without_a_traceback(nobody_dir: Path) -> None:
    result = as_nobody("doctor", "--json", "--only", "root", cwd=nobody_dir)
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    assert doc["ok"] is False
    assert doc["tools"]["root"]["found"] is False and "root" in doc["tools"]["root"]["fix"]


def test_doctor_as_nobody_tries_no_feature_and_says_to_run_it_as_root(nobody_dir: Path) -> None:
    """As nobody, every kernel feature had been tried and said EPERM (34 rows), and the
    summary read "CORE MISSING … no labs possible" of a host that can build labs."""
    table = as_nobody("doctor", cwd=nobody_dir)
    assert table.returncode == 1 and "Traceback" not in table.stderr, table.stderr
    assert "EPERM" not in table.stdout and "CORE MISSING" not in table.stdout
    assert "not root:" in table.stdout and "NOT ROOT: labs need root" in table.stdout
    assert "`sudo netrig doctor` tries them" in table.stdout
    assert "Tools, Python packages, privileges" in table.stdout  # tools are still checked
    doc = json.loads(as_nobody("doctor", "--json", "--only", "veth,iperf3", cwd=nobody_dir).stdout)
    assert doc["root"] is False and doc["features"] == {} and doc["features_not_tried"] == ["veth"]
    assert doc["tools"]["iperf3"]["found"] is True
