"""The end-of-run table: statistics per sweep point; failures counted, never averaged in."""

from __future__ import annotations

import os
import statistics
from datetime import UTC, datetime
from pathlib import Path

import pytest

from netrig.base.sample import Sample
from netrig.results.store import ResultStore
from netrig.results.summary import fmt, headline_metrics, scale, summarize


def test_statistics_per_point_with_failed_runs_counted_apart(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    with ResultStore(tmp_path / "s.db") as store:
        eid = store.begin_experiment("sum", "text", {})
        values = {1: [10e9, 12e9, 11e9], 8: [5e9]}
        for hops, series in values.items():
            for rep, v in enumerate(series, start=1):
                samples = [
                    Sample("throughput", v, "bit/s"),
                    Sample("cpu_client", 50, "%"),
                    Sample("throughput", 1.0, "bit/s", t=0.0),
                    Sample("throughput", 2.0, "bit/s", stream="1"),
                ]
                store.record_run(
                    eid, {"hops": hops}, rep, "ok", {"iperf3": samples}, started=now, ended=now
                )
        store.record_run(eid, {"hops": 8}, 2, "failed", {}, "iperf3: no route")
        store.record_run(eid, {"hops": 8}, 3, "interrupted", {}, "SIGINT")
        store.record_run(eid, {"hops": 20}, 1, "failed", {}, "no lab")
        rows = summarize(store, eid)
        assert [(r.label, r.metric) for r in rows] == [
            ("hops=1", "throughput"),
            ("hops=8", "throughput"),
            ("hops=20", "throughput"),
        ]
        one, eight, twenty = rows
        assert (one.n, one.failed, one.median, one.minimum, one.maximum) == (3, 0, 11e9, 10e9, 12e9)
        assert one.stddev == pytest.approx(statistics.stdev([10e9, 12e9, 11e9]))
        assert (eight.n, eight.failed, eight.interrupted, eight.median, eight.stddev) == (
            1,
            1,
            1,
            5e9,
            None,
        )
        assert (twenty.n, twenty.failed, twenty.median) == (0, 1, None)  # never a zero
        every = {r.metric for r in summarize(store, eid, all_metrics=True)}
        assert every == {"throughput", "cpu_client"}  # intervals and streams stay out


def test_headline_metrics_and_units() -> None:
    assert "throughput" in (headline_metrics("iperf3") or ())
    assert headline_metrics("iperf3-2") == headline_metrics("iperf3")
    assert headline_metrics("my-own-name") is None and headline_metrics("command") is None
    assert scale("bit/s", 9.4e9) == (1e9, "Gbit/s")
    assert scale("bit/s", 3e6) == (1e6, "Mbit/s")
    assert scale("ms", 0.05) == (1e-3, "µs")  # as the plots show it
    assert scale("ms", 12.0) == (1.0, "ms")
    assert fmt(None) == "-" and fmt(9.4e9, 1e9) == "9.4"
    # req/s has no larger unit: 16,990 reads whole, not as 1.699e+04
    assert fmt(16990.4) == "16990" and fmt(-12345.6) == "-12346" and fmt(9999.4) == "9999"
    assert fmt(2.5e-5) == "2.5e-05" and fmt(3e16) == "3e+16"


def test_points_are_listed_by_value_whatever_order_they_finished_in(tmp_path: Path) -> None:
    """Runs spread over cluster hosts (or interleaved) finish in any order."""
    with ResultStore(tmp_path / "o.db") as store:
        eid = store.begin_experiment("order", "text", {})
        for hops in (5, 1, 8, 10):
            samples = {"iperf3": [Sample("throughput", 1e9 * hops, "bit/s")]}
            store.record_run(eid, {"hops": hops, "cc": "reno"}, 1, "ok", samples)
        assert [r.label for r in summarize(store, eid)] == [
            "hops=1, cc=reno", "hops=5, cc=reno", "hops=8, cc=reno", "hops=10, cc=reno",
        ]  # fmt: skip


def test_a_metric_reads_in_the_unit_of_its_largest_median(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The first point's median had chosen the unit: 643 bit/s during a cut made every
    other point's throughput read 4586552905 bit/s."""
    from netrig.cli.cmd_run import print_summary

    with ResultStore(tmp_path / "s.db") as store:
        eid = store.begin_experiment("unit", "text", {})
        for protocol, value in (("babel", 643.0), ("ospf", 4.5866e9)):
            samples = [Sample("throughput", value, "bit/s")]
            store.record_run(eid, {"protocol": protocol}, 1, "ok", {"iperf3": samples})
        print_summary(store, eid, "unit")
    shown = capsys.readouterr().out
    assert "throughput (Gbit/s)" in shown and "4.587" in shown
    assert "bit/s)" not in shown.replace("Gbit/s)", "")


def test_a_run_failed_by_one_measurement_keeps_the_others_values(tmp_path: Path) -> None:
    """A diagnostic command that exits 1 fails its run, but the iperf3 numbers measured
    beside it are results: they count (N) in their rows, the command's row counts the
    failure. A run whose lab or event failed (failed_measurements None) voids every row."""
    with ResultStore(tmp_path / "s.db") as store:
        eid = store.begin_experiment("mixed", "text", {})
        good = {"iperf3": [Sample("throughput", 9e9, "bit/s")], "command": [Sample("x", 1, "")]}
        store.record_run(eid, {}, 1, "ok", good)
        store.record_run(eid, {}, 2, "failed",
                         {"iperf3": [Sample("throughput", 8e9, "bit/s")]},
                         "command: exited 1", failed_measurements=["command"])  # fmt: skip
        store.record_run(eid, {}, 3, "failed",
                         {"iperf3": [Sample("throughput", 1e3, "bit/s")]},
                         "event link a-b down @ 1s failed: gone")  # fmt: skip
        runs = store.runs(eid)
        assert [r.failed_measurements for r in runs] == [None, ("command",), None]
        assert runs[1].counts_for("iperf3") and not runs[1].counts_for("command")
        assert runs[1].failed_for("command") and not runs[1].failed_for("iperf3")
        assert not runs[2].counts_for("iperf3") and runs[2].failed_for("iperf3")
        rows = {(r.measurement, r.metric): r for r in summarize(store, eid, all_metrics=True)}
        throughput, command = rows[("iperf3", "throughput")], rows[("command", "x")]
        assert (throughput.n, throughput.failed, throughput.median) == (2, 1, 8.5e9)
        assert (command.n, command.failed) == (1, 2)


def test_a_yes_no_parameter_reads_as_in_the_file(tmp_path: Path) -> None:
    """bfd=false, as the dry run and the file say (the summary had said bfd=False)."""
    with ResultStore(tmp_path / "b.db") as store:
        eid = store.begin_experiment("b", "text", {})
        store.record_run(eid, {"bfd": False, "rate": 8.0}, 1, "ok",
                         {"x": [Sample("y", 1.0, "s")]})  # fmt: skip
        (row,) = summarize(store, eid, all_metrics=True)
        assert row.label == "bfd=false, rate=8"


def test_a_named_measurement_shows_its_plugins_metrics_and_points_keep_the_files_order(
    tmp_path: Path,
) -> None:
    """`name: ping-baseline` on an iperf3 had shown ping's metrics (none of its own: the
    throughput was missing everywhere); text values had been sorted (ecmp before static)."""
    text = "name: n\nvary:\n  routing: [static, ecmp]\n  hops: [8, 2]\n"
    with ResultStore(tmp_path / "n.db") as store:
        eid = store.begin_experiment("n", text, {}, {"ping-baseline": "iperf3", "x": "ping"})
        for routing in ("ecmp", "static"):
            for hops in (2, 8):
                store.record_run(eid, {"routing": routing, "hops": hops}, 1, "ok", {
                    "ping-baseline": [Sample("throughput", 9e9, "bit/s"),
                                      Sample("cpu_client", 3.0, "%")],
                    "x": [Sample("rtt_avg", 0.1, "ms"), Sample("sent", 5, "packets")],
                })  # fmt: skip
        rows = summarize(store, eid)
        assert {(r.measurement, r.metric) for r in rows} == {
            ("ping-baseline", "throughput"), ("x", "rtt_avg")
        }  # fmt: skip
        labels = list(dict.fromkeys(r.label for r in rows))
        assert labels == ["routing=static, hops=8", "routing=static, hops=2",
                          "routing=ecmp, hops=8", "routing=ecmp, hops=2"]  # fmt: skip
        assert store.experiment(eid).measurements == {"ping-baseline": "iperf3", "x": "ping"}


def test_the_export_says_which_values_of_a_partly_failed_run_count(tmp_path: Path) -> None:
    """An iperf3 row of a run failed by its command only had read plain "failed" in the
    export, while stat and the summary count it."""
    import io
    import json

    with ResultStore(tmp_path / "e.db") as store:
        eid = store.begin_experiment("e", "text", {}, {"iperf3": "iperf3", "cmd": "command"})
        store.record_run(eid, {}, 1, "failed",
                         {"iperf3": [Sample("throughput", 8e9, "bit/s")],
                          "cmd": [Sample("exit_code", 3, "")]},
                         "cmd: exited with 3", failed_measurements=["cmd"])  # fmt: skip
        rows = store.tidy_rows(eid)
        assert [(r["measurement"], r["counts"]) for r in rows] == [("iperf3", True), ("cmd", False)]
        out = io.StringIO()
        store.export_json(out, eid)
        (exp,) = json.loads(out.getvalue())["experiments"]
        assert exp["measurements"] == {"cmd": "command", "iperf3": "iperf3"}


def _balancer_runs(store: ResultStore, wrk_samples: list[Sample]) -> int:
    """Seed 004's report: wrk to a balancer fails every run, ab to web1 succeeds; each
    run is failed by wrk alone, so ab's values count."""
    kinds = {"wrk": "wrk", "ab": "ab"}
    eid = store.begin_experiment("lb", "name: lb\nvary:\n  conc: [5, 50]\n", {}, kinds)
    for conc in (5, 50):
        for rep in (1, 2):
            samples = {
                "wrk": wrk_samples,
                "ab": [Sample("requests_per_s", 17289.0 + rep, "req/s")],
            }
            store.record_run(eid, {"conc": conc}, rep, "failed", samples,
                             "wrk: wrk exited with 1: connection refused",
                             failed_measurements=["wrk"])  # fmt: skip
    return eid


@pytest.mark.parametrize(
    ("wrk_samples", "wrk_metric"),
    [([], ""), ([Sample("requests_per_s", 3.0, "req/s")], "requests_per_s")],
    ids=["no-wrk-sample", "partial-wrk-sample"],
)
def test_a_measurement_whose_runs_all_failed_keeps_its_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wrk_samples: list[Sample],
    wrk_metric: str,
) -> None:
    """The summary had shown ab's numbers alone, unlabelled, as if nothing had failed;
    the HTML report showed wrk's rows with `failed 2`."""
    from netrig.cli.cmd_run import print_summary

    with ResultStore(tmp_path / "lb.db") as store:
        eid = _balancer_runs(store, wrk_samples)
        rows = summarize(store, eid)
        shown = [(r.label, r.measurement, r.metric, r.n, r.failed) for r in rows]
        assert sorted(shown) == [
            ("conc=5", "ab", "requests_per_s", 2, 0),
            ("conc=5", "wrk", wrk_metric, 0, 2),
            ("conc=50", "ab", "requests_per_s", 2, 0),
            ("conc=50", "wrk", wrk_metric, 0, 2),
        ]
        assert [r.label for r in rows] == ["conc=5", "conc=5", "conc=50", "conc=50"]
        assert all(r.median is None for r in rows if r.measurement == "wrk")  # never a zero
        print_summary(store, eid, "lb")
    table = capsys.readouterr().out
    lines = [line.split() for line in table.splitlines() if "×" not in line]
    wrk = [cells for cells in lines if "wrk" in cells]
    ab = [cells for cells in lines if "ab" in cells]
    assert len(wrk) == 2 and len(ab) == 2, table  # labelled: two measurements
    assert all(cells[-6:-4] == ["0", "2"] for cells in wrk), table  # N 0, failed 2
    assert all("requests_per_s" in cells and "17290" in cells for cells in ab), table


LISTED = """name: lbs
vary:
  - {lb: pen, c: 5}
  - {lb: hap, c: 5}
  - {lb: pen, c: 50}
"""


def test_points_of_a_list_keep_the_files_order_everywhere(tmp_path: Path) -> None:
    """`vary:` as a list of points had been sorted by value (pen/5, pen/50, hap/5) in the
    summary, stat --experiment and the report; the README says the file's order."""
    from netrig.cli.cmd_compare import stat_text
    from netrig.report.html import render as render_html
    from netrig.stats.stored import MetricRef, collect, load

    with ResultStore(tmp_path / "l.db") as store:
        eid = store.begin_experiment("lbs", LISTED, {}, {"ab": "ab"})
        # stored in another order than the file's, as a cluster or --resume may
        for rep in (1, 2, 3):
            for lb, c in (("pen", 50), ("hap", 5), ("pen", 5)):
                samples = {"ab": [Sample("requests_per_s", 1000.0 * c + rep, "req/s")]}
                store.record_run(eid, {"lb": lb, "c": c}, rep, "ok", samples)
        wanted = ["lb=pen, c=5", "lb=hap, c=5", "lb=pen, c=50"]
        assert [r.label for r in summarize(store, eid)] == wanted
        data = load(store, "lbs")
        assert [f"lb={p['lb']}, c={p['c']}" for p in data.points()] == wanted
        metric = MetricRef("ab", "requests_per_s", "req/s")
        assert [g.label for g in collect(data, metric)] == wanted
        # a part of a point ranks as the first listed point it agrees with
        assert [g.label for g in collect(data, metric, by=["lb"])] == ["lb=pen", "lb=hap"]
        assert [g.label for g in collect(data, metric, by=["c"])] == ["c=5", "c=50"]
        text, code = stat_text(store, "lbs")
        assert code == 0
        titles = [line for line in text.splitlines() if line.startswith("== ")]
        assert titles == [f"== ab requests_per_s (req/s), {label}" for label in wanted]
        html = render_html(data)
    results = html[html.index('id="results"') :]
    rows = [results.index(f"<td>{lb}</td><td>{c}</td>") for lb, c in
            (("pen", "5"), ("hap", "5"), ("pen", "50"))]  # fmt: skip
    assert rows == sorted(rows)


def test_results_show_of_a_cluster_run_names_each_runs_host(tmp_path: Path) -> None:
    """`results show` of a --cluster experiment: the runs table had no host column."""
    import subprocess
    import sys


    with ResultStore(tmp_path / "cl.db") as store:
        facts = {"kernel": "6.1.0-18-amd64", "cpu_model": "Xeon", "tool_versions": {}}
        eid = store.begin_experiment("cl", "name: cl\n", {"cluster": "tcp://x", "hosts": {}})
        for rep, host in enumerate(["w1", "w2", "w1+w2"]):
            store.record_run(eid, {}, rep, "ok", {"ping": [Sample("rtt_avg", 1.0, "ms")]},
                             host=host, host_facts=facts)  # fmt: skip
        local = store.begin_experiment("local", "name: local\n", facts)
        store.record_run(local, {}, 0, "ok", {"ping": [Sample("rtt_avg", 1.0, "ms")]})

    def show(name: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "netrig", "results", "show", name, "--db", str(tmp_path / "cl.db")],
            capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    lines = show("cl").splitlines()
    head = next(line for line in lines if "status" in line and "run" in line)
    assert [c.strip() for c in head.split("┃")[1:4]] == ["run", "point", "host"], head
    hosts = [line.split("│")[3].strip() for line in lines if line.startswith("│ r")]
    assert hosts == ["w1", "w2", "w1+w2"]
    assert " host " not in next(line for line in show("local").splitlines() if "status" in line)
