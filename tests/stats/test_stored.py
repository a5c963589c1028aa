"""netrig.stats.stored: selectors, loading, grouping and reducers over a real SQLite store."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from netrig.base.sample import Sample
from netrig.results.store import ResultStore
from netrig.stats.stored import (
    REDUCERS,
    MetricRef,
    SelectionError,
    collect,
    failure_reasons,
    load,
    mean_ci,
    parse_filters,
    parse_selector,
    percentile,
    point_matches,
    pooled,
    resolve_metrics,
    run_series,
    sample_kind,
    stddev,
    value_matches,
)

GBIT = 1e9


def iperf(value: float, intervals: tuple[float, ...] = ()) -> list[Sample]:
    """iperf3's samples as the plugin stores them: summary (t None) and interval values."""
    out = [
        Sample("throughput", value, "bit/s"),
        Sample("cpu_client", 12.5, "%"),
        Sample("throughput", value * 1.01, "bit/s", None, "5201"),  # a stream, not the total
    ]
    out += [Sample("throughput", v, "bit/s", float(t)) for t, v in enumerate(intervals)]
    return out


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    """hops × routing, 3 repetitions; hops=8/ecmp fails every run, hops=4/static once."""
    s = ResultStore(tmp_path / "r.db")
    eid = s.begin_experiment("ring", "name: ring\n", {"kernel": "6.1"})
    values = {
        (1, "static"): [9.0, 9.2, 9.1],
        (1, "ecmp"): [9.3, 9.4, 9.5],
        (4, "static"): [7.0, 7.2, None],
        (4, "ecmp"): [8.0, 8.1, 8.2],
        (8, "static"): [5.0, 5.1, 5.2],
        (8, "ecmp"): [None, None, None],
    }
    for rep in range(3):
        for (hops, routing), series in values.items():
            point = {"hops": hops, "routing": routing}
            v = series[rep]
            if v is None:
                s.record_run(eid, point, rep, "failed", reason=f"iperf3: no route ({hops})")
                continue
            ping = [Sample("rtt_avg", 0.05 * hops, "ms")]
            ping += [Sample("rtt", 0.05 * hops + k * 0.001, "ms", k * 0.2) for k in range(5)]
            s.record_run(eid, point, rep, "ok", {"iperf3": iperf(v * GBIT, (v, v)), "ping": ping})
    s.record_run(eid, {"hops": 1, "routing": "static"}, 3, "interrupted", reason="Ctrl-C")
    s.finish_experiment(eid, "failed")
    other = s.begin_experiment("pair", "name: pair\n", {})
    s.record_run(other, {}, 0, "ok", {"iperf3": iperf(1.0 * GBIT)})
    yield s
    s.close()


THROUGHPUT = MetricRef("iperf3", "throughput", "bit/s")


def test_selectors() -> None:
    assert parse_selector("ring") == parse_selector(" ring ")
    sel = parse_selector("ring:hops=5,routing=ecmp")
    assert (sel.experiment, sel.filters) == ("ring", (("hops", "5"), ("routing", "ecmp")))
    assert str(sel) == "ring:hops=5,routing=ecmp"
    only = parse_selector("hops=5")
    assert only.experiment is None and only.filters == (("hops", "5"),)
    assert parse_selector("7").experiment == "7"
    with pytest.raises(SelectionError, match="PARAM=VALUE"):
        parse_selector("ring:hops")
    with pytest.raises(SelectionError, match="PARAM=VALUE"):
        parse_filters(["hops="])
    with pytest.raises(SelectionError, match="empty"):
        parse_selector("  ")


def test_value_matching() -> None:
    assert value_matches(5, "5") and value_matches(5, "5.0") and value_matches(0.5, ".5")
    assert not value_matches(5, "6") and not value_matches(5, "five")
    assert value_matches("ecmp", "ecmp") and not value_matches("ecmp", "ECMP")
    assert value_matches(True, "true") and value_matches(False, "no")
    assert not value_matches(True, "1.5")
    assert point_matches({"hops": 4, "routing": "ecmp"}, [("hops", "4"), ("routing", "ecmp")])
    assert not point_matches({"hops": 4}, [("routing", "ecmp")])


