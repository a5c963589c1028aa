"""One self-contained HTML file per experiment: `netrig report EXPERIMENT -o report.html`.

Everything is inside the file (plots as base64 PNG, the style sheet inline, no script, no
font or link to fetch), so it opens offline, attaches to a mail or a ticket, and still reads
the same in years. It says what was run (the experiment file), on what (host facts, tool
versions), what came out (per sweep point: N, median, min, max, stddev; failed runs with
their reasons), shows the plots, and compares sweep points where the experiment has an
obvious reference (netrig.report.verdicts).

    with ResultStore("netrig.db") as store:
        Path("report.html").write_text(render(load(store, "ring-hops")))
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

from netrig.base.scale import Scale, display_scale
from netrig.base.values import render as as_written
from netrig.report import verdicts
from netrig.report.plots import PlotRequest, figure, png_bytes
from netrig.stats.stored import (
    Group,
    MetricRef,
    SelectionError,
    StoredExperiment,
    collect,
    failure_reasons,
    maximum,
    median,
    minimum,
    point_label,
    resolve_metrics,
    sample_kind,
    stddev,
)

if TYPE_CHECKING:
    import numpy as np

    from netrig.results.store import Run

MAX_TIMESERIES_LINES = 12  # more sweep points than this make an unreadable time series
PNG_DPI = 150  # figures are 8 × 4.5 in: 1200 × 675 pixels, shown at up to 800 wide

STYLE = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dee7; --accent: #2456a6;
  --bad: #b3261e; --bad-bg: #fdeceb; --good: #1e7b34; --code-bg: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 28px 32px 48px; }
header { border-bottom: 3px solid var(--accent); padding-bottom: 12px; margin-bottom: 8px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 34px 0 10px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; }
.sub, .note, figcaption, footer { color: var(--muted); font-size: 13px; }
.badges span { display: inline-block; margin: 6px 6px 0 0; padding: 2px 10px;
  border-radius: 12px; background: var(--code-bg); border: 1px solid var(--line);
  font-size: 13px; }
.badges span.bad { background: var(--bad-bg); border-color: #f3b8b4; color: var(--bad); }
.badges span.ok { color: var(--good); }
nav { font-size: 13px; margin-top: 10px; }
nav a { color: var(--accent); margin-right: 14px; text-decoration: none; }
.grid { display: grid; grid-template-columns: minmax(0, 1.5fr) minmax(0, 1fr); gap: 24px; }
pre { background: var(--code-bg); border: 1px solid var(--line); border-radius: 6px;
  padding: 10px 12px; overflow-x: auto; font: 12px/1.45 ui-monospace, "DejaVu Sans Mono",
  Menlo, Consolas, monospace; margin: 0; }
table { border-collapse: collapse; margin: 4px 0 10px; font-size: 13.5px; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { background: var(--code-bg); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.failed td { background: var(--bad-bg); color: var(--bad); }
td.up { color: var(--good); font-weight: 600; }
td.down { color: var(--bad); font-weight: 600; }
table.facts th { width: 11em; background: none; font-weight: 500; color: var(--muted); }
figure { margin: 14px 0 22px; }
figure img { display: block; width: 100%; max-width: 820px; height: auto;
  border: 1px solid var(--line); border-radius: 6px; }
details { margin: 6px 0 12px; }
summary { cursor: pointer; color: var(--accent); font-size: 13.5px; }
footer { margin-top: 40px; border-top: 1px solid var(--line); padding-top: 10px; }
@media (max-width: 820px) { .grid { grid-template-columns: 1fr; } }
"""


def render(data: StoredExperiment, generated: datetime | None = None) -> str:
    """The whole HTML document for one stored experiment."""
    from netrig import __version__

    e = data.experiment
    metrics = resolve_metrics(data)
    layout = Layout.of(data)
    body = [
        _header(data),
        '<div class="grid"><section id="run">',
        _what_was_run(data),
        '</section><section id="host">',
        _on_what(data),
        "</section></div>",
        _lab_picture(data),
        _plots(data, metrics, layout),
        _results(data, metrics),
        _comparisons(data, metrics, layout),
        _failures(data),
        _all_runs(data),
    ]
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    footer = (
        f"<footer>Made by netrig {escape(__version__)} on {when} from experiment {e.id} "
        f"(file sha256 {escape(e.file_hash[:16])}…). One self-contained file: it needs no "
        "network to view.</footer>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>netrig report: {escape(e.name)} (experiment {e.id})</title>\n"
        f"<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
        + "\n".join(part for part in body if part)
        + f"\n{footer}\n</main>\n</body>\n</html>\n"
    )


