"""Metrics stored per stream: which pool into one metric (ping's per-probe rtt and lost of
several pairs, as the plugin declares) and which never do (the events' per-event values)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrig.base.sample import Sample
from netrig.cli.cmd_compare import compare_text, stat_text
from netrig.experiment.disruption import Applied, derive
from netrig.report.html import render
from netrig.report.plots import PlotRequest, figure, png_bytes
from netrig.results.store import ResultStore
from netrig.stats.stored import SelectionError, collect, load, resolve_metrics

PERIOD = 0.1


def probes(lost_from: float | None, end: float = 10.0, stream: str | None = None,
           rtt: float = 0.1) -> list[Sample]:  # fmt: skip
    """ping's per-probe samples: a probe every 100 ms, lost from `lost_from` to the end."""
    out = []
    for i in range(round(end / PERIOD)):
        t = i * PERIOD
        if lost_from is not None and t >= lost_from - 1e-9:
            out.append(Sample("lost", 1, "packets", t, stream))
        else:
            out.append(Sample("rtt", rtt + i * 1e-4, "ms", t, stream))
    return out


def never_back(tmp_path: Path) -> Path:
    """A rate change at 1 s, a cut at 2 s, and traffic lost from 2 s to the end: the run
    stores `outage_at_least` and no `reconvergence`; the rate change's own outage (0 s)
    and reconvergence (0 s) are per-event values (stream = the event's label)."""
    events = [Applied("link n3-n4 rate 10mbit @ 1s", 1.0), Applied("link n1-n2 down @ 2s", 2.0)]
    path = tmp_path / "ev.db"
    with ResultStore(path) as store:
        eid = store.begin_experiment("ev", "name: ev\n", {}, {"ping": "ping"})
        for rep in range(3):
            ping = probes(2.0)
            derived = derive(events, [("ping", s) for s in ping])
            store.record_run(eid, {}, rep, "ok", {"ping": ping, "events": derived})
        store.finish_experiment(eid, "ok")
    return path


def test_per_event_values_never_pass_for_the_runs_metrics(tmp_path: Path) -> None:
    """A stream of `events` is an event: its outage is that event's, not the run's. They had
    become headline metrics "events outage (s), pooled over 1 streams" of 0 s, in stat,
    compare, plot and the report, for traffic that never came back."""
    path = never_back(tmp_path)
    with ResultStore(path) as store:
        data = load(store, "ev")
        shown = {str(m) for m in resolve_metrics(data)}
        assert "events outage_at_least (s)" in shown and "events packets_lost (packets)" in shown
        assert not any("pooled" in m for m in shown), shown
        assert not any(m.startswith(("events outage (", "events reconvergence")) for m in shown)
        for name in ("outage", "reconvergence", "event_at"):
            with pytest.raises(SelectionError, match=f"no metric '{name}'"):
                resolve_metrics(data, [name])
        (at_least,) = resolve_metrics(data, ["outage_at_least"])
        assert [g.values for g in collect(data, at_least)] == [[8.0, 8.0, 8.0]]
        text, code = stat_text(store, "ev", summary_only=True)
        assert code == 0 and "== events outage_at_least (s)" in text
        assert "events outage (s)" not in text and "reconvergence" not in text
        assert "pooled" not in text
        text, _ = compare_text(store, "ev", "ev")
        assert "events outage (s)" not in text and "reconvergence" not in text
        with pytest.raises(SelectionError, match="no metric 'reconvergence'"):
            figure(data, PlotRequest(kind="box", y="reconvergence"))
        html = render(data)
        assert "events outage_at_least" in html
        assert "events outage<" not in html and "reconvergence" not in html


