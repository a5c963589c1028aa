"""Plots of stored experiments with matplotlib: line, box, cdf and timeseries.

Figures are built on matplotlib's object API with the Agg canvas (no pyplot, no global
state, no display needed), so `netrig plot`, the HTML report and tests can draw side by
side. Values are scaled to a readable unit per axis (bit/s → Gbit/s, s → ms, …).

A sweep point whose runs all failed is not a zero: its line has a gap there (NaN) and a
red × marks the x position at the bottom of the plot, with a legend entry "failed" —
seed 004's shootout: "no line means the load balancer failed".

    fig = figure(data, PlotRequest(kind="line", x="hops", y="throughput", group="routing"))
    save(fig, "hops.png")
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from numpy.typing import ArrayLike

from netrig.base.scale import axis_label, display_scale
from netrig.base.values import counted, render
from netrig.stats.stored import (
    Group,
    MetricRef,
    SampleKind,
    SelectionError,
    StoredExperiment,
    collect,
    facets,
    maximum,
    mean_ci,
    median,
    minimum,
    point_label,
    point_matches,
    resolve_metrics,
    run_series,
    sample_kind,
)

Kind = Literal["line", "box", "cdf", "timeseries"]
KINDS: tuple[str, ...] = ("line", "box", "cdf", "timeseries")
FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
FAILED_COLOR = "#d62728"  # matplotlib's C3: kept for failures, never a series colour
SERIES_COLORS = ("C0", "C1", "C2", "C4", "C5", "C6", "C7", "C8", "C9")
FAILED_GID = "failed"  # the gid of every artist that marks a failed sweep point
EMPTY_GID = "no-value"  # the gid of the note on a plot that has no value at all
FAILED_Y = 0.95  # height of the failure marks, as a fraction of the axes
FAILED_STEP = 0.06  # lower by this much per group, so marks of several groups stay apart


@dataclass(frozen=True)
class PlotRequest:
    """What to draw: `netrig plot`'s options as data."""

    kind: Kind = "line"
    y: str = "throughput"
    x: str | None = None
    group: str | None = None
    filters: tuple[tuple[str, str], ...] = ()
    log_x: bool = False
    log_y: bool = False
    ci: bool = False  # line: mean with its confidence interval instead of median, min–max
    confidence: float = 0.95
    intervals: bool = False  # per-interval samples instead of each run's summary
    median: bool = False  # timeseries: the median across repetitions instead of every run
    title: str | None = None
    size: tuple[float, float] = (8.0, 4.5)  # inches; at 100 dpi, 800 × 450 pixels