def test_load_finds_by_name_or_id_and_lists_names(store: ResultStore) -> None:
    data = load(store, "ring")
    assert data.experiment.name == "ring" and data.params == ["hops", "routing"]
    assert load(store, str(data.experiment.id)).experiment.id == data.experiment.id
    assert data.values_of("hops") == [1, 4, 8]
    assert len(data.points()) == 6 and len(data.points([("hops", "8")])) == 2
    with pytest.raises(SelectionError, match="experiments: pair, ring"):
        load(store, "nope")


def test_headline_metrics_by_default_and_qualified_names(store: ResultStore) -> None:
    data = load(store, "ring")
    default = resolve_metrics(data)
    assert THROUGHPUT in default
    assert MetricRef("iperf3", "cpu_client", "%") not in default  # not a headline metric
    assert resolve_metrics(data, ["iperf3.throughput"]) == [THROUGHPUT]
    assert resolve_metrics(data, ["cpu_client"]) == [MetricRef("iperf3", "cpu_client", "%")]
    with pytest.raises(SelectionError, match=r"no metric 'jitter'; metrics: .*iperf3\.throughput"):
        resolve_metrics(data, ["jitter"])


def test_groups_per_point_keep_failures_apart(store: ResultStore) -> None:
    data = load(store, "ring")
    groups = {g.label: g for g in collect(data, THROUGHPUT)}
    assert list(groups)[:2] == ["hops=1, routing=static", "hops=1, routing=ecmp"]
    # summary values only: neither the per-stream value nor the interval samples
    assert groups["hops=1, routing=static"].values == [9.0 * GBIT, 9.2 * GBIT, 9.1 * GBIT]
    assert groups["hops=1, routing=static"].interrupted == 1
    partial = groups["hops=4, routing=static"]
    assert len(partial.values) == 2 and len(partial.failed) == 1 and not partial.all_failed
    dead = groups["hops=8, routing=ecmp"]
    assert dead.values == [] and dead.all_failed and len(dead.failed) == 3
    assert failure_reasons(dead.failed) == [("iperf3: no route (8)", 3)]


def test_a_run_failed_by_another_measurement_gives_this_ones_values(tmp_path: Path) -> None:
    """stat, compare and plots collect a measurement's values from a run that failed only
    by another one (`failed_measurements`); a run failed as a whole is a failure for all."""
    with ResultStore(tmp_path / "m.db") as s:
        eid = s.begin_experiment("mixed", "name: mixed\n", {})
        s.record_run(eid, {}, 0, "ok", {"iperf3": iperf(9 * GBIT), "command": []})
        s.record_run(eid, {}, 1, "failed", {"iperf3": iperf(8 * GBIT)}, "command: exit 1",
                     failed_measurements=["command"])  # fmt: skip
        s.record_run(eid, {}, 2, "failed", {"iperf3": iperf(1.0)}, "lab could not be built")
        (group,) = collect(load(s, "mixed"), THROUGHPUT)
        assert group.values == [9 * GBIT, 8 * GBIT]
        assert [r.repetition for r in group.ok_runs] == [0, 1]
        assert [r.repetition for r in group.failed] == [2]


def test_groups_by_a_parameter_pool_the_others(store: ResultStore) -> None:
    data = load(store, "ring")
    by_hops = collect(data, THROUGHPUT, by=["hops"])
    assert [g.label for g in by_hops] == ["hops=1", "hops=4", "hops=8"]
    assert len(by_hops[0].values) == 6
    eight = by_hops[2]
    assert len(eight.values) == 3 and len(eight.failed) == 3 and not eight.all_failed
    ecmp = collect(data, THROUGHPUT, filters=[("routing", "ecmp")], by=["hops"])
    assert ecmp[2].all_failed
    assert len(pooled(ecmp).values) == 6
    with pytest.raises(
        SelectionError, match="no sweep parameter 'rate'; parameters: hops, routing"
    ):
        collect(data, THROUGHPUT, by=["rate"])
    with pytest.raises(SelectionError, match="no sweep parameter"):
        collect(data, THROUGHPUT, filters=[("rate", "1")])


