"""`netrig run` end to end: real namespaces, real iperf3, a real results database."""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from netrig.experiment.runner import run_experiment
from netrig.lab import netns
from netrig.lab.build import LabError
from netrig.model.load import SpecError
from netrig.results.store import ResultStore
from netrig.rig.prepare import load_experiment, load_experiment_text
from tests.conftest import netrig_cli, new_lab_name, requires_root, requires_tool
from tests.processes import on_terminal, signalled_inside

pytestmark = [requires_root, pytest.mark.root]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VETH_CEILING = 200e9


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def namespaces_of(name: str) -> list[str]:
    return [ns for ns in netns.list_names() if ns.startswith(name + "-")]


def throughputs(store: ResultStore, experiment_id: int) -> list[float]:
    return [
        s.value
        for run in store.runs(experiment_id)
        for m, s in store.samples(run.id)
        if s.metric == "throughput" and s.t is None and s.stream is None
    ]


@requires_tool("iperf3")
def test_chain_sweep_of_two_values_twice_stores_four_plausible_runs_in_one_lab(
    tmp_path: Path, lab_name: str
) -> None:
    path = write(
        tmp_path,
        "chain",
        f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 3}}
        measure:
          - iperf3: {{client: n1, server: "n{{1 + hops}}", duration: 1}}
        vary: {{hops: [1, 2]}}
        repeat: 2
        """,
    )
    db = tmp_path / "results.db"
    with ResultStore(db) as store:
        outcome = run_experiment(load_experiment(path), store)
        runs = store.runs(outcome.experiment_id)
        assert outcome.status == "ok" and outcome.ok == 4 and outcome.labs_built == 1
        assert [(r.point, r.repetition, r.status) for r in runs] == [
            ({"hops": 1}, 1, "ok"),
            ({"hops": 1}, 2, "ok"),
            ({"hops": 2}, 1, "ok"),
            ({"hops": 2}, 2, "ok"),
        ]
        values = throughputs(store, outcome.experiment_id)
        assert len(values) == 4 and all(0 < v < VETH_CEILING for v in values)
        e = store.experiment(outcome.experiment_id)
        assert e.status == "ok" and e.file_text == Path(path).read_text()
        assert e.host_facts["tool_versions"]["iperf3"].startswith("iperf 3")
        stored = {
            (r.id, s.metric, s.t, s.stream): s.value for r in runs for _, s in store.samples(r.id)
        }
    assert namespaces_of(lab_name) == []

    # export CSV round-trips every value, with a column per sweep parameter
    out = netrig_cli("results", "export", lab_name, "--db", str(db), "--format", "csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert {
        "experiment",
        "run",
        "repetition",
        "status",
        "metric",
        "value",
        "unit",
        "t",
        "hops",
    } <= set(rows[0])
    assert len(rows) == len(stored)
    for row in rows:
        key = (
            int(row["run"]),
            row["metric"],
            float(row["t"]) if row["t"] else None,
            row["stream"] or None,
        )
        assert float(row["value"]) == stored[key]
        assert row["experiment"] == lab_name and row["status"] == "ok"
    assert {row["hops"] for row in rows} == {"1", "2"}


def test_a_changed_network_rebuilds_the_lab_and_stdout_is_kept(
    tmp_path: Path, lab_name: str
) -> None:
    exp = load_experiment_text(
        textwrap.dedent(f"""\
        name: {lab_name}
        topology: {{kind: pair}}
        link_defaults: {{mtu: "{{mtu}}"}}
        measure:
          - command: {{node: n1, cmd: "cat /sys/class/net/eth0/mtu"}}
        vary: {{mtu: [1500, 9000]}}
        repeat: 2
        order: interleaved
        warmup: 1
        cooldown: 0.2
        """),
        "mtu.yaml",
    )
    with ResultStore(tmp_path / "r.db") as store:
        started = time.monotonic()
        outcome = run_experiment(exp, store)
        elapsed = time.monotonic() - started
        runs = store.runs(outcome.experiment_id)
        assert outcome.ok == 4 and len(runs) == 4  # warm-ups ran but are not stored
        assert outcome.labs_built == 6  # interleaved: every run switches networks
        assert elapsed > 5 * 0.2  # a cooldown between each of the 6 runs
        for run in runs:
            (output,) = store.outputs(run.id)
            assert output[:2] == ("command", "stdout")
            assert int(output[2]) == run.point["mtu"]
    assert namespaces_of(lab_name) == []


@requires_tool("iperf3")
def test_an_unreachable_target_is_a_failed_run_with_the_reason(
    tmp_path: Path, lab_name: str
) -> None:
    path = write(
        tmp_path,
        "noroute",
        f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 3}}
        routing: {{protocol: none}}
        measure:
          - iperf3: {{client: n1, server: n3, duration: 1}}
        """,
    )
    db = tmp_path / "r.db"
    out = netrig_cli("run", path, "--db", str(db), "--quiet")
    assert out.returncode == 1, out.stderr
    assert "1 of 1 runs failed" in out.stderr
    with ResultStore(db) as store:
        (e,) = store.experiments()
        (run,) = store.runs(e.id)
        assert e.status == "failed" and run.status == "failed"
        assert "unable to connect" in (run.reason or "") and "unreachable" in (run.reason or "")
        assert throughputs(store, e.id) == []  # never a zero
        (row,) = store.tidy_rows(e.id)
        assert row["status"] == "failed" and row["value"] is None
    assert "failed" in out.stdout  # the summary counts it as failed
    assert namespaces_of(lab_name) == []


