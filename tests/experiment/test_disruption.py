"""Derived metrics of a run with events, from probe and throughput series built here.

The series are what `ping per_probe` and iperf3's intervals produce; the numbers are chosen
so each definition of the module docstring has one exact answer.
"""

from __future__ import annotations

import pytest

from netrig.base.sample import Sample
from netrig.experiment.disruption import Applied, derive

PERIOD = 0.01


def probes(
    lost: list[tuple[float, float]], end: float = 6.0, stream: str | None = None
) -> list[tuple[str, Sample]]:
    """A probe every 10 ms from 0 to end; those in a [from, to) range of `lost` are lost."""
    out = []
    for i in range(round(end / PERIOD)):
        t = i * PERIOD
        if any(a - 1e-9 <= t < b - 1e-9 for a, b in lost):
            out.append(("ping", Sample("lost", 1, "packets", t, stream)))
        else:
            out.append(("ping", Sample("rtt", 0.1, "ms", t, stream)))
    return out


def flow(values: list[float], width: float = 0.5) -> list[tuple[str, Sample]]:
    return [("iperf3", Sample("throughput", v, "bit/s", i * width)) for i, v in enumerate(values)]


def by_stream(samples: list[Sample], metric: str) -> dict[str | None, float]:
    return {s.stream: s.value for s in samples if s.metric == metric}


def test_a_cut_with_a_reroute_gives_outage_loss_and_reconvergence() -> None:
    # cut at 2.0 s; probes lost from 2.05 to 2.80 (the protocol's detection + reroute)
    out = derive([Applied("link n2-n3 down @ 2s", 2.0)], probes([(2.05, 2.80)]))
    outage = by_stream(out, "outage")
    assert outage[None] == pytest.approx(0.75)
    assert outage["link n2-n3 down @ 2s"] == pytest.approx(0.75)
    assert by_stream(out, "packets_lost")[None] == 75
    assert by_stream(out, "reconvergence")[None] == pytest.approx(0.80)
    assert by_stream(out, "recovered")[None] == 1
    assert by_stream(out, "event_at")["link n2-n3 down @ 2s"] == 2.0


def test_static_routing_is_down_until_the_link_returns() -> None:
    events = [Applied("link a-b down @ 1s", 1.0), Applied("link a-b up @ 3s", 3.0)]
    out = derive(events, probes([(1.0, 3.02)]))
    assert by_stream(out, "outage")["link a-b down @ 1s"] == pytest.approx(2.02)
    assert by_stream(out, "reconvergence")["link a-b down @ 1s"] == pytest.approx(2.02)
    # the cut's outage goes on 20 ms past `up`: all of it is the cut's (it had been counted
    # again as the up event's, 2 probes and an outage of its own); `up` is what it took
    # for traffic to come back after the link did
    assert by_stream(out, "packets_lost")["link a-b down @ 1s"] == 202
    assert by_stream(out, "packets_lost")["link a-b up @ 3s"] == 0
    assert by_stream(out, "outage")["link a-b up @ 3s"] == 0
    assert by_stream(out, "reconvergence")["link a-b up @ 3s"] == pytest.approx(0.02)
    assert by_stream(out, "packets_lost")[None] == 202
    assert by_stream(out, "reconvergence")[None] == pytest.approx(2.02)


def test_a_probe_in_flight_when_the_link_is_cut_is_the_cuts() -> None:
    """Lost from 4.995 s on, the cut at 5 s: its outage, not one under way before it."""
    events = [Applied("link a-b rate 10mbit @ 1s", 1.0), Applied("link a-b down @ 5s", 5.0)]
    out = derive(events, probes([(4.99, 5.5)]))
    assert by_stream(out, "outage")["link a-b down @ 5s"] == pytest.approx(0.5)
    assert by_stream(out, "outage")["link a-b rate 10mbit @ 1s"] == 0


def test_no_loss_is_a_measured_zero_and_a_flap_counts_every_gap() -> None:
    quiet = derive([Applied("link a-b rate 10000000 @ 1s", 1.0)], probes([]))
    assert by_stream(quiet, "outage")[None] == 0
    assert by_stream(quiet, "packets_lost")[None] == 0
    flapping = derive([Applied("node n5 stop @ 1s", 1.0)], probes([(1.1, 1.3), (1.5, 1.6)]))
    assert by_stream(flapping, "outage")[None] == pytest.approx(0.3)  # both gaps
    assert by_stream(flapping, "outage")["node n5 stop @ 1s"] == pytest.approx(0.2)  # the first
    assert by_stream(flapping, "reconvergence")[None] == pytest.approx(0.6)  # back for good at 1.6


