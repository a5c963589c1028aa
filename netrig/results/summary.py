"""The end-of-experiment table: per sweep point and metric, N, median, min, max, stddev.

Only runs that succeeded give values (a run failed by another measurement still gives this
one's); failed and interrupted runs are counted in their own columns, so a failure can never
pass for a zero. Works from the store alone, so
`netrig results show` prints the same table as `netrig run`.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netrig import measure
from netrig.base.scale import display_scale, number_text
from netrig.base.values import render
from netrig.experiment.disruption import HEADLINE
from netrig.model.overrides import stored_overrides
from netrig.plan.runs import point_key
from netrig.results.store import ResultStore, Run


@dataclass(frozen=True)
class SummaryRow:
    point: dict[str, object]
    measurement: str
    metric: str
    unit: str
    n: int
    failed: int
    interrupted: int
    median: float | None
    minimum: float | None
    maximum: float | None
    stddev: float | None  # sample standard deviation; None below 2 values

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={render(v)}" for k, v in self.point.items()) or "-"


def metric_label(measurement: str, metric: str) -> str:
    """`iperf3 throughput`; a metric named as its measurement once (`convergence`, not
    `convergence convergence`); a measurement that stored no metric by its name alone."""
    return metric if metric == measurement else f"{measurement} {metric}".strip()


def headline_metrics(measurement: str, kind: str | None = None) -> tuple[str, ...] | None:
    """The metrics a plugin shows by default for a measurement: by its plugin (`kind`, as
    stored since v7) or else by its name (iperf3, iperf3-2 …: a named `ping-baseline`
    iperf3 had shown ping's metrics, none of its own); for `events`, what the timeline
    did (not when each event happened)."""
    if measurement == "events" and kind is None:
        return HEADLINE
    cls = _plugin(measurement, kind)
    return cls.summary_metrics if cls and cls.summary_metrics else None


def _plugin(measurement: str, kind: str | None) -> type[measure.Measurement[Any]] | None:
    """A measurement's plugin: by `kind`, or else by its name (iperf3-2 is an iperf3)."""
    plugins = measure.load_plugins()
    base = kind or (measurement if measurement in plugins else measurement.rsplit("-", 1)[0])
    return plugins.get(base)


def pooled_metrics(measurement: str, kind: str | None = None) -> tuple[str, ...]:
    """The metrics whose per-stream values pool into one metric where a run stores them
    only per stream (Measurement.pooled_metrics: ping's per-probe `rtt` and `lost`); never
    those of `events`, whose streams are events (one event's outage is no run's outage)."""
    if measurement == "events" and kind is None:
        return ()
    cls = _plugin(measurement, kind)
    return cls.pooled_metrics if cls else ()


def summarize(
    store: ResultStore, experiment_id: int, all_metrics: bool = False
) -> list[SummaryRow]:
    """One row per (sweep point, measurement, metric), points in the order the file's
    `vary:` gives their values (runs spread over hosts, or interleaved, finish in any
    order); a measurement's default metrics are those of its plugin, whatever its name.
    A measurement whose runs all failed has its rows too, with N 0 and its failed count
    (metric "" when it stored no sample at all), as the HTML report shows it."""
    runs = store.runs(experiment_id)
    record = store.experiment(experiment_id)
    kinds = record.measurements
    shape = vary_shape(record.file_text)
    order = value_order((run.point for run in runs), shape.order)
    points: dict[str, dict[str, object]] = {}
    status: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    units: dict[tuple[str, str], str] = {}
    point_runs: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        key = point_key(run.point)
        points.setdefault(key, run.point)
        status[key][run.status] += 1
        point_runs[key].append(run)
        if run.status == "interrupted":
            continue
        for name, sample in store.samples(run.id):
            if sample.t is not None or sample.stream is not None:
                continue
            wanted = None if all_metrics else headline_metrics(name, kinds.get(name))
            if wanted is not None and sample.metric not in wanted:
                continue
            # a column even when no value counts: wrk failing every run beside ab had
            # left no wrk row, and ab's numbers alone (unlabelled) read as the result
            units.setdefault((name, sample.metric), sample.unit)
            if not run.counts_for(name):  # its failure, or the whole run's
                continue
            values[(key, name, sample.metric)].append(sample.value)
    columns = list(units)  # (measurement, metric) in order of first appearance
    sampled = {name for name, _ in columns}
    for name in [*kinds, *(m for run in runs for m in run.failed_measurements or ())]:
        if name not in sampled and any(run.failed_for(name) for run in runs):
            columns.append((name, ""))  # failed before it gave any sample: a row still
            units[(name, "")] = ""
            sampled.add(name)
    rows = []
    for key, point in sorted(
        points.items(), key=lambda item: point_order(item[1], order, shape.points)
    ):
        failed, interrupted = status[key]["failed"], status[key]["interrupted"]
        shown = False
        for name, metric in columns:
            data = values.get((key, name, metric), [])
            # the failures of this measurement: the whole run's, or its own
            its_failed = sum(run.failed_for(name) for run in point_runs[key])
            if not data and not (its_failed or interrupted):
                continue
            rows.append(
                _row(point, name, metric, units[(name, metric)], data, its_failed, interrupted)
            )
            shown = True
        if not shown:
            rows.append(_row(point, "", "", "", [], failed, interrupted))
    return rows


@dataclass(frozen=True)
class VaryShape:
    """What the stored file's `vary:` says, with the run's `--set` values over it: each
    parameter's values (as rendered) in the file's order, and whether it lists points
    (no grid), with those points (values as rendered) in the file's order."""

    order: dict[str, list[str]]
    listed: bool = False
    points: tuple[dict[str, str], ...] = ()


def vary_shape(file_text: str) -> VaryShape:
    """The VaryShape of a stored experiment text (empty when the text does not say)."""
    import yaml

    text, overrides, _repeat = stored_overrides(file_text)
    try:
        vary = (yaml.safe_load(text) or {}).get("vary")
    except (yaml.YAMLError, AttributeError):
        return VaryShape({})
    order: dict[str, list[str]] = {}
    points: list[dict[str, str]] = []
    if isinstance(vary, dict):
        for name, values in vary.items():
            order[str(name)] = [render(v) for v in values] if isinstance(values, list) else []
    elif isinstance(vary, list):
        for point in vary:
            if isinstance(point, dict):
                points.append({str(name): render(value) for name, value in point.items()})
            for name, value in (point.items() if isinstance(point, dict) else ()):
                seen = order.setdefault(str(name), [])
                if render(value) not in seen:
                    seen.append(render(value))
    for name, raw in overrides.items():  # `--set hops=[16,8]` ran in that order
        try:
            values = yaml.safe_load(raw)
        except yaml.YAMLError:
            continue
        if name in order and isinstance(values, list):
            order[name] = [render(v) for v in values]
    return VaryShape(order, isinstance(vary, list), tuple(points))


def value_order(
    points: Iterable[Mapping[str, object]], listed: Mapping[str, list[str]]
) -> dict[str, list[str]]:
    """Each parameter's values in the file's order (`listed`, from VaryShape), then any
    value the file does not list (an old record, a computed value): numbers by value, then
    text in the order the points first ran (runs spread over hosts end in any order)."""
    unlisted: dict[str, dict[str, object]] = {}
    for point in points:
        for name, value in point.items():
            if render(value) not in listed.get(name, []):
                unlisted.setdefault(name, {}).setdefault(render(value), value)
    order = {name: list(values) for name, values in listed.items()}
    for name, values in unlisted.items():
        numbers = sorted((v for v in values.values() if _is_number(v)), key=float)  # type: ignore[arg-type]
        texts = [v for v in values.values() if not _is_number(v)]
        order.setdefault(name, []).extend(render(v) for v in [*numbers, *texts])
    return order


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def point_order(
    point: Mapping[str, object],
    order: Mapping[str, list[str]],
    listed: Sequence[Mapping[str, str]] = (),
) -> tuple[int, ...]:
    """Sort key of a sweep point: its values in key order, each by its place in `order`
    (value_order's, which lists every value of the points it was made from). A sweep
    given as a list of points (`listed`, VaryShape.points) goes by the list first: sorting
    by values had put [{lb: pen, c: 5}, {lb: hap, c: 5}, {lb: pen, c: 50}] as pen/5,
    pen/50, hap/5. A part of a point (stat --by, host added) ranks as the first listed
    point it agrees with; a point the list lacks comes after the listed ones."""
    by_values = tuple(order[name].index(render(value)) for name, value in point.items())
    if not listed:
        return by_values
    rank = next(
        (
            i
            for i, shown in enumerate(listed)
            if all(render(value) == shown[name] for name, value in point.items() if name in shown)
        ),
        len(listed),
    )
    return (rank, *by_values)


def _row(
    point: dict[str, object],
    name: str,
    metric: str,
    unit: str,
    data: list[float],
    failed: int,
    interrupted: int,
) -> SummaryRow:
    return SummaryRow(
        point,
        name,
        metric,
        unit,
        len(data),
        failed,
        interrupted,
        statistics.median(data) if data else None,
        min(data) if data else None,
        max(data) if data else None,
        statistics.stdev(data) if len(data) > 1 else None,
    )


def scale(unit: str, reference: float | None) -> tuple[float, str]:
    """A divisor and display unit that keep numbers short (bit/s → Gbit/s, ms → µs), the
    same the plots and the report use (netrig.base.scale)."""
    shown = display_scale(unit, [] if reference is None else [reference])
    return shown.factor, shown.unit


def fmt(value: float | None, factor: float = 1.0) -> str:
    """Four significant digits; a number of 10,000 to 10^15 whole (16990, not 1.699e+04:
    req/s has no larger unit to scale to), as the report writes it (number_text)."""
    if value is None:
        return "-"
    return number_text(value / factor)