def test_only_the_metrics_a_plugin_declares_pool_over_streams(tmp_path: Path) -> None:
    """ping's per-probe rtt and lost of several pairs pool (Measurement.pooled_metrics); a
    per-stream-only metric of another plugin (a command's per-stream numbers) does not."""
    with ResultStore(tmp_path / "p.db") as store:
        eid = store.begin_experiment("p", "name: p\n", {}, {"ping": "ping", "cmd": "command"})
        for rep in range(3):
            ping = probes(None, 1.0, "n1>n2") + probes(None, 1.0, "n2>n1", rtt=0.2)
            cmd = [Sample("x", 1.0 + rep, "", None, "a"), Sample("x", 2.0, "", None, "b")]
            store.record_run(eid, {}, rep, "ok", {"ping": ping, "cmd": cmd})
        store.finish_experiment(eid, "ok")
        data = load(store, "p")
        (rtt,) = resolve_metrics(data, ["rtt"])
        assert str(rtt) == "ping rtt (ms), pooled over 2 streams"
        assert [len(g.values) for g in collect(data, rtt)] == [3 * 2 * 10]
        with pytest.raises(SelectionError, match="no metric 'x'"):
            resolve_metrics(data, ["x"])
        png = png_bytes(figure(data, PlotRequest(kind="cdf", y="rtt", intervals=True)))
        assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_metric_whole_in_some_runs_and_per_stream_in_others(tmp_path: Path) -> None:
    """ping's rtt of one pair is stored whole, of several pairs per stream only: compare of
    the two (either way round) had said "+ has 0 value(s)", exit 1, the reference resolved
    on A applied to B; a sweep of `all_pairs: [false, true]` had no value at true. Each run
    now gives its whole values if it has them, else its streams pooled."""
    with ResultStore(tmp_path / "m.db") as store:
        for name, streams in (("one", [None]), ("many", ["n1>n2", "n2>n1"])):
            eid = store.begin_experiment(name, f"name: {name}\n", {}, {"ping": "ping"})
            for rep in range(3):
                ping = [s for stream in streams for s in probes(None, 1.0, stream)]
                store.record_run(eid, {}, rep, "ok", {"ping": ping})
            store.finish_experiment(eid, "ok")
        text = "name: sweep\nvary:\n  all_pairs: [false, true]\n"
        eid = store.begin_experiment("sweep", text, {}, {"ping": "ping"})
        for rep in range(3):
            store.record_run(eid, {"all_pairs": False}, rep, "ok", {"ping": probes(None, 1.0)})
            both = probes(None, 1.0, "n1>n2") + probes(None, 1.0, "n2>n1", rtt=0.2)
            store.record_run(eid, {"all_pairs": True}, rep, "ok", {"ping": both})
        store.finish_experiment(eid, "ok")

        text, code = compare_text(store, "one", "many", ["rtt"])
        assert code == 0, text
        assert "== ping rtt (ms) per-interval samples\n+ many: ping rtt (ms), pooled over 2 " \
            "streams\n" in text  # fmt: skip
        assert "x  30 " in text and "+  60 " in text
        text, code = compare_text(store, "many", "one", ["rtt"])
        assert code == 0 and "x  60 " in text and "+  30 " in text
        assert "+ one: ping rtt (ms)\n" in text

        data = load(store, "sweep")
        (rtt,) = resolve_metrics(data, ["rtt"])
        assert str(rtt) == (
            "ping rtt (ms), pooled over 2 streams where a run stores it only per stream"
        )
        assert [(g.label, len(g.values)) for g in collect(data, rtt)] == [
            ("all_pairs=false", 30), ("all_pairs=true", 60)
        ]  # fmt: skip
        text, code = compare_text(store, "sweep:all_pairs=false", "sweep:all_pairs=true", ["rtt"])
        assert code == 0 and "x  30 " in text and "+  60 " in text
        text, code = stat_text(store, "sweep", by="all_pairs", metric_names=["rtt"], summary_only=True)
        assert code == 0 and "x  30 " in text and "+  60 " in text
        png = png_bytes(figure(data, PlotRequest(kind="timeseries", y="rtt", x="all_pairs")))
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
