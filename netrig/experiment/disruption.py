"""What a timeline of faults did to the traffic: derived metrics of one run with `events:`.

Inputs are the run's interval samples on the timeline's clock (t = seconds since the first
event could have happened, i.e. since the timeline started) and the events as they were
really applied. Two kinds of series are read:

- probe series: per-probe samples of a `ping` with `per_probe: true` (metric `rtt` for an
  answered probe, `lost` for one that was not), one series per stream;
- throughput series: iperf3's per-interval `throughput` of the whole measurement.

Per event (stream = the event, e.g. `link n8-n9 down @ 2s`), for each probe series:

- `outage` [s]: from the first probe lost after the event to the first one answered after it
  (0 when no probe was lost). When none was answered again the outage was longer than the
  run could see: no `outage` then, but `outage_at_least` [s], from that first loss to the
  end of the run, a lower bound that is never averaged with measured outages;
- `packets_lost` [packets]: probes lost in the outages that began between this event and the
  next, to their ends;
- `reconvergence` [s]: from the event to the first answered probe after the last loss that
  began before the next event — when the path was back for good. Missing (and `recovered` =
  0) when the traffic never came back within the run.

An outage still going on when the next event comes (a cut's, at `link … up`) is the earlier
event's: the later one gets outage 0, no lost probes, and as reconvergence how long after it
the traffic came back.

For the run as a whole (no stream): `outage` (the longest total time without delivery of one
probe series after the first event; `outage_at_least` instead when a series was still
without delivery at the end of the run), `packets_lost` (all series), `reconvergence` (the
slowest event's), and per throughput series `throughput_before`, `throughput_during`,
`throughput_after` [bit/s]: mean of the intervals before the first event, between it and the
recovery, and after the recovery (with several iperf3 measurements, each under its name as
the stream and, without a stream, their sum: stat and plots read the sum; the export has
each). Recovery is when the last event happened or, if later, when
the probes say traffic was back (or, without probes and when the last event was not a rate
change, the start of the first interval from the last event on whose throughput is at
least half of the `before` median; none: no `after`). After a rate change the traffic has
what the new rate gives, not what it had before: `after` is what came after that event.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from netrig.base.sample import Sample

HALF = 0.5  # below this share of the throughput before the events an interval is disrupted
HEADLINE = (  # what the summary table and the report show by default
    "outage",
    "outage_at_least",
    "packets_lost",
    "reconvergence",
    "throughput_before",
    "throughput_during",
    "throughput_after",
)


@dataclass(frozen=True)
class Applied:
    """An event as it happened: its label and when (seconds on the timeline clock)."""

    label: str
    at: float
    kind: str = ""  # as netrig.plan.events.Event has it: link-down, link-rate, node-stop, …


@dataclass(frozen=True)
class ProbeSeries:
    """Probes of one stream in time order: (send time, answered)."""

    name: str
    probes: tuple[tuple[float, bool], ...]
    period: float

    @property
    def end(self) -> float:
        return self.probes[-1][0] + self.period if self.probes else 0.0


def probe_series(samples: Iterable[tuple[str, Sample]]) -> list[ProbeSeries]:
    """Per-probe samples (step name, sample) grouped into series, one per step and stream."""
    groups: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for step, s in samples:
        if s.t is not None and s.metric in ("rtt", "lost"):
            name = f"{step} {s.stream}" if s.stream else step
            groups[name].append((s.t, s.metric == "rtt"))
    out = []
    for name, probes in groups.items():
        probes.sort()
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(probes) if b[0] > a[0]]
        period = statistics.median(gaps) if gaps else 0.0
        out.append(ProbeSeries(name, tuple(probes), period))
    return out


def _loss_runs(series: ProbeSeries, start: float) -> list[tuple[float, float | None]]:
    """(first lost, first answered after it or None) of each run of lost probes from start."""
    runs: list[tuple[float, float | None]] = []
    lost_since: float | None = None
    for t, answered in series.probes:
        if t < start:
            continue
        if not answered and lost_since is None:
            lost_since = t
        elif answered and lost_since is not None:
            runs.append((lost_since, t))
            lost_since = None
    if lost_since is not None:
        runs.append((lost_since, None))
    return runs


@dataclass
class EventEffect:
    outage: float
    lost: int
    reconvergence: float | None  # None: not back within the run
    outage_ended: bool = True  # False: the outage ran to the end of the run (a lower bound)

    @property
    def outage_sample(self) -> tuple[str, float]:
        """(metric, value): a measured outage, or the lower bound of one still going on."""
        return ("outage" if self.outage_ended else "outage_at_least", self.outage)


def effect(
    series: ProbeSeries, event: Applied, next_at: float | None, prev_at: float | None = None
) -> EventEffect:
    """What one event did to one probe series (see the module docstring)."""
    window_end = next_at if next_at is not None else float("inf")
    runs = _loss_runs(series, event.at)
    ongoing = None
    if runs and prev_at is not None and _under_way(series, event.at, prev_at):
        # the previous event's outage, still going on: its own, not this event's (a cut's
        # outage had been counted again, from `up` to its end, for `link … up`)
        ongoing, runs = runs[0], runs[1:]
    # those that began before the next event (less a probe period: a probe in flight when
    # it came is lost with it, see _under_way)
    own = [r for r in runs if r[0] < window_end - series.period]
    if not own:
        if ongoing is None:
            return EventEffect(0.0, 0, 0.0)
        back = ongoing[1]  # traffic back after this event: how long after it
        return EventEffect(0.0, 0, None if back is None else max(back - event.at, 0.0))
    first_lost, back = own[0]
    outage = (back if back is not None else series.end) - first_lost
    # the probes lost in this event's own outages, to their ends (past the next event)
    lost = sum(
        1
        for t, ok in series.probes
        if not ok and any(a <= t and (b is None or t < b) for a, b in own)
    )
    back_for_good = own[-1][1]
    reconvergence = None if back_for_good is None else max(back_for_good - event.at, 0.0)
    return EventEffect(outage, lost, reconvergence, outage_ended=back is not None)


def _under_way(series: ProbeSeries, at: float, since: float) -> bool:
    """Whether probes were being lost when the event at `at` came: the probes just before it
    lost, since the previous event (at `since`) and from more than one probe period before
    (a probe in flight when a link is cut is lost with the cut, not before it)."""
    before = [(t, ok) for t, ok in series.probes if since <= t < at]
    if not before or before[-1][1]:
        return False
    start = before[-1][0]
    for t, ok in reversed(before):
        if ok:
            break
        start = t
    return start < at - series.period


def throughput_series(
    samples: Iterable[tuple[str, Sample]],
) -> dict[str, list[tuple[float, float]]]:
    """iperf3-style interval throughput of each step: (interval start, bit/s), in time order."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for step, s in samples:
        if s.metric == "throughput" and s.t is not None and s.stream is None:
            out[step].append((s.t, s.value))
    return {k: sorted(v) for k, v in out.items()}


