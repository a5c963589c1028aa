"""Stored samples, selected and grouped for statistics and plots (Flent's aggregators).

`netrig compare`, `netrig stat --experiment`, `netrig plot` and `netrig report` all start
here: load an experiment from the results store once, pick a metric, keep the runs that
match a filter, and group their values per sweep point or per parameter value. Only runs
that succeeded give values; failed runs are kept beside the values, with their reasons,
so that a failure is shown as a failure and never averaged in as a zero.

    with ResultStore("netrig.db") as store:
        data = load(store, "ring-hops")                  # the newest experiment of that name
        metric = resolve_metrics(data, ["throughput"])[0]
        for group in collect(data, metric, by=["hops"]):
            print(group.label, median(group.values), len(group.failed))

Reducers are small named functions (median, mean, minimum, …) in REDUCERS, so a caller
can name one on a command line and a test can check each alone.
"""

from __future__ import annotations

import functools
import math
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from netrig.base.sample import Sample
from netrig.base.values import render
from netrig.plan.runs import point_key
from netrig.results.store import ExperimentRecord, ResultStore, Run
from netrig.results.summary import (
    VaryShape,
    headline_metrics,
    metric_label,
    point_order,
    pooled_metrics,
    value_order,
    vary_shape,
)
from netrig.stats import spread

SampleKind = Literal["summary", "intervals", "auto"]


class SelectionError(ValueError):
    """What was asked for is not in the store: no such experiment, parameter or metric."""


# -- selectors: "EXPERIMENT[:param=value,...]" --------------------------------------------------

_FILTER = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*=\s*(.*?)\s*$")


@dataclass(frozen=True)
class Selector:
    """An experiment (id or name; None: given elsewhere) and the sweep-point filters.

    >>> parse_selector("ring:hops=5,routing=ecmp")
    Selector(experiment='ring', filters=(('hops', '5'), ('routing', 'ecmp')))
    >>> parse_selector("hops=5").experiment is None
    True
    """

    experiment: str | None
    filters: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        text = ",".join(f"{k}={v}" for k, v in self.filters)
        if self.experiment is None:
            return text
        return f"{self.experiment}:{text}" if text else self.experiment


def parse_selector(text: str) -> Selector:
    """`EXP`, `EXP:k=v[,k=v…]` or just `k=v[,k=v…]` (experiment named elsewhere)."""
    text = text.strip()
    if not text:
        raise SelectionError("empty selector: give an experiment id or name, e.g. 3 or ring:hops=5")
    head, colon, tail = text.partition(":")
    if not colon:
        if "=" not in text:
            return Selector(text)
        head, tail = "", text
    filters = parse_filters(tail.split(",")) if tail.strip() else ()
    return Selector(head.strip() or None, filters)


