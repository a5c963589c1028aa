"""Odd input found by trying the command line as a careless user would (29 Nov): each gave a
Python traceback or ran away; each is now one message and exit 2 (1 for a write failure)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netrig.report.verdicts import compare, ministat_text
from netrig.results.store import ResultStore, StoreError
from tests.conftest import netrig_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BIG = "1" + "0" * 400

# name: (file text, extra arguments, what the message says)
CASES: dict[str, tuple[bytes, list[str], str]] = {
    "not UTF-8": (b"name: t1\n\xd0\xcf\x11\xe0\n", [], "f.yaml:2: not a text file (UTF-8)"),
    "!!bool maybe": (
        b"name: t1\ntopology: {kind: ring, nodes: !!bool maybe}\n",
        [],
        "not a valid bool",
    ),
    "!!int empty": (b"name: t1\ntopology: {kind: ring, nodes: !!int ''}\n", [], "not a valid"),
    "!!timestamp junk": (
        b"name: t1\ntopology: {kind: ring, nodes: !!timestamp xx}\n",
        [],
        "not a valid timestamp",
    ),
    "empty service": (
        b"name: t1\nnodes: [{name: a, services: [{}]}, {name: b}]\nlinks: [{a: a, b: b}]\n",
        [],
        "a service is one `kind: {options}` mapping",
    ),
    "ipv6 pool at ::": (
        b'name: t1\ntopology: {kind: pair}\naddressing: {ipv6: "::/32"}\n',
        [],
        "pool ::/32 overlaps ::/8",
    ),
    "multicast pool": (
        b"name: t1\ntopology: {kind: pair}\naddressing: {ipv4: 224.0.0.0/4}\n",
        [],
        "(multicast): not for a lab",
    ),
    "int too big for a float": (
        f'params: {{big: {BIG}}}\nname: t1\ntopology: {{kind: ring, nodes: "{{big / 1}}"}}\n'
        "measure:\n  - ping: {src: n1, dst: n2}\n".encode(),
        [],
        "too large for a float",
    ),
    "lab: /dev/zero": (
        b"lab: /dev/zero\nmeasure:\n  - ping: {src: n1, dst: n2}\n",
        [],
        "/dev/zero: file too large",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_odd_file_is_one_message_at_its_line(tmp_path: Path, name: str) -> None:
    text, extra, says = CASES[name]
    path = tmp_path / "f.yaml"
    path.write_bytes(text)
    done = netrig_cli("validate", str(path), *extra, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert says in done.stderr, done.stderr
    assert str(path) in done.stderr


def test_set_with_a_date_yaml_cannot_build_is_taken_as_text() -> None:
    done = netrig_cli("validate", str(EXAMPLES / "seed000-static.yaml"), "--set",
                      "hops=2001-02-30", timeout=60)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "arithmetic needs numbers, not '2001-02-30'" in done.stderr


def test_repeat_is_bounded_as_in_the_file() -> None:
    done = netrig_cli("run", "--dry-run", str(EXAMPLES / "seed000-static.yaml"), "--repeat",
                      "99999999999999999999", timeout=60)  # fmt: skip
    assert done.returncode == 2 and "1<=x<=100000" in done.stderr, done.stderr


def test_export_to_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    out = tmp_path / "nowhere" / "x.clab.yml"
    done = netrig_cli("export", str(EXAMPLES / "ring16.yaml"), "--format", "clab", "-o",
                      str(out), timeout=60)  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot write {out}: No such file or directory" in done.stderr


def test_worker_with_an_address_without_port() -> None:
    done = netrig_cli("worker", "--scheduler", "nonsense", timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "missing port number" in done.stderr


def test_stored_values_ministat_cannot_plot_give_the_rest_without_the_plot() -> None:
    text = ministat_text([("a", [1e308] * 3), ("b", [1.0, 2.0, 3.0])]).decode()
    assert text.startswith("[no plot: a plot column is not finite, where ministat crashes]\n")
    assert "    N           Min" in text and "+--" not in text


def test_values_whose_squares_are_zero_get_a_runs_estimate() -> None:
    """Worked out in units of the difference to detect (it had been "no estimate")."""
    c = compare([1e-320, 1e-320, 1.5e-320], [1e-320, 2e-320, 1e-320])
    assert c.needed is not None and c.needed.runs_per_side >= 2 and c.welch is not None


def test_ids_beyond_sqlite_integers_name_nothing(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        assert store.find_experiment("9" * 30) is None
        with pytest.raises(StoreError, match="no run with id"):
            store.run(10**30)


def test_run_into_another_programs_database_creates_nothing(tmp_path: Path) -> None:
    """`--db` naming another program's SQLite file: exit 2 before the lab is built, the
    file unchanged (it had got netrig's tables and WAL mode)."""
    import sqlite3

    db = tmp_path / "app.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE accounts (name TEXT)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    done = netrig_cli("run", str(EXAMPLES / "seed000-static.yaml"), "--set", "duration=1",
                      "--repeat", "1", "--name", "t-odd-db", "--db", str(db), timeout=60)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "not a netrig results database (another program's SQLite file" in done.stderr
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
    assert "building lab" not in done.stderr


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_results_export_to_a_folder_that_does_not_exist(tmp_path: Path, fmt: str) -> None:
    """One line and exit 1, as `netrig export` says it (it was a FileNotFoundError
    traceback), and no file made."""
    from netrig.base.sample import Sample

    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        eid = store.begin_experiment("e", "name: e\n", {"kernel": "x"})
        store.record_run(eid, {}, 0, "ok", {"ping": [Sample("rtt", 1.0, "ms")]})
        store.finish_experiment(eid, "ok")
    out = tmp_path / "nowhere" / "x.csv"
    done = netrig_cli("results", "export", "e", "--format", fmt, "-o", str(out), "--db",
                      str(db), timeout=60)  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot write {out}: No such file or directory" in done.stderr
    assert not out.parent.exists()