# -- what to plot and compare ---------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Which parameter goes on the x axis and which one splits the lines, chosen from the
    sweep: x is the parameter with the most values (numbers first), the group the next;
    any further parameter is fixed at its first value. A sweep that is no grid (`vary:`
    as a list of points) is shown point by point (`by_point`): fixing a parameter there
    had hidden points (seed000-shapes showed the chains, not the ring)."""

    x: str | None
    group: str | None
    fixed: tuple[tuple[str, str], ...]
    by_point: bool = False

    @classmethod
    def of(cls, data: StoredExperiment) -> Layout:
        varied = [p for p in data.params if len(data.values_of(p)) > 1]
        if len(varied) > 1 and data.vary.listed:  # from the file: an interrupted grid is none
            return cls(None, None, (), by_point=True)

        def rank(p: str) -> tuple[bool, int]:
            numeric = all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in data.values_of(p)
            )
            return (not numeric, -len(data.values_of(p)))

        ordered = sorted(varied, key=rank)
        x = ordered[0] if ordered else None
        group = ordered[1] if len(ordered) > 1 else None
        fixed = tuple((p, str(data.values_of(p)[0])) for p in ordered[2:])
        return cls(x, group, fixed)


# -- sections -------------------------------------------------------------------------------------


def _header(data: StoredExperiment) -> str:
    e = data.experiment
    statuses: dict[str, int] = {}
    for r in data.runs:
        statuses[r.run.status] = statuses.get(r.run.status, 0) + 1
    started = e.started.strftime("%Y-%m-%d %H:%M:%S UTC")
    took = ""
    if e.ended is not None:
        took = f", took {_duration((e.ended - e.started).total_seconds())}"
    badges = [f"<span>experiment {e.id}</span>"]
    status_class = "ok" if e.status == "ok" else "bad"
    badges.append(f'<span class="{status_class}">{escape(e.status)}</span>')
    for status, n in statuses.items():
        cls = ' class="bad"' if status != "ok" else ' class="ok"'
        badges.append(f"<span{cls}>{n} run{'s' if n != 1 else ''} {escape(status)}</span>")
    points = len(data.points())
    badges.append(f"<span>{points} sweep point{'s' if points != 1 else ''}</span>")
    nav = "".join(
        f'<a href="#{anchor}">{title}</a>'
        for anchor, title in (
            ("run", "Experiment file"),
            ("host", "Host"),
            ("plots", "Plots"),
            ("results", "Results"),
            ("comparisons", "Comparisons"),
            ("failures", "Failed runs"),
            ("runs", "All runs"),
        )
    )
    return (
        f"<header><h1>{escape(e.name)}</h1>"
        f'<div class="sub">started {started}{took}</div>'
        f'<div class="badges">{"".join(badges)}</div><nav>{nav}</nav></header>'
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _what_was_run(data: StoredExperiment) -> str:
    e = data.experiment
    return (
        "<h2>What was run</h2>"
        f'<pre class="file">{escape(e.file_text.rstrip())}</pre>'
        f'<p class="note">The experiment file as stored with the results '
        f"(sha256 {escape(e.file_hash[:16])}…).</p>"
    )


def _lab_picture(data: StoredExperiment) -> str:
    """The lab, drawn from the stored experiment file (its first sweep point)."""
    from netrig.report.labgraph import experiment_svg

    svg, why = experiment_svg(data.experiment.file_text)
    if svg is None:
        return f'<h2>The lab</h2><p class="note">No picture: {escape(why)}.</p>'
    which = f"{escape(why[0].upper() + why[1:])}. " if why else ""
    return (
        f'<h2>The lab</h2><figure class="lab">{svg}</figure>'
        f'<p class="note">{which}Nodes by role (host, router, switch); each link end with '
        "its interface and addresses (`netrig graph FILE -o lab.svg` draws it too).</p>"
    )


def _on_what(data: StoredExperiment) -> str:
    """The host facts and tool versions; of a cluster run (facts {"cluster": …, "hosts":
    {name: facts}}) one such pair of tables per host: they had been one JSON blob."""
    facts = dict(data.experiment.host_facts)
    hosts = facts.get("hosts")
    out = ["<h2>On what</h2>"]
    if not (isinstance(hosts, dict) and hosts and all(isinstance(v, dict) for v in hosts.values())):
        return "".join([*out, *_facts_tables(facts, "h3")])
    del facts["hosts"]
    if facts:
        out.append(f'<table class="facts">{_fact_rows(facts)}</table>')
    for name, known in sorted(hosts.items()):
        out.append(f"<h3>Host {escape(str(name))}</h3>")
        out.extend(_facts_tables(dict(known), "h4"))
    return "".join(out)


def _facts_tables(facts: dict[str, Any], heading: str) -> list[str]:
    """One host's facts table, then its tool versions."""
    tools = facts.pop("tool_versions", {}) or {}
    rows, tool_rows = _fact_rows(facts), _fact_rows(tools, keep_underscores=True)
    return [
        f'<table class="facts">{rows}</table>'
        if rows
        else '<p class="note">No host facts stored.</p>',
        f"<{heading}>Tool versions</{heading}>",
        f'<table class="facts">{tool_rows}</table>'
        if tool_rows
        else '<p class="note">No tool versions stored.</p>',
    ]