def parse_filters(items: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """`param=value` strings (a --where option, a selector's tail) as pairs."""
    pairs = []
    for item in items:
        m = _FILTER.match(item)
        if m is None or not m.group(2):
            raise SelectionError(f"filter {item.strip()!r}: write PARAM=VALUE, e.g. hops=5")
        pairs.append((m.group(1), m.group(2)))
    return tuple(pairs)


def value_matches(value: Any, text: str) -> bool:
    """Does a stored parameter value equal a filter's text? 5 == "5" == "5.0"; True == "true"."""
    if isinstance(value, bool):
        return text.lower() in (("true", "yes", "1") if value else ("false", "no", "0"))
    if str(value) == text:
        return True
    if isinstance(value, int | float):
        try:
            return float(text) == float(value)
        except ValueError:
            return False
    return False


def point_matches(point: Mapping[str, Any], filters: Sequence[tuple[str, str]]) -> bool:
    return all(name in point and value_matches(point[name], text) for name, text in filters)


def point_label(point: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> str:
    """hops=5, rate=1gbit; "all runs" for an experiment without `vary:`."""
    items = point.items() if isinstance(point, Mapping) else point
    return ", ".join(f"{k}={render(v)}" for k, v in items) or "all runs"


# -- loading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredRun:
    """One run with its samples as (measurement, sample) pairs."""

    run: Run
    samples: tuple[tuple[str, Sample], ...]


@dataclass(frozen=True)
class MetricRef:
    """A metric of one measurement: `iperf3 throughput (bit/s)`.

    A run gives its values without a stream (the measurement's own) if it has them, else,
    where its plugin pools the metric (`pools`: Measurement.pooled_metrics, ping's
    per-probe `rtt` of `all_pairs` or `pairs`, stored per pair `n1>n2`), those of every
    stream pooled. This is decided run by run: a sweep of `all_pairs: [false, true]`, or
    two experiments compared, may store it whole in some runs and per stream in others.
    `streams`: how many streams runs pooled (0: none did); `mixed`: other runs had it whole.
    """

    measurement: str
    metric: str
    unit: str
    streams: int = field(default=0, compare=False)
    pools: bool = field(default=False, compare=False)
    mixed: bool = field(default=False, compare=False)

    @property
    def label(self) -> str:
        return metric_label(self.measurement, self.metric)

    def __str__(self) -> str:
        text = f"{self.label} ({self.unit})" if self.unit else self.label
        if not self.streams:
            return text
        where = " where a run stores it only per stream" if self.mixed else ""
        return f"{text}, pooled over {self.streams} streams{where}"

    def samples(self, run: StoredRun) -> list[Sample]:
        """This metric's samples in `run`: its stream-less ones if it has any, else (where
        the metric pools) those of all its streams."""
        mine = [
            s for name, s in run.samples if name == self.measurement and s.metric == self.metric
        ]
        whole = [s for s in mine if s.stream is None]
        return whole if whole or not self.pools else mine


@dataclass
class StoredExperiment:
    """An experiment and all its runs, read from the store once."""

    experiment: ExperimentRecord
    runs: list[StoredRun]
    params: list[str] = field(default_factory=list)  # sweep parameters, in order of appearance

    def points(self, filters: Sequence[tuple[str, str]] = ()) -> list[dict[str, Any]]:
        """Distinct sweep points in the order of the file's `vary:` (with the run's --set
        values), as the end-of-run table lists them: runs on a cluster, or resumed, are
        stored in any order."""
        seen: dict[str, dict[str, Any]] = {}
        for r in self.runs:
            if point_matches(r.run.point, filters):
                seen.setdefault(point_key(r.run.point), r.run.point)
        order = value_order(seen.values(), self.vary.order)
        return sorted(
            seen.values(), key=lambda point: point_order(point, order, self.vary.points)
        )

    @functools.cached_property
    def vary(self) -> VaryShape:
        """The stored file's `vary:`: its values' order, whether it lists points."""
        return vary_shape(self.experiment.file_text)

    def values_of(self, param: str) -> list[Any]:
        """The distinct values one parameter takes, in the order of the points."""
        out: list[Any] = []
        for point in self.points():
            if param in point and point[param] not in out:
                out.append(point[param])
        return out

    def metrics(self) -> list[tuple[MetricRef, int, int]]:
        """(metric, summary samples, interval samples) of the whole measurement (stream
        None), then those only some runs' streams have: a run without stream-less values
        of a metric its plugin pools (Measurement.pooled_metrics: ping's per-probe `rtt` of
        several pairs) counts its streams' (MetricRef.streams, decided run by run). No
        other per-stream value becomes a metric: the events' per-event outage of 0 s had
        passed for the run's outage when traffic never came back (it stores
        `outage_at_least` then)."""
        counts: dict[MetricRef, list[int]] = {}
        streams: dict[MetricRef, dict[str, None]] = {}
        whole: set[MetricRef] = set()
        measured = {name for r in self.runs for name, _ in r.samples}
        pools = {name: self.pooled(name) for name in measured}
        for r in self.runs:
            has = {(name, s.metric) for name, s in r.samples if s.stream is None}
            for name, s in r.samples:
                ref = MetricRef(name, s.metric, s.unit)
                if s.stream is None:
                    whole.add(ref)
                elif s.metric not in pools[name] or (name, s.metric) in has:
                    continue
                else:
                    streams.setdefault(ref, {})[s.stream] = None
                c = counts.setdefault(ref, [0, 0])
                c[0 if s.t is None else 1] += 1
        out = []
        for m, c in counts.items():
            pooled = len(streams.get(m, ()))
            mixed = m in whole and m in streams
            pools_it = m.metric in pools[m.measurement]
            ref = MetricRef(m.measurement, m.metric, m.unit, pooled, pools_it, mixed)
            out.append((ref, c[0], c[1]))
        return sorted(out, key=lambda item: item[0] not in whole)  # stable: whole ones first

    def pooled(self, measurement: str) -> tuple[str, ...]:
        """The metrics of `measurement` whose streams pool (its plugin's pooled_metrics)."""
        return pooled_metrics(measurement, self.experiment.measurements.get(measurement))

    @property
    def hosts(self) -> list[str]:
        """The cluster hosts the runs ran on (netrig run --cluster), in order of appearance."""
        return list(dict.fromkeys(r.run.host for r in self.runs if r.run.host))

    def check_params(self, names: Iterable[str]) -> None:
        """SelectionError naming the known parameters if one of `names` is not among them
        (`host` is one when the runs ran on a cluster)."""
        params = [*self.params, *(["host"] if self.hosts else [])]
        for name in names:
            if name not in params:
                known = ", ".join(params) or "none (this experiment has no `vary:`)"
                raise SelectionError(
                    f"experiment {self.experiment.id} ({self.experiment.name}) has no sweep "
                    f"parameter {name!r}; parameters: {known}"
                )

    def check_filters(self, filters: Sequence[tuple[str, str]]) -> None:
        """SelectionError when a filter names an unknown parameter, or when no run matches
        them all: a plot of nothing had been an empty picture and exit 0 (`stat` and
        `compare` said so). The message lists the values each filtered parameter has."""
        self.check_params([name for name, _ in filters])
        if not filters or any(point_matches(facets(r.run), filters) for r in self.runs):
            return
        wanted = ",".join(f"{name}={text}" for name, text in filters)
        has = "; ".join(
            f"{name} {', '.join(render(v) for v in self._facet_values(name))}"
            for name in dict.fromkeys(name for name, _ in filters)
        )
        raise SelectionError(
            f"no run of experiment {self.experiment.id} matches {wanted} "
            f"({self.experiment.name} has {has})"
        )

    def _facet_values(self, name: str) -> list[Any]:
        """The values a filterable name takes: a sweep parameter's, or the cluster hosts."""
        return self.hosts if name == "host" else self.values_of(name)


SHOWN = 10  # experiment names an unknown name's error lists


def find(store: ResultStore, ref: str | int) -> ExperimentRecord:
    """An experiment by id or name (the newest of that name), or SelectionError listing names."""
    found = store.find_experiment(ref)
    if found is None:
        names = sorted({e.name for e in store.experiments()})
        known = ", ".join(names[:SHOWN]) or "none"
        if len(names) > SHOWN:  # the list is cut: say so, and by how much
            listing = shlex.join(["netrig", "results", "list", "--db", str(store.path)])
            known += f", … and {len(names) - SHOWN} more (`{listing}`)"
        raise SelectionError(f"no experiment {ref!r} in {store.path}; experiments: {known}")
    return found


def load(store: ResultStore, ref: str | int) -> StoredExperiment:
    """Read one experiment with all its runs and samples."""
    experiment = find(store, ref)
    runs = [StoredRun(run, tuple(store.samples(run.id))) for run in store.runs(experiment.id)]
    params: list[str] = []
    for r in runs:
        params.extend(name for name in r.run.point if name not in params)
    return StoredExperiment(experiment, runs, params)


# -- which metric ---------------------------------------------------------------------------------


def headline(measurement: str, kind: str | None = None) -> tuple[str, ...] | None:
    """The metrics a measurement plugin shows by default (None: all of them)."""

    return headline_metrics(measurement, kind)


def resolve_metrics(data: StoredExperiment, wanted: Sequence[str] | None = None) -> list[MetricRef]:
    """The metrics named in `wanted` (`throughput`, or `iperf3-2.throughput` for one
    measurement), or every headline metric present when `wanted` is empty."""
    present = data.metrics()
    if not wanted:
        chosen = []
        for ref, _, _ in present:
            shown = headline(ref.measurement, data.experiment.measurements.get(ref.measurement))
            if shown is None or ref.metric in shown:
                chosen.append(ref)
        return chosen
    chosen = []
    for name in wanted:
        measurement, dot, metric = name.rpartition(".")
        hits = [
            ref
            for ref, _, _ in present
            if ref.metric == metric and (not dot or ref.measurement == measurement)
        ]
        if not hits:
            known = ", ".join(sorted({f"{r.measurement}.{r.metric}" for r, _, _ in present}))
            raise SelectionError(
                f"experiment {data.experiment.id} ({data.experiment.name}) has no metric "
                f"{name!r}; metrics: {known or 'none (no run stored samples)'}"
            )
        chosen.extend(hit for hit in hits if hit not in chosen)
    return chosen


def sample_kind(data: StoredExperiment, metric: MetricRef, kind: SampleKind) -> SampleKind:
    """`auto`: a run's summary values when the metric has them (iperf3 throughput), else its
    interval samples (ping's per-packet rtt)."""
    if kind != "auto":
        return kind
    for ref, summary, _ in data.metrics():
        if ref == metric:
            return "summary" if summary else "intervals"
    return "summary"


# -- groups ---------------------------------------------------------------------------------------

GroupKey = tuple[tuple[str, Any], ...]


@dataclass
class Group:
    """The values of one sweep point (or one parameter value) and the runs that gave none."""

    key: GroupKey
    values: list[float] = field(default_factory=list)
    ok_runs: list[Run] = field(default_factory=list)
    failed: list[Run] = field(default_factory=list)
    interrupted: int = 0

    @property
    def label(self) -> str:
        return point_label(self.key)

    @property
    def array(self) -> np.ndarray:
        return np.asarray(self.values, dtype=np.float64)

    @property
    def all_failed(self) -> bool:
        """Nothing to show and at least one failure: the gap a plot must mark."""
        return not self.values and bool(self.failed)

    def value(self, param: str) -> Any:
        return dict(self.key).get(param)


def facets(run: Run) -> dict[str, Any]:
    """What a filter can match in a run: its sweep point, and its cluster host if any."""
    return {**run.point, "host": run.host} if run.host else run.point


def _metric_values(r: StoredRun, metric: MetricRef, kind: SampleKind) -> list[float]:
    want_summary = kind == "summary"
    return [s.value for s in metric.samples(r) if (s.t is None) == want_summary]


def collect(
    data: StoredExperiment,
    metric: MetricRef,
    *,
    filters: Sequence[tuple[str, str]] = (),
    by: Sequence[str] | None = None,
    kind: SampleKind = "auto",
) -> list[Group]:
    """Values of `metric` grouped per sweep point, or per value of the `by` parameters
    (pooling the others), in the order of the file's `vary:` (see `points`).

    Every matching run counts: an ok run adds its values, and so does a failed one whose
    failure was another measurement's; a failed one is listed in `failed`, an interrupted
    one is only counted (it is no result; --resume redoes it).
    `host` (the cluster host of a run) works as a filter and in `by`, where it is a block:
    by=["host"] keeps the sweep points apart and groups each point's runs per host.
    """
    data.check_params([name for name, _ in filters])
    if by is not None:
        data.check_params(by)
    kind = sample_kind(data, metric, kind)
    groups: dict[GroupKey, Group] = {}
    for r in data.runs:
        point = r.run.point
        matched = facets(r.run)
        if not point_matches(matched, filters):
            continue
        if by is None:
            key: GroupKey = tuple(point.items())
        elif list(by) == ["host"]:
            key = (*point.items(), ("host", r.run.host))
        else:
            key = tuple((name, matched.get(name)) for name in by)
        group = groups.setdefault(key, Group(key))
        if r.run.counts_for(metric.measurement):
            values = _metric_values(r, metric, kind)
            if values:
                group.values.extend(values)
                group.ok_runs.append(r.run)
        elif r.run.status == "failed":
            group.failed.append(r.run)
        else:
            group.interrupted += 1
    # as the points: the file's order, not the order the runs ended
    order = value_order((dict(key) for key in groups), data.vary.order)
    return sorted(
        groups.values(), key=lambda g: point_order(dict(g.key), order, data.vary.points)
    )


def pooled(groups: Sequence[Group], key: GroupKey = ()) -> Group:
    """All groups' values and failures in one group (a selector that matches several points)."""
    out = Group(key)
    for g in groups:
        out.values.extend(g.values)
        out.ok_runs.extend(g.ok_runs)
        out.failed.extend(g.failed)
        out.interrupted += g.interrupted
    return out


@dataclass(frozen=True)
class RunSeries:
    """The interval samples of one run, sorted by t, for time-series plots."""

    run: Run
    t: np.ndarray
    values: np.ndarray


def run_series(
    data: StoredExperiment, metric: MetricRef, filters: Sequence[tuple[str, str]] = ()
) -> list[RunSeries]:
    """One series per run with interval samples of `metric`, failed runs' partial data too."""
    data.check_params([name for name, _ in filters])
    out = []
    for r in data.runs:
        if not point_matches(facets(r.run), filters):
            continue
        pairs = sorted((s.t, s.value) for s in metric.samples(r) if s.t is not None)
        if pairs:
            t, v = zip(*pairs, strict=True)
            out.append(RunSeries(r.run, np.array(t), np.array(v)))
    return out


# -- reducers -------------------------------------------------------------------------------------

Reducer = Callable[[Sequence[float]], float]
REDUCERS: dict[str, Reducer] = {}


def reducer(name: str) -> Callable[[Reducer], Reducer]:
    """Register a reducer under the name a command line or a report uses."""

    def register(fn: Reducer) -> Reducer:
        REDUCERS[name] = fn
        return fn

    return register


def _array(values: Sequence[float]) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        raise ValueError("no values to reduce")
    return a


@reducer("median")
def median(values: Sequence[float]) -> float:
    """The middle value (mean of the two middle ones for even N), robust to one bad run."""
    return float(np.median(_array(values)))


@reducer("mean")
def mean(values: Sequence[float]) -> float:
    return float(np.mean(_array(values)))


@reducer("min")
def minimum(values: Sequence[float]) -> float:
    return float(np.min(_array(values)))


@reducer("max")
def maximum(values: Sequence[float]) -> float:
    return float(np.max(_array(values)))


@reducer("stddev")
def stddev(values: Sequence[float]) -> float:
    """Sample standard deviation (N - 1); NaN below two values. Rounding noise of a
    constant sample is 0 (netrig.stats.spread), as the end-of-run table prints it."""
    return spread.stddev(_array(values))


def percentile(q: float) -> Reducer:
    """A reducer for the q-th percentile (linear interpolation), e.g. percentile(99)."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, not {q}")

    def pct(values: Sequence[float]) -> float:
        return float(np.percentile(_array(values), q))

    pct.__name__ = f"p{q:g}"
    pct.__doc__ = f"The {q:g}th percentile."
    return pct


for _q in (5, 25, 75, 95, 99):
    REDUCERS[f"p{_q}"] = percentile(_q)


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student's t confidence interval of the mean; (mean, mean) below two values."""
    from scipy import stats

    a = _array(values)
    m = float(np.mean(a))
    if a.size < 2:
        return m, m
    half = (
        float(stats.t.ppf(0.5 + confidence / 2, a.size - 1))
        * spread.stddev(a)
        / math.sqrt(a.size)
    )
    return m - half, m + half


def failure_reasons(runs: Sequence[Run]) -> list[tuple[str, int]]:
    """Distinct reasons of failed runs with how often each occurred, most frequent first."""
    counts: dict[str, int] = {}
    for run in runs:
        reason = (run.reason or "no reason recorded").strip()
        counts[reason] = counts.get(reason, 0) + 1
    return sorted(counts.items(), key=lambda item: -item[1])