def figure(data: StoredExperiment, req: PlotRequest) -> Figure:
    """The figure for `req` (SelectionError when the experiment lacks what it names)."""
    data.check_filters(req.filters)  # before any other check: name what does not match
    metric = _one_metric(data, req.y)
    fig = Figure(figsize=req.size, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    draw = {"line": _line, "box": _box, "cdf": _cdf, "timeseries": _timeseries}[req.kind]
    subtitle = draw(ax, data, metric, req)
    e = data.experiment
    where = f" [{', '.join(f'{k}={v}' for k, v in req.filters)}]" if req.filters else ""
    title = req.title or f"{e.name} (experiment {e.id}): {metric.label}{where}"
    ax.set_title(title + (f"\n{subtitle}" if subtitle else ""), fontsize=10, loc="left")
    ax.grid(True, alpha=0.3)
    if req.log_y:
        _check_log_y(data, metric, req)
        ax.set_yscale("log")
    if not req.log_y and req.kind in ("line", "box") and ax.dataLim.y0 >= 0:
        ax.set_ylim(bottom=0)  # no value is negative: do not magnify differences
    _say_when_empty(ax, data, metric, req)
    handles, labels = ax.get_legend_handles_labels()
    # the data first, the failure marks after it
    order = sorted(range(len(handles)), key=lambda k: _is_failure_mark(handles[k]))
    handles, labels = [handles[k] for k in order], [labels[k] for k in order]
    if labels:
        legend_title = req.group if req.kind in ("line", "box") else None
        ax.legend(handles, labels, title=legend_title, fontsize=8, title_fontsize=8)
    return fig


def _say_when_empty(ax: Any, data: StoredExperiment, metric: MetricRef, req: PlotRequest) -> None:
    """No value at all (every run failed): matplotlib's default y axis of 0–0.05 had read
    as values near zero. The axis loses its numbers and the picture says why."""
    if req.kind == "timeseries":
        if run_series(data, metric, req.filters):
            return
        failed = sum(r.run.failed_for(metric.measurement) for r in data.runs
                     if point_matches(facets(r.run), req.filters))  # fmt: skip (host too)
    else:
        groups = collect(data, metric, filters=req.filters, kind=_kind(data, metric, req))
        if any(g.values for g in groups):
            return
        failed = sum(len(g.failed) for g in groups)
    ax.set_yticks([])
    if req.kind == "cdf":  # its x axis is the metric's: no value either
        ax.set_xticks([])
    why = f"every run failed ({failed})" if failed else "no run gave one"
    ax.text(0.5, 0.5, f"no value of {metric.label} to show: {why}", transform=ax.transAxes,
            ha="center", va="center", color=FAILED_COLOR, fontsize=11, gid=EMPTY_GID)  # fmt: skip


def series_color(i: int) -> str:
    """The i-th series colour: matplotlib's cycle without its red, which means "failed"."""
    return SERIES_COLORS[i % len(SERIES_COLORS)]


def _is_failure_mark(handle: Any) -> bool:
    return getattr(handle, "get_gid", lambda: None)() == FAILED_GID


def save(fig: Figure, path: str | Path, dpi: float = 100) -> Path:
    """Write the figure; the format comes from the suffix (png, svg or pdf)."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ValueError(f"{path}: write .png, .svg or .pdf, not {path.suffix or 'no suffix'}")
    fig.savefig(path, format=fmt, dpi=dpi, metadata=_metadata(fmt))
    return path


def png_bytes(fig: Figure, dpi: float = 100) -> bytes:
    """The figure as PNG, for embedding."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _metadata(fmt: str) -> dict[str, Any]:
    # No creation date: the same data gives the same file.
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def _one_metric(data: StoredExperiment, name: str) -> MetricRef:
    metrics = resolve_metrics(data, [name])
    if len(metrics) > 1:
        choices = ", ".join(f"{m.measurement}.{m.metric}" for m in metrics)
        raise SelectionError(f"{name!r} is measured more than once; pick one of {choices}")
    return metrics[0]


def _kind(data: StoredExperiment, metric: MetricRef, req: PlotRequest) -> SampleKind:
    return "intervals" if req.intervals else sample_kind(data, metric, "auto")


def _check_rest_fixed(data: StoredExperiment, req: PlotRequest, used: Sequence[str]) -> None:
    """Refuse to pool parameters the plot does not show: say how to fix or show them."""
    fixed = {name for name, _ in req.filters}
    for param in data.params:
        if param in used or param in fixed:
            continue
        values = data.values_of(param)
        if len(values) > 1:
            shown = ", ".join(map(str, values))
            raise SelectionError(
                f"the experiment also varies {param} ({shown}): fix it with --where "
                f"{param}={values[0]}, or show it with --group {param}"
                + (f" or --x {param}" if req.x is None else "")
            )


def _sorted_values(values: Sequence[Any]) -> tuple[list[Any], bool]:
    """x values in plot order, and whether they are numbers (else categories as they ran)."""
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    return (sorted(values) if numeric else list(values)), numeric


def _x_param(data: StoredExperiment, req: PlotRequest) -> str:
    if req.x is not None:
        data.check_params([req.x])
        return req.x
    candidates = [p for p in data.params if p != req.group and len(data.values_of(p)) > 1]
    if len(candidates) == 1:
        return candidates[0]
    if not data.params:
        raise SelectionError(
            "this experiment has no `vary:`, so there is no sweep for a line; "
            "try --kind box, cdf or timeseries"
        )
    known = ", ".join(data.params)
    raise SelectionError(f"name the parameter for the x axis with --x; parameters: {known}")


def _check_log_y(data: StoredExperiment, metric: MetricRef, req: PlotRequest) -> None:
    """A log y axis cannot show a value of 0 or below: matplotlib had dropped such points
    with a UserWarning on stderr. A CDF's y is a fraction, not the metric."""
    if req.kind == "cdf":
        raise SelectionError("--log-y: a CDF's y axis is the fraction of samples; --log-x puts "
                             f"{metric.label} on a log axis")  # fmt: skip
    if req.kind == "timeseries":
        values = [v for s in run_series(data, metric, req.filters) for v in s.values]
    else:
        kind = _kind(data, metric, req)
        values = [v for g in collect(data, metric, filters=req.filters, kind=kind)
                  for v in g.values]  # fmt: skip
    if any(v <= 0 for v in values):
        raise SelectionError(
            f"--log-y: {metric.label} has values of 0 or below, which a log axis cannot "
            "show; plot it without --log-y"
        )


def _failed_mark(ax: Any, xs: Sequence[float], label: str, row: int = 0) -> Line2D:
    """A red × at the top of the plot and a dotted red line down through each x where a
    point failed: there is no y to show, and a mark near the bottom would read as zero."""
    for x in xs:
        ax.axvline(x, color=FAILED_COLOR, linestyle=":", linewidth=1, alpha=0.6, gid=FAILED_GID)
    (mark,) = ax.plot(
        xs,
        [FAILED_Y - FAILED_STEP * row] * len(xs),
        linestyle="none",
        marker="x",
        markersize=10,
        markeredgewidth=2.5,
        color=FAILED_COLOR,
        transform=ax.get_xaxis_transform(),  # x in data, y in axes fractions
        clip_on=False,
        label=label,
        gid=FAILED_GID,
        zorder=5,
    )
    return mark


def _failed_legend(ax: Any, group: Group) -> None:
    """A legend entry only (no point): a group all of whose runs failed, where the plot has
    no place to mark it."""
    ax.plot(
        [],
        [],
        linestyle="none",
        marker="x",
        markeredgewidth=2.5,
        color=FAILED_COLOR,
        label=f"{group.label}: failed ({counted(len(group.failed), 'run')})",
        gid=FAILED_GID,
    )


def _series_groups(
    data: StoredExperiment, metric: MetricRef, req: PlotRequest, x: str | None
) -> tuple[list[Any], dict[Any, dict[Any, Group]]]:
    """{group value: {x value: Group}} and the group values in the order they ran."""
    by = [p for p in (x, req.group) if p is not None]
    if req.group is not None:
        data.check_params([req.group])
    _check_rest_fixed(data, req, by)
    groups = collect(data, metric, filters=req.filters, by=by, kind=_kind(data, metric, req))
    series: dict[Any, dict[Any, Group]] = {}
    for g in groups:
        key = g.value(req.group) if req.group else None
        series.setdefault(key, {})[g.value(x) if x else None] = g
    return list(series), series


# -- line -------------------------------------------------------------------------------------------


def _line(ax: Any, data: StoredExperiment, metric: MetricRef, req: PlotRequest) -> str:
    x = _x_param(data, req)
    order, series = _series_groups(data, metric, req, x)
    all_x, numeric = _sorted_values(list(dict.fromkeys(v for s in series.values() for v in s)))
    if req.log_x and not numeric:
        raise SelectionError(f"--log-x needs numbers on the x axis; {x} has {all_x}")
    position = {v: (v if numeric else i) for i, v in enumerate(all_x)}
    scale = display_scale(
        metric.unit, [v for s in series.values() for g in s.values() for v in g.values]
    )
    for i, key in enumerate(order):
        color = series_color(i)
        xs, ys, lo, hi, failed_xs = [], [], [], [], []
        for v in all_x:
            g = series[key].get(v)
            xs.append(position[v])
            if g is None or not g.values:  # a gap in the line, never a zero
                ys.append(math.nan)
                lo.append(0.0)
                hi.append(0.0)
                if g is not None and g.all_failed:
                    failed_xs.append(position[v])
                continue
            center, low, high = _center_and_bars(g.values, req)
            ys.append(scale(center))
            lo.append(scale(center - low))
            hi.append(scale(high - center))
            if g.failed:
                ax.annotate(
                    f"{len(g.failed)} of {len(g.failed) + len(g.ok_runs)} failed",
                    (position[v], scale(center)),
                    textcoords="offset points",
                    xytext=(4, 6),
                    fontsize=7,
                    color=FAILED_COLOR,
                )
        label = f"{req.group}={render(key)}" if req.group else metric.metric
        bars = ax.errorbar(
            xs, ys, yerr=[lo, hi], marker="o", markersize=4, capsize=3, color=color, label=label
        )
        bars.lines[0].set_gid(f"series:{label}")  # the data line, not the caps
        if failed_xs:
            # each group's marks on their own height, so they never hide each other
            _failed_mark(ax, failed_xs, f"{label}: failed" if req.group else "failed", i)
    ax.set_xlabel(x)
    ax.set_ylabel(axis_label(metric.metric, scale))
    if req.log_x:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(all_x)), [render(v) for v in all_x])
    elif len(all_x) <= 12:
        ax.set_xticks(all_x, [render(v) for v in all_x])
    if req.ci:
        return f"mean; bars: {req.confidence * 100:g}% confidence interval of the mean"
    return "median; bars: min–max of the runs"