def test_a_restored_link_that_costs_nothing_does_not_count_as_slow() -> None:
    """Rerouted at once on `down`, nothing lost on `up`: the run's reconvergence is the
    slowest event's own, not the time between the events."""
    events = [Applied("link a-b down @ 3s", 3.0), Applied("link a-b up @ 8s", 8.0)]
    out = derive(events, probes([(3.0, 3.05)], end=12.0))
    assert by_stream(out, "reconvergence")["link a-b down @ 3s"] == pytest.approx(0.05)
    assert by_stream(out, "reconvergence")["link a-b up @ 8s"] == 0
    assert by_stream(out, "reconvergence")[None] == pytest.approx(0.05)


def test_traffic_that_never_returns_has_no_reconvergence_and_only_a_bound_on_its_outage() -> None:
    """The outage went on past the end of the run: what is known is that it lasted at least
    the rest of the run, stored under its own name so no statistic averages it with outages
    that ended."""
    out = derive([Applied("link a-b down @ 1s", 1.0)], probes([(1.0, 9.0)], end=4.0))
    assert by_stream(out, "recovered")[None] == 0
    metrics = {s.metric for s in out}
    assert "reconvergence" not in metrics and "outage" not in metrics
    assert by_stream(out, "outage_at_least")[None] == pytest.approx(3.0)  # the rest of the run
    assert by_stream(out, "outage_at_least")["link a-b down @ 1s"] == pytest.approx(3.0)


def test_an_outage_that_ended_is_measured_even_if_a_later_one_did_not() -> None:
    """Back at 1.5 s, lost again from 2 s to the end: the event's first outage is a measured
    0.5 s; the run's total time without delivery is only a bound."""
    out = derive([Applied("node n5 stop @ 1s", 1.0)], probes([(1.0, 1.5), (2.0, 9.0)], end=3.0))
    assert by_stream(out, "outage")["node n5 stop @ 1s"] == pytest.approx(0.5)
    assert by_stream(out, "outage_at_least")[None] == pytest.approx(1.5)
    assert None not in by_stream(out, "outage")
    assert by_stream(out, "recovered")[None] == 0


def test_throughput_before_during_and_after_the_recovery() -> None:
    # 0.5 s intervals: 10 before the cut at 2 s, 0 while down (probes back at 3.0), 8 after
    series = flow([10, 10, 10, 10, 0, 0, 8, 8, 8, 8])
    out = derive([Applied("link a-b down @ 2s", 2.0)], probes([(2.0, 3.0)]) + series)
    assert by_stream(out, "throughput_before")[None] == 10
    assert by_stream(out, "throughput_during")[None] == 0
    assert by_stream(out, "throughput_after")[None] == 8


def test_without_probes_the_slow_intervals_mark_the_disruption() -> None:
    series = flow([10, 10, 10, 10, 1, 2, 9, 9])
    out = derive([Applied("link a-b down @ 2s", 2.0)], series)
    assert by_stream(out, "throughput_during")[None] == pytest.approx(1.5)
    assert by_stream(out, "throughput_after")[None] == 9
    assert "outage" not in {s.metric for s in out}  # no probe: no claim about packets


def test_two_iperf3_flows_each_by_name_and_their_sum_without_a_stream() -> None:
    """With a UDP and a TCP iperf3 the phases had been stored under the flows' names only,
    which no stat, plot or report reads."""
    udp = [("udp", s) for _, s in flow([4, 4, 4, 4, 0, 0, 4, 4])]
    tcp = [("tcp", s) for _, s in flow([6, 6, 6, 6, 0, 0, 5, 5])]
    out = derive([Applied("link a-b down @ 2s", 2.0)], [*udp, *tcp])
    before = by_stream(out, "throughput_before")
    assert (before["udp"], before["tcp"], before[None]) == (4, 6, 10)
    assert by_stream(out, "throughput_after")[None] == 9