@requires_tool("iperf3")
def test_a_failing_command_fails_its_run_but_keeps_the_iperf3_numbers_beside_it(
    tmp_path: Path, lab_name: str
) -> None:
    """The run is failed (exit 1, the command named), yet its iperf3 throughput counts in
    the summary and in `stat`: the command's failure is its own."""
    path = write(
        tmp_path,
        "mixed",
        f"""\
        name: {lab_name}
        topology: {{kind: pair}}
        measure:
          - iperf3: {{client: n1, server: n2, duration: 1}}
          - command: {{node: n1, cmd: "exit 3"}}
        """,
    )
    db = str(tmp_path / "r.db")
    out = netrig_cli("run", path, "--db", db, "--quiet")
    assert out.returncode == 1, out.stderr
    with ResultStore(db) as store:
        (e,) = store.experiments()
        (run,) = store.runs(e.id)
        assert run.status == "failed" and run.failed_measurements == ("command",)
        assert "command" in (run.reason or "") and "3" in (run.reason or "")
        (value,) = throughputs(store, e.id)
        assert 1e8 < value < VETH_CEILING
    stat = netrig_cli("stat", "--db", db, "--experiment", lab_name, "--metric", "throughput")
    assert "all runs: 1 value(s)" in stat.stdout, stat.stdout  # not "no values"
    row = next(line for line in out.stdout.splitlines() if "throughput (" in line)
    n, *stats = row.split(")", 1)[1].split()  # N, then no failed count: median min max -
    assert n == "1" and len(stats) == 4, out.stdout
    shown = netrig_cli("results", "show", f"r{run.id}", "--db", db)
    assert "failed: command; iperf3 still count" in shown.stdout, shown.stdout
    assert namespaces_of(lab_name) == []


def test_ctrl_c_while_run_builds_its_lab_stops_at_once(tmp_path: Path, lab_name: str) -> None:
    """`run` had heeded Ctrl-C only once the build was done (an exec line may take 120 s);
    now as `up` does: the partial lab removed, exit 130."""
    (tmp_path / "slow.clab.yml").write_text(
        f"name: {lab_name}\ntopology:\n  nodes:\n    a: {{kind: linux, exec: ['sleep 60']}}\n"
    )
    path = write(tmp_path, "slow", """\
        lab: slow.clab.yml
        measure:
          - command: {node: a, cmd: "true"}
        """)  # fmt: skip
    started = time.monotonic()
    done = signalled_inside("netrig.lab.programs", "run_line", ["run", path, "--db",
                            str(tmp_path / "r.db"), "-q"], signal.SIGINT)  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert time.monotonic() - started < 30, "waited for the exec line"
    assert namespaces_of(lab_name) == []


def test_a_server_that_does_not_exist_fails_validation_with_file_line(
    tmp_path: Path, lab_name: str
) -> None:
    path = write(
        tmp_path,
        "nosuch",
        f"""\
        name: {lab_name}
        topology: {{kind: ring, nodes: 4}}
        measure:
          - iperf3: {{client: n1, server: "n{{1 + hops}}", duration: 1}}
        vary: {{hops: [1, 4]}}
        """,
    )
    db = tmp_path / "never.db"
    out = netrig_cli("run", path, "--db", str(db))
    assert out.returncode == 2
    assert f"{path}:4:34: iperf3: unknown node 'n5'" in out.stderr and "(at hops=4)" in out.stderr
    assert not db.exists() and namespaces_of(lab_name) == []