def test_auto_kind_uses_intervals_only_without_summaries(store: ResultStore) -> None:
    data = load(store, "ring")
    rtt = MetricRef("ping", "rtt", "ms")
    assert sample_kind(data, THROUGHPUT, "auto") == "summary"
    assert sample_kind(data, rtt, "auto") == "intervals"
    one = collect(data, rtt, filters=[("hops", "1"), ("routing", "static")])[0]
    assert len(one.values) == 15  # 5 per-packet samples × 3 runs
    intervals = collect(data, THROUGHPUT, filters=[("hops", "1")], kind="intervals")
    assert len(intervals[0].values) == 6
    series = run_series(data, THROUGHPUT, [("hops", "1"), ("routing", "ecmp")])
    assert len(series) == 3 and list(series[0].t) == [0.0, 1.0]


def test_reducers() -> None:
    values = [4.0, 1.0, 3.0, 2.0, 10.0]
    assert REDUCERS["median"](values) == 3.0
    assert REDUCERS["mean"](values) == 4.0
    assert (REDUCERS["min"](values), REDUCERS["max"](values)) == (1.0, 10.0)
    assert REDUCERS["stddev"](values) == pytest.approx(np.std(values, ddof=1))
    assert REDUCERS["p99"](values) == pytest.approx(np.percentile(values, 99))
    assert percentile(50)(values) == 3.0 and percentile(50).__name__ == "p50"
    assert math.isnan(stddev([1.0]))
    # a constant sample's rounding noise (numpy: 6.8e-14 here) is no spread, as the
    # end-of-run table (exact arithmetic) prints it
    assert np.std([0.35] * 3, ddof=1) > 0
    assert stddev([0.35] * 3) == 0.0 and stddev([1e-3, 1e-3 + 1e-9]) > 0
    with pytest.raises(ValueError, match="no values"):
        REDUCERS["median"]([])
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile(101)


def test_mean_confidence_interval_matches_scipy() -> None:
    values = [10.0, 12.0, 11.0, 13.0, 9.5]
    low, high = mean_ci(values, 0.95)
    ref = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert (low, high) == pytest.approx(ref)
    assert mean_ci([3.0], 0.95) == (3.0, 3.0)


def test_a_metric_named_as_its_measurement_is_labelled_once() -> None:
    """`convergence convergence` in tables and plot titles."""
    assert MetricRef("convergence", "convergence", "s").label == "convergence"
    assert str(MetricRef("convergence", "convergence", "s")) == "convergence (s)"
    assert THROUGHPUT.label == "iperf3 throughput"


def test_points_follow_the_files_vary_order_and_its_set_values(tmp_path: Path) -> None:
    """Runs on a cluster end in any order: stat's first block (its reference) and the
    groups are the file's first point, here reordered by the run's --set (the end-of-run
    table had listed the file's order, stat the order the runs ended)."""
    text = "name: o\nvary:\n  cc: [reno, cubic]\n  hops: [2, 8]\n\n# netrig run --set hops=[8,2]\n"
    with ResultStore(tmp_path / "o.db") as s:
        eid = s.begin_experiment("o", text, {})
        for cc, hops in (("cubic", 2), ("reno", 2), ("cubic", 8), ("reno", 8)):
            s.record_run(eid, {"cc": cc, "hops": hops}, 0, "ok", {"iperf3": iperf(GBIT)})
        data = load(s, "o")
        assert [g.label for g in collect(data, THROUGHPUT)] == [
            "cc=reno, hops=8", "cc=reno, hops=2", "cc=cubic, hops=8", "cc=cubic, hops=2"
        ]  # fmt: skip
        assert data.values_of("hops") == [8, 2] and data.values_of("cc") == ["reno", "cubic"]


def test_an_unknown_name_lists_ten_names_and_says_how_many_more(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.db") as s:
        for i in range(13):
            s.begin_experiment(f"e{i:02d}", f"name: e{i:02d}\n", {})
        with pytest.raises(SelectionError) as missing:
            load(s, "nope")
    said = str(missing.value)
    db = tmp_path / "r.db"
    assert "experiments: e00, e01," in said
    assert f"e09, … and 3 more (`netrig results list --db {db}`)" in said
    assert "e10" not in said