def _fact_rows(facts: dict[str, Any], keep_underscores: bool = False) -> str:
    def name(key: Any) -> str:
        return str(key) if keep_underscores else str(key).replace("_", " ")

    return "".join(
        f"<tr><th>{escape(name(k))}</th><td>{escape(_fact(v))}</td></tr>"
        for k, v in sorted(facts.items())
    )


def _fact(value: Any) -> str:
    """A fact as text; a mapping (the kernel features) as `name: value` pairs."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fact(v)}" for k, v in value.items())
    return json.dumps(value) if isinstance(value, list) else str(value)


def _param_cells(key: Sequence[tuple[str, Any]], params: Sequence[str], tag: str = "td") -> str:
    values = dict(key)
    return "".join(f"<{tag}>{escape(str(values.get(p, '')))}</{tag}>" for p in params)


def _results(data: StoredExperiment, metrics: Sequence[MetricRef]) -> str:
    out = ['<section id="results"><h2>Results</h2>']
    if not metrics:
        out.append('<p class="note">No run stored a sample.</p></section>')
        return "".join(out)
    out.append(
        '<p class="note">Per sweep point, over the runs that succeeded (and a run failed by '
        "another measurement only: its other values count); a failed run is counted as "
        "failed, never as a zero.</p>"
    )
    params = data.params
    for metric in metrics:
        groups = collect(data, metric)
        scale = display_scale(metric.unit, [v for g in groups for v in g.values])
        kind = sample_kind(data, metric, "auto")
        what = " (per-interval samples)" if kind == "intervals" else ""
        out.append(f"<h3>{escape(metric.label)}{what}</h3><table><tr>")
        out.append("".join(f"<th>{escape(p)}</th>" for p in params) or "<th>point</th>")
        unit = f" ({escape(scale.unit)})" if scale.unit else ""
        for column in ("N", f"median{unit}", f"min{unit}", f"max{unit}", f"stddev{unit}", "failed"):
            out.append(f'<th class="num">{column}</th>')
        out.append("</tr>")
        for g in groups:
            out.append(_summary_row(g, params, scale))
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def _summary_row(g: Group, params: Sequence[str], scale: Scale) -> str:
    cells = _param_cells(g.key, params) if params else "<td>all runs</td>"
    failed = len(g.failed) + g.interrupted
    failed_text = str(len(g.failed)) if g.failed else ""
    if g.interrupted:
        failed_text += f" +{g.interrupted} interrupted"
    if g.values:
        stats = [
            scale.text(median(g.values)),
            scale.text(minimum(g.values)),
            scale.text(maximum(g.values)),
            scale.text(stddev(g.values)),
        ]
    else:
        stats = ["—"] * 4
    row_class = ' class="failed"' if not g.values and failed else ""
    nums = "".join(f'<td class="num">{s}</td>' for s in [str(len(g.values)), *stats, failed_text])
    return f"<tr{row_class}>{cells}{nums}</tr>"


def _failures(data: StoredExperiment) -> str:
    failed = [r.run for r in data.runs if r.run.status != "ok"]
    out = ['<section id="failures"><h2>Failed runs</h2>']
    if not failed:
        out.append('<p class="note">None: every run succeeded.</p></section>')
        return "".join(out)
    reasons = failure_reasons([r for r in failed if r.status == "failed"])
    if reasons:
        out.append('<table><tr><th>reason</th><th class="num">runs</th></tr>')
        for reason, n in reasons:
            out.append(f'<tr class="failed"><td>{escape(reason)}</td><td class="num">{n}</td></tr>')
        out.append("</table>")
    host_head, host_cell = _host_column(data)
    out.append(f"<table><tr><th>run</th><th>point</th>{host_head}<th>repetition</th>")
    out.append("<th>status</th><th>reason</th></tr>")
    for run in failed:
        stderr = ""
        if run.stderr:
            stderr = (
                f"<details><summary>stderr</summary><pre>{escape(run.stderr.rstrip())}</pre>"
                "</details>"
            )
        out.append(
            f'<tr class="failed"><td>r{run.id}</td><td>{escape(point_label(run.point))}</td>'
            f'{host_cell(run)}<td class="num">{run.repetition}</td><td>{escape(run.status)}</td>'
            f"<td>{escape(run.reason or '')}{stderr}</td></tr>"
        )
    out.append("</table></section>")
    return "".join(out)


def _plots(data: StoredExperiment, metrics: Sequence[MetricRef], layout: Layout) -> str:
    out = ['<section id="plots"><h2>Plots</h2>']
    shown = 0
    for metric, request, caption in _plot_plan(data, metrics, layout):
        try:
            fig = figure(data, request)
        except SelectionError as exc:
            out.append(f'<p class="note">{escape(metric.label)}: no plot ({escape(str(exc))})</p>')
            continue
        encoded = base64.b64encode(png_bytes(fig, dpi=PNG_DPI)).decode("ascii")
        alt = f"{request.kind} plot of {metric.label}"
        out.append(
            f'<figure><img alt="{escape(alt)}" width="800" height="450" '
            f'src="data:image/png;base64,{encoded}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>"
        )
        shown += 1
    if not shown:
        out.append('<p class="note">Nothing to plot.</p>')
    out.append("</section>")
    return "".join(out)


def _plot_plan(
    data: StoredExperiment, metrics: Sequence[MetricRef], layout: Layout
) -> Iterable[tuple[MetricRef, PlotRequest, str]]:
    """The figures worth showing: a line (or box) per metric along the sweep, a time series
    for metrics with interval samples, distributions for per-sample metrics."""
    fixed = layout.fixed
    note = f" Other parameters fixed at {point_label(fixed)}." if fixed else ""
    interval_metrics = {ref for ref, _, n in data.metrics() if n}
    for metric in metrics:
        name = f"{metric.measurement}.{metric.metric}"
        per_sample = sample_kind(data, metric, "auto") == "intervals"
        if layout.x is None or per_sample:
            yield (
                metric,
                PlotRequest(kind="box", y=name, x=layout.x, group=layout.group, filters=fixed),
                f"{metric.label}: distribution per sweep point." + note,
            )
        else:
            yield (
                metric,
                PlotRequest(kind="line", y=name, x=layout.x, group=layout.group, filters=fixed),
                f"{metric.label} against {layout.x}: median of the runs, bars from min to max; "
                "a red × marks a sweep point whose runs all failed." + note,
            )
        if per_sample:
            yield (
                metric,
                PlotRequest(kind="cdf", y=name, x=layout.x, group=layout.group, filters=fixed),
                f"{metric.label}: cumulative distribution of the samples." + note,
            )
        elif metric in interval_metrics and len(data.points()) <= MAX_TIMESERIES_LINES:
            yield (
                metric,
                PlotRequest(kind="timeseries", y=name, median=True),
                f"{metric.label} over time during a run: median across repetitions, band from "
                "min to max.",
            )


def _comparisons(data: StoredExperiment, metrics: Sequence[MetricRef], layout: Layout) -> str:
    """Each sweep point against a reference: along x when only one parameter varies; between
    the groups (the first group is the reference) at each x when two do."""
    out = ['<section id="comparisons"><h2>Comparisons</h2>']
    if layout.by_point:
        how = f"each sweep point against the first ({point_label(data.points()[0])})"
    elif layout.x is None:
        out.append('<p class="note">One sweep point: nothing to compare it with.</p></section>')
        return "".join(out)
    elif layout.group is None:
        first = as_written(data.values_of(layout.x)[0])
        how = f"each {layout.x} against the first ({layout.x}={first})"
    else:
        first = data.values_of(layout.group)[0]
        how = f"at each {layout.x}, each {layout.group} against {layout.group}={first}"
    out.append(
        f'<p class="note">{escape(how)}, at 95% confidence; relative differences with '
        "Fieller's interval (pooled variances, as Student's t, unless they differ), "
        "Welch's t where the variances differ, Mann–Whitney U for "
        "skewed data, and the runs per side a 2% difference would need (80% power).</p>"
    )
    for metric in metrics:
        every = collect(data, metric)
        values = {v for g in every for v in g.values}
        failed = sum(len(g.failed) for g in every)
        if len(values) == 1 and not failed:
            out.append(
                f'<h3>{escape(metric.label)}</h3><p class="note">Every run gave '
                f"{values.pop():g}: nothing to compare.</p>"
            )
            continue
        rows, blocks = _comparison_rows(data, metric, layout)
        if not rows:
            continue
        out.append(f"<h3>{escape(metric.label)}</h3><table><tr><th>point</th><th>against</th>")
        for column in (
            "N",
            "relative difference (95% CI)",
            "Student's t",
            "Welch's t",
            "Mann–Whitney p",
            "verdict",
            "runs for 2%",
        ):
            cls = ' class="num"' if column in ("N", "Mann–Whitney p", "runs for 2%") else ""
            out.append(f"<th{cls}>{column}</th>")
        out.append("</tr>" + "".join(rows) + "</table>")
        for title, text in blocks:
            out.append(
                f"<details><summary>ministat: {escape(title)}</summary>"
                f"<pre>{escape(text)}</pre></details>"
            )
    out.append("</section>")
    return "".join(out)


def _comparison_rows(
    data: StoredExperiment, metric: MetricRef, layout: Layout
) -> tuple[list[str], list[tuple[str, str]]]:
    if layout.by_point:  # each point against the first
        return _comparison_sets([(metric.label, collect(data, metric))])
    assert layout.x is not None
    by = [layout.x] + ([layout.group] if layout.group else [])
    groups = collect(data, metric, filters=layout.fixed, by=by)
    # sets of groups compared among themselves: (title, [groups], first is the reference)
    sets: list[tuple[str, list[Group]]] = []
    if layout.group is None:
        sets.append((f"{metric.label} by {layout.x}", groups))
    else:
        for xv in data.values_of(layout.x):
            members = [g for g in groups if g.value(layout.x) == xv]
            sets.append((f"{metric.label}, {layout.x}={as_written(xv)}", members))
    return _comparison_sets(sets)


def _comparison_sets(
    sets: list[tuple[str, list[Group]]],
) -> tuple[list[str], list[tuple[str, str]]]:
    """Rows and ministat blocks of sets of groups, each set's first group the reference."""
    rows: list[str] = []
    blocks: list[tuple[str, str]] = []
    for title, members in sets:
        if len(members) < 2:
            continue
        reference, others = members[0], members[1:]
        for g in others:
            rows.append(_comparison_row(reference, g))
        enough = [g for g in members if len(g.values) >= 3][:7]
        usable: list[tuple[str, np.ndarray | list[float]]] = [(g.label, g.values) for g in enough]
        if len(usable) >= 2 and usable[0][0] == reference.label:
            blocks.append((title, verdicts.ministat_text(usable, width=74).decode()))
    return rows, blocks