def _center_and_bars(values: Sequence[float], req: PlotRequest) -> tuple[float, float, float]:
    if req.ci:
        low, high = mean_ci(values, req.confidence)
        return (low + high) / 2, low, high
    return median(values), minimum(values), maximum(values)


# -- box --------------------------------------------------------------------------------------------


def _box(ax: Any, data: StoredExperiment, metric: MetricRef, req: PlotRequest) -> str:
    if req.x is None and req.group is None:
        # one box per sweep point, labelled with the point
        groups = collect(data, metric, filters=req.filters, kind=_kind(data, metric, req))
        order: list[Any] = [None]
        series = {None: {g.label: g for g in groups}}
        all_x = list(series[None])
        x_name = ", ".join(data.params) or "sweep point"
    else:
        x = _x_param(data, req) if req.x is not None else None  # None: a box per group
        order, series = _series_groups(data, metric, req, x)
        all_x, _ = _sorted_values(list(dict.fromkeys(v for s in series.values() for v in s)))
        x_name = x or ""
    scale = display_scale(
        metric.unit, [v for s in series.values() for g in s.values() for v in g.values]
    )
    width = 0.8 / max(len(order), 1)
    failed_done = False
    for i, key in enumerate(order):
        color = series_color(i)
        offset = (i - (len(order) - 1) / 2) * width
        boxes, positions, failed_pos = [], [], []
        for j, v in enumerate(all_x):
            g = series[key].get(v)
            if g is not None and g.values:
                boxes.append(np.asarray(g.values) / scale.factor)
                positions.append(j + offset)
            elif g is not None and g.all_failed:
                failed_pos.append(j + offset)
        if boxes:
            parts = ax.boxplot(
                boxes,
                positions=positions,
                widths=width * 0.85,
                patch_artist=True,
                manage_ticks=False,
                flierprops={"markersize": 3, "markeredgecolor": color},
                medianprops={"color": "black"},
            )
            for patch in parts["boxes"]:
                patch.set_facecolor(color)
                patch.set_alpha(0.6)
            if req.group is not None:
                ax.plot([], [], "s", color=color, alpha=0.6, label=f"{req.group}={render(key)}")
        if failed_pos:
            _failed_mark(ax, failed_pos, "_nolegend_" if failed_done else "failed")
            failed_done = True
    ax.set_xticks(range(len(all_x)), ["all runs" if v is None else render(v) for v in all_x])
    ax.set_xlim(-0.6, len(all_x) - 0.4)
    ax.set_xlabel(x_name)
    ax.set_ylabel(axis_label(metric.metric, scale))
    if req.log_x:
        raise SelectionError("--log-x does not apply to a box plot (its x axis is categories)")
    kind = _kind(data, metric, req)
    return "per-interval samples" if kind == "intervals" else "one value per run"