def _interval(points: Sequence[tuple[float, float]]) -> float:
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(points) if b[0] > a[0]]
    return statistics.median(gaps) if gaps else 1.0


def derive(events: Sequence[Applied], samples: Sequence[tuple[str, Sample]]) -> list[Sample]:
    """The derived metrics of one run; empty if no event happened."""
    if not events:
        return []
    events = sorted(events, key=lambda e: e.at)
    first = events[0].at
    out = [Sample("event_at", e.at, "s", stream=e.label) for e in events]
    series = [s for s in probe_series(samples) if s.probes]
    recovered = events[-1].at
    if series:
        worst_outage, total_lost, latest, slowest = 0.0, 0, 0.0, 0.0
        all_back = outages_ended = True
        for ser in series:
            tag = f" {ser.name}" if len(series) > 1 else ""
            for i, event in enumerate(events):
                nxt = events[i + 1].at if i + 1 < len(events) else None
                eff = effect(ser, event, nxt, events[i - 1].at if i else None)
                stream = event.label + tag
                metric, value = eff.outage_sample
                out.append(Sample(metric, value, "s", stream=stream))
                out.append(Sample("packets_lost", eff.lost, "packets", stream=stream))
                out.append(
                    Sample("recovered", 0 if eff.reconvergence is None else 1, "", stream=stream)
                )
                if eff.reconvergence is None:
                    all_back = False
                else:
                    out.append(Sample("reconvergence", eff.reconvergence, "s", stream=stream))
                    latest = max(latest, event.at + eff.reconvergence)
                    slowest = max(slowest, eff.reconvergence)
            runs = _loss_runs(ser, first)
            time_down = sum((b if b is not None else ser.end) - a for a, b in runs)
            worst_outage = max(worst_outage, time_down)
            outages_ended = outages_ended and all(b is not None for _a, b in runs)
            total_lost += sum(1 for t, ok in ser.probes if t >= first and not ok)
        out.append(Sample("outage" if outages_ended else "outage_at_least", worst_outage, "s"))
        out.append(Sample("packets_lost", total_lost, "packets"))
        out.append(Sample("recovered", 1 if all_back else 0, ""))
        if all_back:
            out.append(Sample("reconvergence", slowest, "s"))
        recovered = max(recovered, latest)
    flows = throughput_series(samples)
    phases = [
        _throughput_phases(
            points, first, recovered, bool(series) or _rate_change(events[-1]),
            step if len(flows) > 1 else None,
        )
        for step, points in flows.items()
    ]
    out += [s for flow in phases for s in flow]
    if len(flows) > 1:  # and their sum, the traffic measured in all (stat reads no stream)
        for metric in ("throughput_before", "throughput_during", "throughput_after"):
            each = [s.value for flow in phases for s in flow if s.metric == metric]
            if len(each) == len(flows):
                out.append(Sample(metric, sum(each), "bit/s"))
    return out


def _rate_change(event: Applied) -> bool:
    """A `link A-B rate …` event: it sets what the traffic is after it, which no longer
    returns to what it was before (`after` is then what came after the event). By its kind,
    not its label (a node named `rate` is no rate change)."""
    return event.kind == "link-rate"


def _throughput_phases(
    points: list[tuple[float, float]],
    first: float,
    recovered: float,
    recovery_known: bool,
    stream: str | None,
) -> list[Sample]:
    width = _interval(points)
    before = [v for t, v in points if t + width <= first + 1e-9]
    if not recovery_known and before:
        # back with the first interval from the last event on that carries at least half of
        # `before` again; a noisy dip after it is not the disruption (a throughput of 4-6
        # against 10.9 Gbit/s before kept a 1-s cap "during" to the end of the run)
        low = HALF * statistics.median(before)
        # an interval is after the last event when most of it is (as `during` and `after`
        # below count it): one begun before the event would end the disruption at once
        back = [t for t, v in points if t + width / 2 >= recovered and v >= low]
        recovered = max(recovered, back[0]) if back else points[-1][0] + width
    during = [v for t, v in points if first <= t + width / 2 < recovered]
    after = [v for t, v in points if t + width / 2 >= recovered]
    out = []
    for metric, values in (
        ("throughput_before", before),
        ("throughput_during", during),
        ("throughput_after", after),
    ):
        if values:
            out.append(Sample(metric, statistics.fmean(values), "bit/s", stream=stream))
    return out