def _comparison_row(reference: Group, g: Group) -> str:
    head = f"<td>{escape(g.label)}</td><td>{escape(reference.label)}</td>"
    n = f'<td class="num">{len(g.values)} / {len(reference.values)}</td>'
    if min(len(reference.values), len(g.values)) < 2:
        side = g if len(g.values) < 2 else reference
        why = "its runs failed" if side.all_failed else "fewer than 2 values"
        return (
            f'<tr class="failed">{head}{n}<td colspan="7">not compared: {escape(side.label)}: '
            f"{why}</td></tr>"
        )
    c = verdicts.compare(reference.values, g.values, 0.95, 0.02)
    r = c.relative
    if r.bounded:
        rel = f"{r.percent:+.2f}% ({r.ci_low:+.2f}% .. {r.ci_high:+.2f}%)"
    else:
        rel = "no bound: the reference is too noisy"
    student = _student(reference.values, g.values)
    welch = "—"
    if c.variances.differ:
        w = c.welch
        welch = "proven" if w.significant else "not proven"
    mw = f"{c.mann_whitney.p_value:.2g}"
    # the t test that holds decides (Student's, or Welch's where the variances differ), as
    # in `netrig compare`: an unbounded interval had said "no difference proven" beside a
    # Student's t that proves one
    if c.proven:
        verdict, cls = c.direction, "up" if c.direction == "increase" else "down"
        if not r.bounded:
            verdict += " proven, size unbounded"
    else:
        verdict, cls = "no difference proven", ""
    cls_attr = f' class="{cls}"' if cls else ""
    runs = "—" if c.needed is None else str(c.needed.runs_per_side)
    if c.needed is not None and not c.runs_ok:
        runs += " (too few runs)"
    return (
        f"<tr>{head}{n}<td>{rel}</td><td>{student}</td><td>{welch}</td>"
        f'<td class="num">{mw}</td><td{cls_attr}>{verdict}</td><td class="num">{runs}</td></tr>'
    )


