"""netrig.report.plots and `netrig plot`: files of each kind and format, failed points as
gaps with a mark (never zeros), unit scaling, error bars, and the errors that name a fix."""

from __future__ import annotations

import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_hex
from shootout_data import CONCURRENCY, base_rate

from netrig.base.sample import Sample
from netrig.base.scale import display_scale
from netrig.report.plots import (
    EMPTY_GID,
    FAILED_COLOR,
    FAILED_GID,
    PlotRequest,
    figure,
    save,
)
from netrig.results.store import ResultStore
from netrig.stats.stored import SelectionError, StoredExperiment, load, mean_ci

REQUESTS = {
    "line": PlotRequest(kind="line", x="concurrency", y="throughput", group="balancer"),
    "box": PlotRequest(kind="box", x="concurrency", y="rtt", group="balancer"),
    "cdf": PlotRequest(kind="cdf", y="rtt", x="concurrency", filters=(("balancer", "nginx"),)),
    "timeseries": PlotRequest(
        kind="timeseries", y="throughput", filters=(("balancer", "pen"),), median=True
    ),
}


@pytest.fixture
def data(shootout_db: Path) -> StoredExperiment:
    with ResultStore(shootout_db) as store:
        return load(store, "shootout")


def png_size(blob: bytes) -> tuple[int, int]:
    assert blob[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert blob[12:16] == b"IHDR"
    return struct.unpack(">II", blob[16:24])


@pytest.mark.parametrize("kind", list(REQUESTS))
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_each_kind_writes_a_real_file(
    data: StoredExperiment, tmp_path: Path, kind: str, fmt: str
) -> None:
    path = save(figure(data, REQUESTS[kind]), tmp_path / f"{kind}.{fmt}")
    blob = path.read_bytes()
    assert len(blob) > 5000
    if fmt == "png":
        assert png_size(blob) == (800, 450)
    elif fmt == "svg":
        assert blob.startswith(b"<?xml") and b"<svg" in blob[:2000]
    else:
        assert blob.startswith(b"%PDF-")


def test_size_and_bad_suffix(data: StoredExperiment, tmp_path: Path) -> None:
    req = PlotRequest(kind="line", x="concurrency", group="balancer", size=(12.0, 6.0))
    assert png_size(save(figure(data, req), tmp_path / "big.png").read_bytes()) == (1200, 600)
    with pytest.raises(ValueError, match=r"png, \.svg or \.pdf"):
        save(figure(data, req), tmp_path / "fig.jpg")


def series_line(ax, label: str):
    lines = [line for line in ax.lines if line.get_gid() == f"series:{label}"]
    assert len(lines) == 1, [line.get_gid() for line in ax.lines]
    return lines[0]


def test_failed_point_leaves_a_gap_and_a_red_mark(data: StoredExperiment) -> None:
    ax = figure(data, REQUESTS["line"]).axes[0]
    nginx = series_line(ax, "balancer=nginx")
    x, y = np.asarray(nginx.get_xdata(), float), np.asarray(nginx.get_ydata(), float)
    assert list(x) == CONCURRENCY
    assert math.isnan(y[x.tolist().index(1000)])  # a gap, not a zero
    assert np.isfinite(y[:3]).all() and (y[:3] > 0).all()
    marks = [line for line in ax.lines if line.get_gid() == FAILED_GID and line.get_marker() == "x"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [1000]
    assert marks[0].get_color() == "#d62728"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        "balancer=pen",
        "balancer=haproxy",
        "balancer=nginx",
        "balancer=nginx: failed",
    ]
    # the other balancers have a value at 1000
    assert np.isfinite(np.asarray(series_line(ax, "balancer=pen").get_ydata(), float)).all()


def test_single_line_marks_failure_with_plain_legend(data: StoredExperiment) -> None:
    req = PlotRequest(kind="line", x="concurrency", filters=(("balancer", "nginx"),))
    ax = figure(data, req).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["throughput", "failed"]


def test_partial_failure_is_annotated(data: StoredExperiment) -> None:
    ax = figure(data, REQUESTS["line"]).axes[0]
    assert "1 of 3 failed" in [t.get_text() for t in ax.texts]


def test_units_are_scaled_and_labelled(data: StoredExperiment) -> None:
    ax = figure(data, REQUESTS["line"]).axes[0]
    assert ax.get_ylabel() == "throughput (Gbit/s)"
    assert ax.get_xlabel() == "concurrency"
    pen = np.asarray(series_line(ax, "balancer=pen").get_ydata(), float)
    expected = [base_rate(c, "pen") / 1e9 for c in CONCURRENCY]
    assert pen == pytest.approx(expected, rel=0.04)
    box = figure(data, REQUESTS["box"]).axes[0]
    assert box.get_ylabel() == "rtt (ms)"  # a few ms at 1000
    cdf = figure(data, REQUESTS["cdf"]).axes[0]
    assert cdf.get_xlabel() == "rtt (µs)"  # nginx without 1000 stays below 1 ms


def test_display_scale() -> None:
    assert display_scale("bit/s", [9.4e9]).unit == "Gbit/s"
    assert display_scale("bit/s", [950e6, 10e6]).unit == "Mbit/s"
    assert display_scale("pps", [14.88e6]).unit == "Mpps"
    assert display_scale("s", [0.00042]).unit == "µs"
    assert display_scale("s", [0.042]).unit == "ms"
    assert display_scale("ms", [1500.0]).unit == "s"
    assert display_scale("%", [50.0]).unit == "%"
    assert display_scale("bit/s", []).factor == 1.0
    assert display_scale("bit/s", [9.4e9]).text(9.41e9) == "9.41"


def test_ci_bars_are_the_mean_confidence_interval(data: StoredExperiment) -> None:
    req = PlotRequest(
        kind="line", x="concurrency", filters=(("balancer", "pen"),), ci=True, confidence=0.9
    )
    fig = figure(data, req)
    ax = fig.axes[0]
    assert "90% confidence interval of the mean" in ax.get_title(loc="left")
    container = ax.containers[0]
    segments = container.lines[2][0].get_segments()
    values = [r for r in data.runs if r.run.point == {"concurrency": 1, "balancer": "pen"}]
    raw = [
        s.value for r in values for name, s in r.samples if s.metric == "throughput" and s.t is None
    ]
    low, high = mean_ci(raw, 0.9)
    assert segments[0][:, 1] == pytest.approx([low / 1e9, high / 1e9])


def test_box_and_cdf_use_per_packet_samples(data: StoredExperiment) -> None:
    ax = figure(data, REQUESTS["box"]).axes[0]
    # 4 concurrencies × 3 balancers, minus nginx at 1000 which failed
    boxes = [p for p in ax.patches if p.get_gid() != FAILED_GID]
    assert len(boxes) == 11
    marks = [line for line in ax.lines if line.get_gid() == FAILED_GID and line.get_marker() == "x"]
    assert len(marks) == 1 and len(marks[0].get_xdata()) == 1
    cdf = figure(data, REQUESTS["cdf"]).axes[0]
    labels = [t.get_text() for t in cdf.get_legend().get_texts()]
    assert labels == [
        "concurrency=1 (N=30)",
        "concurrency=10 (N=30)",
        "concurrency=100 (N=30)",
        "concurrency=1000: failed (3 runs)",
    ]
    for line in cdf.lines:
        if line.get_gid() != FAILED_GID:
            y = np.asarray(line.get_ydata(), float)
            assert y[0] == 0.0 and y[-1] == 1.0 and (np.diff(y) >= 0).all()


def test_timeseries_lines_per_run_or_median(data: StoredExperiment) -> None:
    per_run = PlotRequest(kind="timeseries", y="throughput", filters=(("balancer", "pen"),))
    ax = figure(data, per_run).axes[0]
    assert ax.get_xlabel() == "time (s)"
    runs = [line for line in ax.lines if (line.get_gid() or "").startswith("series:")]
    assert len(runs) == 12  # 4 points × 3 repetitions
    # red means failed: four series never get matplotlib's fourth colour, red
    assert len({to_hex(line.get_color()) for line in runs}) == 4
    assert FAILED_COLOR not in {to_hex(line.get_color()) for line in runs}
    assert list(runs[0].get_xdata()) == [0, 1, 2, 3, 4]
    ax = figure(data, REQUESTS["timeseries"]).axes[0]
    medians = [line for line in ax.lines if (line.get_gid() or "").startswith("series:")]
    assert len(medians) == 4
    assert "median of 3" in medians[0].get_label()


def test_log_axes(data: StoredExperiment) -> None:
    req = PlotRequest(kind="line", x="concurrency", group="balancer", log_x=True, log_y=True)
    ax = figure(data, req).axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    with pytest.raises(SelectionError, match="--log-x needs numbers"):
        figure(
            data,
            PlotRequest(kind="line", x="balancer", log_x=True, filters=(("concurrency", "1"),)),
        )


def test_log_y_of_zeros_says_so(tmp_path: Path) -> None:
    """A zero had vanished from a log axis with only matplotlib's warning on stderr."""
    with ResultStore(tmp_path / "z.db") as store:
        eid = store.begin_experiment("zeros", "name: zeros\n", {})
        for n, value in ((1, 0.0), (2, 5.0)):
            store.record_run(eid, {"n": n}, 1, "ok", {"m": [Sample("lost", value, "packets")]})
        with pytest.raises(SelectionError, match="values of 0 or below"):
            figure(load(store, "zeros"), PlotRequest(kind="line", x="n", y="lost", log_y=True))
        with pytest.raises(SelectionError, match="a CDF's y axis is the fraction"):
            figure(load(store, "zeros"), PlotRequest(kind="cdf", y="lost", log_y=True))
        # positive values pass, even where a mean's confidence interval dips below 0
        store.record_run(eid, {"n": 1}, 2, "ok", {"m": [Sample("lost", 9.0, "packets")]})
        kept = load(store, "zeros")
        kept.runs = [r for r in kept.runs if r.run.repetition == 2 or r.run.point["n"] == 2]
        ax = figure(kept, PlotRequest(kind="line", x="n", y="lost", log_y=True)).axes[0]
        assert ax.get_yscale() == "log"


def test_errors_say_how_to_fix(data: StoredExperiment) -> None:
    with pytest.raises(SelectionError, match=r"also varies balancer .*--where balancer=pen"):
        figure(data, PlotRequest(kind="line", x="concurrency"))
    with pytest.raises(SelectionError, match="no sweep parameter 'hops'"):
        figure(data, PlotRequest(kind="line", x="hops"))
    with pytest.raises(SelectionError, match="no metric 'jitter'"):
        figure(data, PlotRequest(kind="line", x="concurrency", y="jitter"))
    with pytest.raises(SelectionError, match="no per-interval samples"):
        figure(data, PlotRequest(kind="timeseries", y="rtt_avg"))


def test_filter_that_matches_no_run_is_refused(data: StoredExperiment) -> None:
    """A value the sweep never had (7, fast, 1.0 where 1 is not a value) had drawn an
    empty picture; an unknown parameter is named before any other complaint."""
    for where, wanted in (
        (("concurrency", "7"), "concurrency=7"),
        (("balancer", "fast"), "balancer=fast"),
        (("concurrency", "1.5"), "concurrency=1.5"),
    ):
        with pytest.raises(SelectionError) as caught:
            figure(data, PlotRequest(kind="line", x="concurrency", filters=(where,)))
        assert f"no run of experiment 1 matches {wanted}" in str(caught.value)
    with pytest.raises(SelectionError, match=r"\(shootout has balancer pen, haproxy, nginx\)"):
        figure(data, PlotRequest(kind="cdf", y="rtt", filters=(("balancer", "fast"),)))
    # each value exists, but never together
    with pytest.raises(SelectionError, match="matches concurrency=1,balancer=squid"):
        figure(
            data,
            PlotRequest(kind="box", y="rtt", filters=(("concurrency", "1"), ("balancer", "squid"))),
        )
    with pytest.raises(SelectionError, match=r"no sweep parameter 'bogus'; parameters: concurr"):
        figure(data, PlotRequest(kind="line", x="concurrency", filters=(("bogus", "1"),)))
    # 1.0 is the value 1: that one matches and draws
    ax = figure(
        data, PlotRequest(kind="line", x="concurrency", filters=(("balancer", "pen"),
                                                                 ("concurrency", "1.0")))
    ).axes[0]
    assert len(ax.lines) >= 1


def test_plot_command_of_no_run_writes_nothing(shootout_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "w7.png"
    db = ("--db", str(shootout_db))
    where = netrig("plot", "shootout", "--x", "concurrency", "--where", "concurrency=7",
                   "--where", "balancer=pen", "-o", str(out), *db)  # fmt: skip
    assert where.returncode == 2 and where.stdout == "", where.stdout
    assert "no run of experiment 1 matches concurrency=7,balancer=pen" in where.stderr
    assert "concurrency 1, 10, 100, 1000" in where.stderr
    selector = netrig("plot", "shootout:balancer=fast", "--x", "concurrency", "-o", str(out), *db)
    assert selector.returncode == 2 and "matches balancer=fast" in selector.stderr
    bogus = netrig("plot", "shootout", "--x", "concurrency", "--where", "bogus=1", "-o", str(out),
                   *db)  # fmt: skip
    assert bogus.returncode == 2 and "no sweep parameter 'bogus'" in bogus.stderr
    assert "parameters: concurrency, balancer" in bogus.stderr
    assert not out.exists()
    # report covers the whole experiment: a filter is named as such, not as an experiment
    report = netrig("report", "shootout:balancer=pen", "-o", str(tmp_path / "r.html"), *db)
    assert report.returncode == 2 and "takes no filters" in report.stderr, report.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("kind", ["line", "box", "cdf"])
def test_a_plot_with_no_value_says_so_instead_of_an_axis_near_zero(
    tmp_path: Path, kind: str
) -> None:
    """Every point failed: the y axis had run 0–0.05 (matplotlib's default), which read
    as values near zero."""
    with ResultStore(tmp_path / "f.db") as store:
        eid = store.begin_experiment("down", "name: down\nvary:\n  c: [5, 50]\n", {})
        for c in (5, 50):
            for rep in (1, 2):
                partial = {"iperf3": [Sample("throughput", 3.0, "bit/s")]}
                store.record_run(eid, {"c": c}, rep, "failed", partial, "iperf3: refused")
        down = load(store, "down")
    ax = figure(down, PlotRequest(kind=kind, x="c")).axes[0]  # type: ignore[arg-type]
    notes = [t.get_text() for t in ax.texts if t.get_gid() == EMPTY_GID]
    assert notes == ["no value of iperf3 throughput to show: every run failed (4)"]
    assert list(ax.get_yticks()) == []
    if kind == "cdf":
        assert list(ax.get_xticks()) == []


def test_a_plot_with_values_has_no_empty_note(data: StoredExperiment) -> None:
    ax = figure(data, REQUESTS["line"]).axes[0]
    assert not [t for t in ax.texts if t.get_gid() == EMPTY_GID]
    assert len(ax.get_yticks()) > 2


def test_experiment_without_sweep(shootout_db: Path) -> None:
    with ResultStore(shootout_db) as store:
        single = load(store, "single")
    with pytest.raises(SelectionError, match=r"no `vary:`.*--kind box"):
        figure(single, PlotRequest(kind="line"))
    ax = figure(single, PlotRequest(kind="box")).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["all runs"]
    assert ax.get_ylabel() == "throughput (Gbit/s)"


def netrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netrig", *args], capture_output=True, text=True, timeout=60
    )


def test_plot_command(shootout_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "shootout.svg"
    done = netrig(
        "plot",
        "shootout",
        "--x",
        "concurrency",
        "--y",
        "throughput",
        "--group",
        "balancer",
        "--log-x",
        "-o",
        str(out),
        "--db",
        str(shootout_db),
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b"<?xml") and b"failed" in out.read_bytes()
    bad = netrig(
        "plot",
        "shootout",
        "--x",
        "concurrency",
        "-o",
        str(tmp_path / "a.png"),
        "--db",
        str(shootout_db),
    )
    assert bad.returncode == 2 and "also varies balancer" in bad.stderr
    assert not (tmp_path / "a.png").exists()
    suffix = netrig("plot", "shootout", "-o", str(tmp_path / "a.gif"), "--db", str(shootout_db))
    assert suffix.returncode == 2 and ".png, .svg or .pdf" in suffix.stderr


def test_timeseries_marks_the_events_of_runs_with_a_timeline(tmp_path: Path) -> None:
    path = tmp_path / "cut.db"
    with ResultStore(path) as store:
        eid = store.begin_experiment("cut", "name: cut\n", {})
        for rep, actual in enumerate([2.01, 2.03, 2.02]):
            flow = [Sample("throughput", 0.0 if 2 <= t < 3 else 9e9, "bit/s", t) for t in range(6)]
            events = [Sample("event_at", actual, "s", stream="link n3-n4 down @ 2s")]
            store.record_run(eid, {}, rep, "ok", {"iperf3": flow, "events": events})
        store.finish_experiment(eid, "ok")
        data = load(store, "cut")
    ax = figure(data, PlotRequest(kind="timeseries", y="throughput")).axes[0]
    (line,) = [x for x in ax.lines if x.get_gid() == "event:link n3-n4 down @ 2s"]
    assert list(line.get_xdata()) == [2.02, 2.02]  # the median of when it happened
    assert [t.get_text() for t in ax.texts] == ["link n3-n4 down"]


def test_median_of_runs_whose_intervals_start_a_few_ms_apart(tmp_path: Path) -> None:
    """With events, each run's intervals are shifted by when its tool started: the median is
    still one point per interval, not a zigzag between runs."""
    path = tmp_path / "shift.db"
    with ResultStore(path) as store:
        eid = store.begin_experiment("shift", "name: shift\n", {})
        for rep, shift in enumerate([0.003, 0.011, 0.007]):
            flow = [
                Sample("throughput", 1e9 * (rep + 1), "bit/s", i * 0.1 + shift) for i in range(20)
            ]
            store.record_run(eid, {}, rep, "ok", {"iperf3": flow})
        store.finish_experiment(eid, "ok")
        data = load(store, "shift")
    ax = figure(data, PlotRequest(kind="timeseries", y="throughput", median=True)).axes[0]
    (line,) = [x for x in ax.lines if (x.get_gid() or "").startswith("series:")]
    assert len(line.get_xdata()) == 20
    assert set(np.round(line.get_ydata(), 6)) == {2.0}  # the middle run, in Gbit/s


def test_timeseries_breaks_its_line_where_probes_were_lost(tmp_path: Path) -> None:
    """ping has no rtt for a lost probe: the line stops at the outage and starts again after
    it, rather than drawing a slope across it; a run of one sample still shows, as a dot."""
    path = tmp_path / "gap.db"
    with ResultStore(path) as store:
        eid = store.begin_experiment("gap", "name: gap\n", {})
        times = [i * 0.01 for i in range(100) if not 30 <= i < 70]  # 0.3–0.7 s lost
        store.record_run(eid, {}, 0, "ok", {"ping": [Sample("rtt", 0.1, "ms", t) for t in times]})
        store.record_run(eid, {}, 1, "ok", {"ping": [Sample("rtt", 0.2, "ms", 0.5)]})
        store.finish_experiment(eid, "ok")
        data = load(store, "gap")
    ax = figure(data, PlotRequest(kind="timeseries", y="rtt")).axes[0]
    broken, lone = [x for x in ax.lines if (x.get_gid() or "").startswith("series:")]
    y = np.asarray(broken.get_ydata(), float)
    assert np.isnan(y).sum() == 1 and len(y) == len(times) + 1
    x = np.asarray(broken.get_xdata(), float)
    (gap,) = np.nonzero(np.isnan(y))[0]
    assert x[gap - 1] == pytest.approx(0.29) and x[gap + 1] == pytest.approx(0.70)
    assert broken.get_marker() in ("None", None, "")  # a line: no dots
    assert lone.get_marker() == "." and list(lone.get_xdata()) == [0.5]