def test_a_missing_tool_is_refused_before_anything_exists(
    tmp_path: Path, lab_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(
        SpecError, match="fping is not installed; install it with: apt-get install fping"
    ):
        load_experiment_text(
            f"name: {lab_name}\ntopology: {{kind: pair}}\nmeasure: [{{ping: {{all_pairs: true}}}}]\n"
        )
    assert namespaces_of(lab_name) == []


def stored_runs(db: Path) -> list[tuple[str, int]]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT status, repetition FROM runs ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []  # not created yet


@requires_tool("iperf3")
def test_sigint_stops_cleanly_keeps_finished_runs_and_resume_finishes(
    tmp_path: Path, lab_name: str
) -> None:
    path = write(
        tmp_path,
        "intr",
        f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 3}}
        measure:
          - iperf3: {{client: n1, server: n3, duration: 1}}
        vary: {{p: [1, 2]}}
        """,
    )
    db = tmp_path / "r.db"
    proc = subprocess.Popen(
        # a list value in --set: rich had read "[1,2]" in the printed hint as markup (its
        # `--set 'p='` then failed when pasted)
        [sys.executable, "-m", "netrig", "run", path, "--db", str(db), "-q", "--repeat", "2",
         "--set", "p=[1,2]"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not stored_runs(db) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(0.3)  # into the second run's measurement
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    hint = stderr.split("continue with: ", 1)[1].split("\n", 1)[0].strip()
    assert hint.startswith("netrig run ") and "--repeat 2" in hint, hint
    assert "--set 'p=[1,2]'" in hint, hint
    assert namespaces_of(lab_name) == []
    runs = stored_runs(db)
    assert [s for s, _ in runs] == ["ok", "interrupted"]
    with ResultStore(db) as store:
        assert store.experiments()[0].status == "interrupted"

    out = netrig_cli(*shlex.split(hint)[1:])  # the printed command, as a user pastes it
    assert out.returncode == 0, out.stderr
    assert "resuming" in out.stderr and "3 to go" in out.stderr
    with ResultStore(db) as store:
        (e,) = store.experiments()
        runs_ = store.runs(e.id)
        assert e.status == "ok"
        ok = sorted((r.point["p"], r.repetition) for r in runs_ if r.status == "ok")
        assert ok == [(1, 1), (1, 2), (2, 1), (2, 2)]
        assert len(throughputs(store, e.id)) == 4
    assert namespaces_of(lab_name) == []
    again = netrig_cli(*shlex.split(hint)[1:])
    assert again.returncode == 2 and "nothing to resume" in again.stderr


def test_a_run_killed_with_sigkill_leaves_a_lab_that_resume_removes_first(
    tmp_path: Path, lab_name: str
) -> None:
    """kill -9 of `netrig run` leaves its lab (nothing runs its clean-up); `--resume` had
    refused it as "already up". The lab's builder is gone and owned an experiment of this
    database, so the next run removes it and goes on. A lab `netrig up` made under that
    name is still refused (exit 2) and left as it is."""
    text = f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 3}}
        measure:
          - iperf3: {{client: n1, server: n3, duration: 1}}
        vary: {{p: [1, 2]}}
        """
    path = write(tmp_path, "killed", text)
    db = tmp_path / "r.db"
    args = ["run", path, "--db", str(db), "--repeat", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "netrig", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not stored_runs(db) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    assert stored_runs(db) and namespaces_of(lab_name), "the run was killed with its lab up"
    out = netrig_cli(*args, "--resume", timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"removed lab {lab_name}, left by netrig run {proc.pid} of this database" in out.stderr
    with ResultStore(db) as store:
        (e,) = store.experiments()
        assert e.status == "ok"
        ok = sorted((r.point["p"], r.repetition) for r in store.runs(e.id) if r.status == "ok")
        assert ok == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert namespaces_of(lab_name) == []

    lab_file = write(tmp_path, "lab", f"name: {lab_name}\ntopology: {{kind: pair}}\n")
    assert netrig_cli("up", "-q", "--no-check", lab_file, timeout=60).returncode == 0
    refused = netrig_cli(*args, timeout=60)
    assert refused.returncode == 2 and "is already up" in refused.stderr, refused.stderr
    assert len(namespaces_of(lab_name)) == 2  # `netrig up`'s lab, untouched
    # refused into a new database: nothing created (an empty file had been left behind)
    fresh = tmp_path / "fresh.db"
    other = netrig_cli(*[str(fresh) if a == str(db) else a for a in args], timeout=60)
    assert other.returncode == 2 and "is already up" in other.stderr, other.stderr
    assert not fresh.exists()


def test_two_experiments_of_different_names_run_side_by_side(tmp_path: Path) -> None:
    names = [new_lab_name("e"), new_lab_name("e")]
    procs = []
    for name in names:
        path = write(
            tmp_path,
            name,
            f"""\
            name: {name}
            topology: {{kind: pair}}
            measure:
              - command: {{node: n2, cmd: "sleep 1; echo 1"}}
            """,
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "netrig",
                    "run",
                    path,
                    "--db",
                    str(tmp_path / f"{name}.db"),
                    "-q",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for proc in procs:
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
    assert all(namespaces_of(n) == [] for n in names)


@requires_tool("iperf3")
def test_the_issue_example_runs_as_written(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    out = netrig_cli("run", str(EXAMPLES / "pair-iperf3.yaml"), "--db", str(db))
    assert out.returncode == 0, out.stderr
    with ResultStore(db) as store:
        (e,) = store.experiments()
        assert e.name == "pair-iperf3" and [r.status for r in store.runs(e.id)] == ["ok"] * 3
        assert all(0 < v < VETH_CEILING for v in throughputs(store, e.id))
    assert "throughput (Gbit/s)" in out.stdout and "3 runs stored" in out.stderr


@requires_tool("iperf3")
@pytest.mark.parametrize(
    ("example", "sets", "runs"),
    [
        ("seed000-static.yaml", ["hops=[1,8]"], 2),
        ("seed000-shapes.yaml", [], 3),
        ("seed000-veth.yaml", [], 1),
        ("seed000-ladder16.yaml", [], 1),
        ("seed001-aliases.yaml", ["aliases=[1,4]"], 2),
    ],
)
def test_seed_examples_run_at_small_scale(
    tmp_path: Path, example: str, sets: list[str], runs: int
) -> None:
    db = tmp_path / "r.db"
    args = [a for s in ["duration=1", *sets] for a in ("--set", s)]
    out = netrig_cli("run", str(EXAMPLES / example), "--db", str(db), "--repeat", "1", "-q", *args)
    assert out.returncode == 0, out.stderr
    with ResultStore(db) as store:
        (e,) = store.experiments()
        assert [r.status for r in store.runs(e.id)] == ["ok"] * runs
        assert all(0 < v < VETH_CEILING for v in throughputs(store, e.id))
        if example.startswith("seed001"):
            streams = [
                s.value
                for r in store.runs(e.id)
                for _, s in store.samples(r.id)
                if s.metric == "streams"
            ]
            assert streams == [1, 4]
    assert not [ns for ns in netns.list_names() if ns.startswith(e.name + "-")]


def test_results_list_and_show(tmp_path: Path, lab_name: str) -> None:
    exp = load_experiment_text(
        f"name: {lab_name}\ntopology: {{kind: pair}}\n"
        "measure: [{command: {node: n1, cmd: 'echo value 7 ms', metrics: true}}]\n"
    )
    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        outcome = run_experiment(exp, store)
    listed = netrig_cli("results", "list", "--db", str(db))
    assert listed.returncode == 0 and lab_name in listed.stdout and "1 ok" in listed.stdout
    shown = netrig_cli("results", "show", lab_name, "--db", str(db))
    assert shown.returncode == 0 and f"r{outcome.run_ids[0]}" in shown.stdout
    assert "value (ms)" in shown.stdout and "exit_code" in shown.stdout
    run = netrig_cli("results", "show", f"r{outcome.run_ids[0]}", "--db", str(db))
    assert run.returncode == 0 and "value 7 ms" in run.stdout
    missing = netrig_cli("results", "show", "nope", "--db", str(db))
    assert missing.returncode == 2 and "no experiment 'nope'" in missing.stderr
    exported = netrig_cli(
        "results", "export", "--format", "json", "--db", str(db), "-o", str(tmp_path / "out.json")
    )
    assert exported.returncode == 0, exported.stderr
    document = json.loads((tmp_path / "out.json").read_text())
    with ResultStore(db) as store:
        assert document["rows"] == json.loads(json.dumps(store.tidy_rows()))
        [e] = store.experiments()
        [described] = document["experiments"]
        assert described["file_text"] == e.file_text and described["id"] == e.id
    values = [r["value"] for r in document["rows"] if r["metric"] == "value"]
    assert values == [7.0]  # what the command printed, in the export's own words
    import pandas  # installed by the test set-up: the export as pandas reads it

    with ResultStore(db) as store:
        pandas.testing.assert_frame_equal(
            pandas.DataFrame(document["rows"]), store.to_dataframe(), check_dtype=False
        )


def test_a_lab_name_in_use_is_refused_before_anything_is_stored(
    tmp_path: Path, lab_name: str
) -> None:
    from netrig.rig import Lab

    busy = Lab.from_spec({"name": lab_name, "topology": {"kind": "pair"}})
    busy.up(check_reachability=False)
    try:
        exp = load_experiment_text(
            f"name: {lab_name}\ntopology: {{kind: pair}}\n"
            "measure: [{command: {node: n1, cmd: 'true'}}]\n"
        )
        with ResultStore(tmp_path / "r.db") as store:
            # its builder (this process) runs: not told to `netrig down` it
            with pytest.raises(LabError, match=f"already up and in use by netrig process {os.getpid()}"):
                run_experiment(exp, store)
            assert store.experiments() == []
        assert busy.exists()  # the other lab is untouched
    finally:
        busy.down()


def test_dry_run_prints_the_plan_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    out = netrig_cli(
        "run",
        str(EXAMPLES / "seed000-static.yaml"),
        "--dry-run",
        "--db",
        str(db),
        "--set",
        "hops=[1,8]",
        "--repeat",
        "2",
    )
    assert out.returncode == 0, out.stderr
    assert "2 sweep points × 2 (interleaved" in out.stdout
    assert "4 runs, 1 lab build; tools: iperf3" in out.stdout
    assert not db.exists()


def test_resume_into_a_database_that_does_not_exist_creates_nothing(
    tmp_path: Path, lab_name: str
) -> None:
    """Exit 2 is 'nothing created': --resume had made an empty database to say there was
    nothing in it to resume."""
    path = write(tmp_path, "none", f"name: {lab_name}\ntopology: {{kind: pair}}\n"
                 "measure: [{command: {node: n1, cmd: 'true'}}]\n")  # fmt: skip
    db = tmp_path / "new.db"
    done = netrig_cli("run", path, "--db", str(db), "--resume", timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"nothing to resume: no results database at {db}" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["none.yaml"]
    assert namespaces_of(lab_name) == []


@requires_tool("ping")
def test_brackets_in_a_tool_s_words_and_in_values_are_printed_as_they_are(
    tmp_path: Path, lab_name: str
) -> None:
    """haproxy's "[ALERT] … [/run/…/haproxy.cfg:11]" in a failure reason had crashed `run`
    (rich read it as a closing tag) after its first run, leaving the experiment "ok"; `[x]`
    in a value or a reason vanished from every line."""
    said = "[bold]boom[/bold] list=[a,b] [/x]"
    path = write(tmp_path, "brackets", f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 2}}
        vary: {{tag: ["[x]", "[/]"]}}
        measure:
          - command: {{node: n1, cmd: "echo '{said} {{tag}}' >&2; exit 3"}}
        """)  # fmt: skip
    db = str(tmp_path / "r.db")
    done = netrig_cli("run", path, "--db", db)
    printed = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in printed, printed
    for tag in ("[x]", "[/]"):
        assert f"run tag={tag} rep 1 failed: command exited with 3: {said} {tag}" in printed
        assert f"failed ×1: command exited with 3: {said} {tag}" in done.stdout
        assert f"  tag={tag}  " in done.stdout  # the summary's point column
    shown = netrig_cli("results", "show", lab_name, "--db", db, env={**os.environ,
                       "COLUMNS": "300"})  # fmt: skip
    assert shown.returncode == 0 and f"{said} [/]" in shown.stdout, shown.stdout + shown.stderr
    with ResultStore(db) as store:
        assert [e.status for e in store.experiments()] == ["failed"]


def test_an_error_that_ends_a_sweep_early_leaves_it_resumable_not_ok(
    tmp_path: Path, lab_name: str
) -> None:
    """An error in netrig itself (here: its progress display) stopped the sweep after its
    first run, and the experiment was stored "ok": `--resume` said it had finished."""

    class BrokenDisplay:
        def begin(self, *args: object) -> None: ...
        def run_started(self, *args: object) -> None: ...
        def note(self, message: str) -> None: ...
        def end(self) -> None: ...

        def run_ended(self, *args: object) -> None:
            raise RuntimeError("the display broke")

    path = write(tmp_path, "early", f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 2}}
        measure:
          - command: {{node: n1, cmd: "true"}}
        repeat: 3
        """)  # fmt: skip
    exp = load_experiment(path)
    with ResultStore(tmp_path / "r.db") as store:
        with pytest.raises(RuntimeError, match="the display broke"):
            run_experiment(exp, store, reporter=BrokenDisplay())  # type: ignore[arg-type]
        (e,) = store.experiments()
        stored = len(store.runs(e.id))  # (the display hears of a run before it is stored)
        assert e.status == "interrupted" and stored < 3
    assert namespaces_of(lab_name) == []
    resumed = netrig_cli("run", path, "--resume", "--db", str(tmp_path / "r.db"))
    assert resumed.returncode == 0, resumed.stderr
    with ResultStore(tmp_path / "r.db") as store:
        (e,) = store.experiments()  # the same experiment, finished
        assert e.status == "ok" and [r.status for r in store.runs(e.id)] == ["ok"] * 3


def test_a_run_on_a_terminal_shows_its_progress_bar(tmp_path: Path) -> None:
    """On a terminal (as typed in a shell, not piped) rich draws a progress bar, which
    enters the console: netrig's lazy console stand-in did not forward that, and every
    `netrig run` on a terminal ended at once with a dump of 'lost sys.stderr' (exit 1)."""
    name = new_lab_name("tt")
    path = write(tmp_path, "tty", f"""\
        name: {name}
        topology: {{kind: chain, nodes: 2}}
        measure:
          - ping: {{src: n1, dst: n2, count: 2, interval: 10ms}}
        repeat: 2
        """)  # fmt: skip
    argv = [sys.executable, "-m", "netrig", "run", path, "--db", str(tmp_path / "r.db")]
    code, printed = on_terminal(argv, stderr_too=True)
    shown = printed.decode(errors="replace")
    assert code == 0, shown[-2000:]
    assert "ETA" in shown and "2/2" in shown and "2 runs stored" in shown, shown[-2000:]
    assert "Traceback" not in shown and "lost sys.stderr" not in shown


@requires_tool("ping")
def test_ctrl_c_while_the_summary_prints_is_only_noted(tmp_path: Path, lab_name: str) -> None:
    """Once every run is stored and the lab removed, Ctrl-C (twice here, as an impatient
    user presses it) lets the summary and the last line print whole, then exits 130. A
    second one had said "everything this command created was removed" and a third killed
    Python (exit -2)."""
    path = write(tmp_path, "late", f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 2}}
        measure:
          - ping: {{src: n1, dst: n2, count: 1}}
        """)  # fmt: skip
    argv = ["run", path, "--db", str(tmp_path / "r.db")]
    done = signalled_inside("netrig.cli.cmd_run", "print_summary", argv, signal.SIGINT, times=2)
    assert done.returncode == 130, done.stderr
    assert "1 run stored" in done.stderr and "rtt_avg" in done.stdout, done.stderr
    assert "removed" not in done.stderr and "Traceback" not in done.stderr
    assert namespaces_of(lab_name) == []
    failing = write(tmp_path, "fails", f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 2}}
        measure:
          - command: {{node: n1, cmd: "false"}}
        """)  # fmt: skip
    argv = ["run", failing, "--db", str(tmp_path / "f.db")]
    done = signalled_inside("netrig.cli.cmd_run", "print_summary", argv, signal.SIGINT)
    assert done.returncode == 130, done.stderr  # the signal's code, not the failure's 1
    assert "1 of 1 runs failed" in done.stderr


@requires_tool("ping")
def test_a_hangup_ignored_by_nohup_stays_ignored(tmp_path: Path, lab_name: str) -> None:
    """`nohup netrig run …` must outlive the terminal: netrig had put its own handler over
    the SIGHUP its caller ignored, and stopped (exit 129)."""
    path = write(tmp_path, "nohup", f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 2}}
        measure:
          - ping: {{src: n1, dst: n2, count: 5, interval: 0.2}}
        repeat: 2
        """)  # fmt: skip
    db = tmp_path / "r.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrig", "run", path, "--db", str(db), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # what nohup does
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not stored_runs(db) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGHUP)  # the terminal closes
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert [s for s, _ in stored_runs(db)] == ["ok", "ok"]