def test_several_probe_streams_are_told_apart_and_the_worst_is_the_summary() -> None:
    a = probes([(1.0, 1.2)], end=3.0, stream="n1>n4")
    b = probes([(1.0, 1.5)], end=3.0, stream="n2>n5")
    out = derive([Applied("node n3 stop @ 1s", 1.0)], a + b)
    outage = by_stream(out, "outage")
    assert outage["node n3 stop @ 1s ping n1>n4"] == pytest.approx(0.2)
    assert outage["node n3 stop @ 1s ping n2>n5"] == pytest.approx(0.5)
    assert outage[None] == pytest.approx(0.5)
    assert by_stream(out, "packets_lost")[None] == 70


def test_no_event_applied_derives_nothing() -> None:
    assert derive([], probes([(1.0, 2.0)])) == []


def test_the_summary_shows_what_the_events_did_not_when_they_happened() -> None:
    from netrig.results.summary import headline_metrics

    shown = headline_metrics("events")
    assert shown is not None and "outage" in shown and "throughput_after" in shown
    assert "event_at" not in shown and "recovered" not in shown


def test_without_probes_a_dip_after_the_recovery_is_not_the_disruption() -> None:
    """iperf3 alone, noisy: the first interval back at half of `before` or more ends the
    disruption; the 4 after it is noise of the recovered flow, not more of the cut."""
    series = flow([10, 10, 10, 10, 1, 2, 9, 4, 9, 9])
    out = derive([Applied("node b stop @ 2s", 2.0)], series)
    assert by_stream(out, "throughput_during")[None] == pytest.approx(1.5)
    assert by_stream(out, "throughput_after")[None] == pytest.approx(7.75)
    never = derive([Applied("link a-b down @ 2s", 2.0)], flow([10, 10, 10, 10, 1, 2, 3]))
    assert by_stream(never, "throughput_during")[None] == pytest.approx(2.0)
    assert "throughput_after" not in {s.metric for s in never}  # never back: no `after`


def test_after_a_rate_change_the_traffic_after_it_is_after() -> None:
    """A rate change sets the throughput after it: `after` had begun at the first interval
    back at half of `before` (38 Mbit/s stored "after" on a path cut to 20: one burst),
    or there was none at all."""
    series = flow([50, 50, 50, 50, 30, 12, 18, 22, 19, 21])  # 0.5 s intervals
    out = derive([Applied("link a-b rate off @ 1s", 1.0, "link-rate"),
                  Applied("link b-c rate 20mbit @ 2s", 2.0, "link-rate")], series)  # fmt: skip
    assert by_stream(out, "throughput_during")[None] == pytest.approx(50.0)
    assert by_stream(out, "throughput_after")[None] == pytest.approx((30 + 12 + 18 + 22 + 19 + 21) / 6)
    slower = derive([Applied("link a-b rate 1mbit @ 2s", 2.0, "link-rate")],
                    flow([50] * 4 + [1] * 6))  # fmt: skip
    assert by_stream(slower, "throughput_after")[None] == pytest.approx(1.0)
    assert "throughput_during" not in {s.metric for s in slower}
    # a node named `rate` stopped is no rate change: `after` waits for the traffic's return
    stop = derive([Applied("node rate stop @ 2s", 2.0, "node-stop")],
                  flow([10, 10, 10, 10, 1, 2, 9, 9]))  # fmt: skip
    assert by_stream(stop, "throughput_during")[None] == pytest.approx(1.5)


def test_without_probes_an_interval_begun_before_the_event_is_no_recovery() -> None:
    """The event at 2.06 s lands in the interval begun at 2.0 (still at 60 of 100): that
    interval had ended the disruption at once, and the outage was averaged into `after`."""
    width = 0.1
    values = [100.0] * 20 + [60.0] + [0.0] * 10 + [100.0] * 10  # 2.0: 60, 2.1-3.0: 0
    series = [("iperf3", Sample("throughput", v, "bit/s", round(i * width, 3)))
              for i, v in enumerate(values)]  # fmt: skip
    out = derive([Applied("link a-b down @ 2.06s", 2.06)], series)
    assert by_stream(out, "throughput_during")[None] == pytest.approx(0.0)
    assert by_stream(out, "throughput_after")[None] == pytest.approx(100.0)