# -- cdf --------------------------------------------------------------------------------------------


def _cdf(ax: Any, data: StoredExperiment, metric: MetricRef, req: PlotRequest) -> str:
    by = [p for p in (req.x, req.group) if p is not None]
    data.check_params(by)
    if by:
        _check_rest_fixed(data, req, by)
    groups = collect(
        data, metric, filters=req.filters, by=by or None, kind=_kind(data, metric, req)
    )
    scale = display_scale(metric.unit, [v for g in groups for v in g.values])
    for i, g in enumerate(groups):
        color = series_color(i)
        if g.values:
            v = np.sort(np.asarray(g.values)) / scale.factor
            y = np.arange(1, len(v) + 1) / len(v)
            ax.step(
                np.concatenate(([v[0]], v)),
                np.concatenate(([0.0], y)),
                where="post",
                color=color,
                label=f"{g.label} (N={len(v)})",
                gid=f"series:{g.label}",
            )
        elif g.all_failed:
            _failed_legend(ax, g)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(axis_label(metric.metric, scale))
    ax.set_ylabel("fraction of samples ≤ x")
    if req.log_x:
        ax.set_xscale("log")
    kind = _kind(data, metric, req)
    return "per-interval samples" if kind == "intervals" else "one value per run"


# -- timeseries -------------------------------------------------------------------------------------