def _student(reference: Sequence[float], candidate: Sequence[float]) -> str:
    """ministat's verdict in short: its Student's t interval of the relative difference."""
    from netrig.stats.ministat import make_dataset, student_t

    rs, ds = make_dataset(b"x", reference), make_dataset(b"+", candidate)
    v = student_t(ds, rs, 2)
    if not v.proven:
        return "not proven"
    pct, err = v.percent(rs.avg())
    if not (math.isfinite(pct) and math.isfinite(err)):
        return "proven"
    return f"{pct:+.2f}% ± {err:.2f}%"


def _host_column(data: StoredExperiment) -> tuple[str, Callable[[Run], str]]:
    """The header and cell of a runs table's host column: of runs on more than one cluster
    host only (a spread lab's run names its hosts, h1+h2)."""
    if len({h for r in data.runs if r.run.host for h in r.run.host.split("+")}) < 2:
        return "", lambda run: ""
    return "<th>host</th>", lambda run: f"<td>{escape(run.host or '')}</td>"


def _all_runs(data: StoredExperiment) -> str:
    host_head, host_cell = _host_column(data)
    out = [
        '<section id="runs"><h2>All runs</h2><details><summary>'
        f"{len(data.runs)} runs in the order they ran</summary><table><tr><th>run</th>"
        f"<th>point</th>{host_head}<th>repetition</th><th>status</th><th>duration</th>"
        "<th>reason</th></tr>"
    ]
    for r in data.runs:
        run = r.run
        cls = ' class="failed"' if run.status != "ok" else ""
        duration = f"{run.duration:.2f} s" if run.duration is not None else "—"
        out.append(
            f"<tr{cls}><td>r{run.id}</td><td>{escape(point_label(run.point))}</td>"
            f'{host_cell(run)}<td class="num">{run.repetition}</td><td>{escape(run.status)}</td>'
            f'<td class="num">{duration}</td><td>{escape(run.reason or "")}</td></tr>'
        )
    out.append("</table></details></section>")
    return "".join(out)