@pytest.mark.parametrize("which", ["/dev/zero", "a sparse 1 GB file"])
def test_validate_of_an_endless_or_huge_file_reads_a_bounded_part(
    tmp_path: Path, which: str
) -> None:
    """The remembered plans' lookup hashed a file's bytes read whole: `validate /dev/zero`
    grew until the OOM killer came, a 1 GB file took 1 GB. Now it reads at most what the
    loader would, so both are refused as too large within 1 GB of address space."""
    import resource

    path = which
    if which != "/dev/zero":
        path = str(tmp_path / "big.yaml")
        with open(path, "wb") as fh:
            fh.truncate(1 << 30)

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = netrig_cli("validate", path, timeout=60, preexec_fn=bounded,
                      env={**os.environ, "NETRIG_PLAN_CACHE": str(tmp_path / "plans")})  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "file too large" in done.stderr


@pytest.mark.parametrize("example", ["ring16.yaml", "seed000-static.yaml"])
def test_validate_refuses_topo_for_a_file_that_is_not_mininet(example: str) -> None:
    """`up` refused it (exit 2); `validate` ignored it and said ok."""
    done = netrig_cli("validate", "--topo", "tree,2", str(EXAMPLES / example), timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "--topo applies to Mininet topology files (*.py)" in done.stderr


def test_validate_of_an_experiment_counts_its_points_once() -> None:
    done = netrig_cli("validate", str(EXAMPLES / "pair-iperf3.yaml"), timeout=60)
    assert done.returncode == 0, done.stderr
    assert "experiment pair-iperf3: 1 sweep point × 3 runs, 1 lab, measures iperf3" in done.stdout


def test_measurement_options_print_their_brackets() -> None:
    """rich read ping's `[[src, dst], …]` as markup and printed `[, …]`; no default is `-`."""
    listed = netrig_cli("run", "--measurements", "x")
    assert listed.returncode == 0, listed.stderr
    pairs = next(line for line in listed.stdout.splitlines() if line.split()[:1] == ["pairs"])
    assert pairs.split()[1:] == ["-", "[[src,", "dst],", "…]"], pairs


def test_one_of_a_thing_is_said_in_the_singular(tmp_path: Path) -> None:
    path = tmp_path / "pair.yaml"
    path.write_text("name: one\ntopology: {kind: pair}\nrouting: {protocol: none}\n")
    done = netrig_cli("validate", str(path), env={**os.environ, "NETRIG_PLAN_CACHE": "off"})
    assert done.returncode == 0 and "2 hosts, 1 link, routing none, 0 routes" in done.stdout, (
        done.stdout
    )


def test_validate_of_several_files_checks_each_and_exits_2_if_one_is_wrong(
    tmp_path: Path,
) -> None:
    """`validate b.yaml a.yaml c.yaml` stopped at the first bad file: c was never checked."""
    files = {
        "b.yaml": "name: b\ntopology: {kind: pair\n",
        "a.yaml": "name: a\ntopology: {kind: pair}\n",
        "c.yaml": "name: c\ntopology: {kind: pear}\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    env = {**os.environ, "NETRIG_PLAN_CACHE": "off"}
    done = netrig_cli("validate", *files, cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert done.stdout.startswith("ok a.yaml: lab a: 2 hosts"), done.stdout
    assert "b.yaml:3:1: YAML syntax error" in done.stderr
    assert "c.yaml:2:18: topology.kind" in done.stderr and "'pear'" in done.stderr
    good = netrig_cli("validate", "a.yaml", cwd=tmp_path, env=env)
    assert good.returncode == 0 and not good.stderr


def test_a_sysctl_this_kernel_lacks_is_refused_at_its_line(tmp_path: Path) -> None:
    """It had passed validate, and `up` then failed: "[Errno 2] … No such file or directory"."""
    lab = tmp_path / "sc.yaml"
    lab.write_text("name: t\ntopology: {kind: pair}\nsysctls:\n  net.ipv4.nonexistent_knob: 1\n"
                   "  net.ipv4.conf.default.rp_filter: 1\n  net.ipv4.ip_default_ttl: 99\n")  # fmt: skip
    env = {**os.environ, "NETRIG_PLAN_CACHE": "off"}
    done = netrig_cli("validate", str(lab), env=env)
    assert done.returncode == 2 and done.stderr.startswith(f"{lab}:4:"), done.stderr
    assert "sysctl net.ipv4.nonexistent_knob: this kernel has no such key" in done.stderr
    assert "rp_filter" not in done.stderr
    lab.write_text(lab.read_text().replace("  net.ipv4.nonexistent_knob: 1\n", ""))
    assert netrig_cli("validate", str(lab), env=env).returncode == 0


def test_a_program_the_host_lacks_in_exec_or_cmd_is_refused_at_its_line(tmp_path: Path) -> None:
    """validate had said ok; `up` then failed with "'nosuchprog' not found on this host"."""
    lab = tmp_path / "pg.yaml"
    lab.write_text("name: t\ntopology: {kind: pair}\nnodes:\n  - {name: n1, cmd: 'no-such-program"
                   " --x', exec: ['nosuchprog x', 'ip addr']}\n  - {name: n2, exec: "
                   "['/usr/local/bin/mine --go'], binds: ['/bin/true:/usr/local/bin/mine']}\n")  # fmt: skip
    done = netrig_cli("validate", str(lab), env={**os.environ, "NETRIG_PLAN_CACHE": "off"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"{lab}:4:51: n1: exec line nosuchprog x: 'nosuchprog' is not on this host's PATH "
        "(nodes run the host's programs)",
        f"{lab}:4:21: n1: cmd no-such-program --x: 'no-such-program' is not on this host's "
        "PATH (nodes run the host's programs)",
    ]  # (n2's, given by path and bound into it, is the node's own business)


def test_an_experiment_file_s_host_refusals_keep_their_lines(tmp_path: Path) -> None:
    """In an experiment file they had been said at the file alone (`t.yaml: n1: cmd …`)."""
    exp = tmp_path / "cm.yaml"
    exp.write_text("name: t\ntopology: {kind: pair}\nnodes: [{name: n1, cmd: 'h5nosuch --x'}]\n"
                   "sysctls: {net.ipv4.bogus_thing: 1}\n"
                   "measure: [{ping: {src: n1, dst: n2, count: 1}}]\n")  # fmt: skip
    done = netrig_cli("validate", str(exp), env={**os.environ, "NETRIG_PLAN_CACHE": "off"})
    assert done.returncode == 2
    assert sorted(line.split(": ", 1)[0] for line in done.stderr.splitlines()) == [
        f"{exp}:3:25", f"{exp}:4:33"], done.stderr


def test_validate_with_set_checks_lab_files_among_experiments_without_it(tmp_path: Path) -> None:
    """`validate lab.yaml exp.yaml --set n=3` had stopped at once ("--set applies to
    experiment files"), checking neither."""
    (tmp_path / "lab.yaml").write_text("name: a\ntopology: {kind: pair}\n")
    (tmp_path / "exp.yaml").write_text("name: e\ntopology: {kind: chain, nodes: '{n}'}\n"
                                       "params: {n: 2}\nmeasure: [{ping: {src: n1, dst: n2}}]\n")  # fmt: skip
    env = {**os.environ, "NETRIG_PLAN_CACHE": "off"}
    done = netrig_cli("validate", "lab.yaml", "exp.yaml", "--set", "n=3", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("ok lab.yaml: lab a")
    assert done.stdout.splitlines()[1].startswith("ok exp.yaml: experiment e")
    assert "note: lab.yaml is a lab file, checked without --set" in done.stderr
    alone = netrig_cli("validate", "lab.yaml", "--set", "n=3", cwd=tmp_path, env=env)
    assert alone.returncode == 2 and "--set applies to experiment files" in alone.stderr