def _timeseries(ax: Any, data: StoredExperiment, metric: MetricRef, req: PlotRequest) -> str:
    by = [p for p in (req.x, req.group) if p is not None]
    data.check_params(by)
    series = run_series(data, metric, req.filters)
    if not series:
        raise SelectionError(
            f"{metric.label} has no per-interval samples (t) in experiment "
            f"{data.experiment.id}; a time series needs them"
        )

    def key_of(point: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        return tuple((p, point.get(p)) for p in by) if by else tuple(point.items())

    keys = list(dict.fromkeys(key_of(s.run.point) for s in series))
    scale = display_scale(metric.unit, [float(np.max(np.abs(s.values))) for s in series])
    colors = {k: series_color(i) for i, k in enumerate(keys)}
    failed_runs = 0
    for key in keys:
        members = [s for s in series if key_of(s.run.point) == key]
        label = point_label(key)
        ok = [s for s in members if s.run.counts_for(metric.measurement)]
        failed_runs += len(members) - len(ok)
        if req.median and ok:
            t, low, mid, high = _across_runs(ok)
            ax.fill_between(
                *gapped(t, low / scale.factor),
                gapped(t, high / scale.factor)[1],
                color=colors[key],
                alpha=0.2,
                linewidth=0,
            )
            ax.plot(
                *gapped(t, mid / scale.factor),
                color=colors[key],
                label=f"{label} (median of {len(ok)})",
                gid=f"series:{label}",
                **_lone_marks(t),
            )
        elif not req.median:
            for n, s in enumerate(ok):
                ax.plot(
                    *gapped(s.t, s.values / scale.factor),
                    color=colors[key],
                    linewidth=1,
                    alpha=0.8,
                    label=label if n == 0 else "_nolegend_",
                    gid=f"series:{label}",
                    **_lone_marks(s.t),
                )
        for s in members:
            if not s.run.counts_for(metric.measurement):  # what it had before it failed
                ax.plot(
                    *gapped(s.t, s.values / scale.factor),
                    color=FAILED_COLOR,
                    linestyle=":",
                    linewidth=1,
                    label="_nolegend_",
                    gid=FAILED_GID,
                    **_lone_marks(s.t),
                )
    failed_points = [
        g
        for g in collect(data, metric, filters=req.filters, by=by or None, kind="intervals")
        if g.all_failed
    ]
    for g in failed_points:
        _failed_legend(ax, g)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(axis_label(metric.metric, scale))
    if req.log_x:
        ax.set_xscale("log")
    _event_lines(ax, data, req)
    note = "median across repetitions, band: min–max" if req.median else "one line per run"
    if failed_runs:
        note += f"; dotted red: {failed_runs} failed run(s)"
    return note


GAP = 1.5  # intervals: a wider step between samples is a gap (lost probes), not a slope


def gapped(t: ArrayLike, values: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The series with a NaN wherever samples are missing (a step over GAP times the usual
    one: ping's lost probes have no rtt), so the line breaks there instead of drawing a
    slope across an outage."""
    t = np.asarray(t, float)
    values = np.asarray(values, float)
    steps = np.diff(t)
    if len(steps) < 2:
        return t, values
    usual = float(np.median(steps[steps > 0])) if (steps > 0).any() else 0.0
    at = np.nonzero(steps > GAP * usual)[0] + 1 if usual else np.array([], int)
    if not len(at):
        return t, values
    mids = (t[at - 1] + t[at]) / 2
    return np.insert(t, at, mids), np.insert(values, at, np.nan)


def _lone_marks(t: ArrayLike) -> dict[str, Any]:
    """A marker on every sample of a series too short or too broken up for a line to show
    (one sample per run draws nothing as a line)."""
    _, values = gapped(t, np.ones(np.shape(t)))
    lone = [
        i
        for i, v in enumerate(values)
        if not np.isnan(v)
        and (i == 0 or np.isnan(values[i - 1]))
        and (i == len(values) - 1 or np.isnan(values[i + 1]))
    ]
    return {"marker": ".", "markevery": lone} if lone else {}


def _event_lines(ax: Any, data: StoredExperiment, req: PlotRequest) -> None:
    """A dashed vertical line at each fault of a run with `events:` (the median of when it
    really happened across the runs shown), labelled with the event."""
    at: dict[str, list[float]] = {}
    for r in data.runs:
        if point_matches(r.run.point, req.filters):
            for name, s in r.samples:
                if name == "events" and s.metric == "event_at" and s.stream:
                    at.setdefault(s.stream, []).append(s.value)
    for label, times in at.items():
        x = float(np.median(times))
        ax.axvline(x, color="0.4", linestyle="--", linewidth=1, gid=f"event:{label}")
        ax.annotate(
            label.split(" @ ")[0],
            (x, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -3),
            textcoords="offset points",
            rotation=90,
            va="top",
            fontsize=8,
            color="0.3",
        )


def _across_runs(runs: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Min, median and max across runs at each interval start. Runs with a timeline of
    events have their intervals shifted by when each tool started (a few ms apart), so starts
    are put on a common grid of the interval width first."""
    gaps = [float(d) for s in runs for d in np.diff(s.t) if d > 0]
    width = float(np.median(gaps)) if gaps else 0.0
    by_t: dict[float, list[float]] = {}
    for s in runs:
        for t, v in zip(s.t, s.values, strict=True):
            key = round(float(t) / width) * width if width else float(t)
            by_t.setdefault(round(key, 6), []).append(float(v))
    ts = sorted(by_t)
    t = np.array(ts)
    low = np.array([min(by_t[k]) for k in ts])
    mid = np.array([float(np.median(by_t[k])) for k in ts])
    high = np.array([max(by_t[k]) for k in ts])
    return t, low, mid, high
