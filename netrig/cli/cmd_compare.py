"""`netrig compare A B` and `netrig stat --experiment`: ministat on stored runs, and more.

Both read the results store through netrig.stats.stored and print ministat's own block
(netrig.stats.ministat, so the bytes are what ministat prints for the same numbers);
compare adds what ministat lacks (netrig.report.verdicts). `netrig stat` routes here
when its command line has --experiment, so that its ministat mode stays byte-exact.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from netrig.base.values import render
from netrig.cli.common import DB_OPTION, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, store_exit_code
from netrig.cli.group import cli
from netrig.stats.ministat import MAX_DATASETS, STUDENT_PCT

if TYPE_CHECKING:
    from netrig.stats.stored import SampleKind

CONFIDENCE_LEVELS = [f"{p:g}" for p in STUDENT_PCT]  # the levels ministat's table has


class CommandError(Exception):
    """Stop with a message on stderr and an exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


@contextmanager
def reported_errors() -> Iterator[None]:
    """Store and selection errors become one line on stderr and the documented exit code."""
    from netrig.results.store import StoreError
    from netrig.stats.stored import SelectionError

    try:
        yield
    except SelectionError as exc:
        _die(str(exc), EXIT_BAD_INPUT)
    except CommandError as exc:
        _die(str(exc), exc.code)
    except StoreError as exc:  # NotAStore: --db names a file that is not a netrig database
        _die(str(exc), store_exit_code(exc))
    except OSError as exc:  # an output file that cannot be written (-o /no/such/dir/x.png)
        _die(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), EXIT_FAILURE)


def _die(message: str, code: int) -> None:
    click.echo(f"netrig: {message}", err=True)
    sys.exit(code)


def open_store(db: str) -> Any:
    """The results store at `db`; a missing file is a mistake, not a new empty database."""
    from netrig.results.store import ResultStore

    if db != ":memory:" and not os.path.exists(db):
        raise CommandError(f"no results database at {db} (netrig run writes one; choose with --db)")
    return ResultStore(db)


def parse_detect(text: str) -> float:
    """`2%` or `2` → 0.02: the relative difference --detect asks about."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*%?\s*", text)
    if m is None or float(m.group(1)) <= 0:
        raise click.BadParameter(f"{text!r}: give a percentage such as 2%")
    return float(m.group(1)) / 100


METRIC_OPTION = click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="METRIC",
    help="Metric to use (throughput, or iperf3-2.throughput for one measurement). "
    "Repeatable; default: the headline metrics of each measurement.",
)
INTERVALS_OPTION = click.option(
    "--intervals",
    is_flag=True,
    help="Use the per-interval samples (t set) instead of each run's summary value. "
    "Without it, a metric that has only interval samples (ping's rtt) uses those.",
)


# -- netrig compare ---------------------------------------------------------------------------


@cli.command("compare")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@METRIC_OPTION
@click.option(
    "--confidence",
    type=click.Choice(CONFIDENCE_LEVELS),
    default="95",
    show_default=True,
    help="Confidence level in percent (the levels ministat knows).",
)
@click.option(
    "--detect",
    default="2%",
    show_default=True,
    metavar="PCT",
    help="Warn when the runs are too few to detect a relative difference of this size.",
)
@click.option("-w", "--width", type=click.IntRange(10), help="Width of ministat's plot.")
@click.option(
    "--by",
    type=click.Choice(["host"]),
    help="host: compare A and B within each cluster host (netrig run --cluster).",
)
@INTERVALS_OPTION
@DB_OPTION
def compare_command(
    a: str,
    b: str,
    metrics: tuple[str, ...],
    confidence: str,
    detect: str,
    width: int | None,
    by: str | None,
    intervals: bool,
    db: str,
) -> None:
    """Is B different from A? ministat's verdict on stored runs, and what ministat lacks.

    A and B are an experiment (id or name: the newest of that name) with optional
    sweep-point filters, EXPERIMENT:PARAM=VALUE[,PARAM=VALUE], or filters alone
    (PARAM=VALUE), which take the other side's experiment or the newest one:

    \b
      netrig compare 3 4                     # two experiments, e.g. before/after
      netrig compare ring:hops=1 ring:hops=8 # two sweep points of one experiment
      netrig compare hops=1 hops=8 --metric throughput

    For each metric: ministat's block (A is x, B is +) with Student's t, then the
    relative difference with its confidence interval (Fieller's, with pooled variances
    while Student's t holds, else with Welch's), Welch's t when an F test finds the
    variances differ, the Mann-Whitney U test (no normality assumed:
    latencies), and a warning when the runs per side are too few to detect a
    --detect difference with 80% power. Only runs that succeeded give values (and
    those failed by another measurement only); failed runs are listed with their
    reasons. Runs made on a cluster (netrig run
    --cluster) warn when A and B ran on different hosts; --by host compares within
    each host.

    Exit codes: 0 compared, 1 some metric had too few values on a side, 2 bad input.
    """
    from netrig.cli.terminal import terminal_width

    stdout = sys.stdout.buffer
    with reported_errors():
        relative = parse_detect(detect)
        shown_width = width or terminal_width(stdout, os.environ)
        with open_store(db) as store:
            text, code = compare_text(
                store,
                a,
                b,
                metrics,
                confidence=float(confidence) / 100,
                detect=relative,
                width=shown_width,
                intervals=intervals,
                by=by,
            )
    stdout.write(text.encode())
    stdout.flush()
    sys.exit(code)


def _sides(store: Any, a: str, b: str) -> tuple[Any, Any, Any, Any]:
    """Selectors and loaded experiments of both sides (an experiment read once)."""
    from netrig.stats.stored import load, parse_selector

    sa, sb = parse_selector(a), parse_selector(b)
    taken = {a: "", b: ""}  # how a side that names no experiment got one
    if sa.experiment is None or sb.experiment is None:
        fallback = sa.experiment or sb.experiment
        how = "the other side's"
        if fallback is None:
            everything = store.experiments()
            if not everything:
                raise CommandError(f"{store.path} holds no experiment")
            fallback, how = str(everything[-1].id), "the newest"
        taken = {given: how if s.experiment is None else "" for given, s in ((a, sa), (b, sb))}
        sa = type(sa)(sa.experiment or fallback, sa.filters)
        sb = type(sb)(sb.experiment or fallback, sb.filters)
    assert sa.experiment is not None and sb.experiment is not None  # a fallback named both
    da = load(store, sa.experiment)
    db = da if sb.experiment == sa.experiment else load(store, sb.experiment)
    # the filters' parameters before any metric: `alg=x alg=y` on a newest experiment
    # without `alg` had said it has no metric 'requests_per_s'; and a value no run has is
    # bad input naming the values there are, as in `stat` and `plot`
    for given, selector, data in ((a, sa, da), (b, sb, db)):
        names = [name for name, _ in selector.filters]
        if not taken[given] or all(name in data.params for name in names):
            data.check_filters(selector.filters)
            continue
        missing = next(name for name in names if name not in data.params)
        raise CommandError(
            f"{given!r} names no experiment, so it took {taken[given]}, experiment "
            f"{data.experiment.id} ({data.experiment.name}), which has no sweep parameter "
            f"{missing!r}" + _having(store, missing, selector)
        )
    return sa, sb, da, db


def _having(store: Any, param: str, selector: Any) -> str:
    """`; lbalg (experiment 3) has it: write lbalg:alg=roundrobin`, for the newest
    experiment whose runs have `param`, or '' when none has."""
    for record in reversed(store.experiments()):
        if any(param in run.point for run in store.runs(record.id)):
            filters = ",".join(f"{k}={v}" for k, v in selector.filters)
            return f"; {record.name} (experiment {record.id}) has it: write {record.name}:{filters}"
    return f"; no experiment in {store.path} has it"


def compare_text(
    store: Any,
    a: str,
    b: str,
    metric_names: Sequence[str] = (),
    *,
    confidence: float = 0.95,
    detect: float | None = 0.02,
    width: int = 74,
    intervals: bool = False,
    by: str | None = None,
) -> tuple[str, int]:
    """The whole `netrig compare` output and its exit code (by="host": one comparison per
    cluster host)."""
    from netrig.stats.stored import collect, pooled, resolve_metrics, sample_kind

    sa, sb, da, db = _sides(store, a, b)
    if metric_names:
        metrics = resolve_metrics(da, metric_names)
        resolve_metrics(db, metric_names)  # B must have them too: SelectionError otherwise
    else:
        present_b = {(m.measurement, m.metric) for m in resolve_metrics(db)}
        metrics = [m for m in resolve_metrics(da) if (m.measurement, m.metric) in present_b]
        if not metrics:
            raise CommandError(
                f"{sa} and {sb} share no headline metric; name one with --metric", EXIT_BAD_INPUT
            )
    out: list[str] = []
    code, unmatched = EXIT_OK, False
    names = (str(sa), str(sb)) if str(sa) != str(sb) else (f"A {sa}", f"B {sb}")
    # each side's own reference: a metric whole in A's runs may be per stream in B's (ping's
    # rtt of one pair against all_pairs), where A's had given B no value
    refs_b = {ref: ref for ref, _, _ in db.metrics()}
    for metric in metrics:
        metric_b = refs_b.get(metric, metric)
        kind = "intervals" if intervals else sample_kind(da, metric, "auto")
        ga = collect(da, metric, filters=sa.filters, kind=kind)
        gb = collect(db, metric_b, filters=sb.filters, kind=kind)
        if out:
            out.append("")
        out.append(f"== {metric}" + (" per-interval samples" if kind == "intervals" else ""))
        if str(metric_b) != str(metric):
            out.append(f"+ {sb}: {metric_b}")
        for symbol, selector, groups in (("x", sa, ga), ("+", sb, gb)):
            out.extend(_side_notes(symbol, str(selector), groups))
        if not ga or not gb:  # no run of a side has this metric: bad input, nothing to weigh
            unmatched = True
            continue
        hosts_a, hosts_b = _host_counts(ga), _host_counts(gb)
        if by == "host":
            for host in sorted(set(hosts_a) | set(hosts_b)):
                only = (("host", host),)
                ha = collect(da, metric, filters=(*sa.filters, *only), kind=kind)
                hb = collect(db, metric_b, filters=(*sb.filters, *only), kind=kind)
                out.append(f"-- on host {host}")
                if not _verdict(out, pooled(ha).array, pooled(hb).array, names, confidence,
                                width, detect):
                    code = EXIT_FAILURE
            continue
        out.extend(_confounding(hosts_a, hosts_b))
        if not _verdict(out, pooled(ga).array, pooled(gb).array, names, confidence, width,
                        detect):
            code = EXIT_FAILURE
    return "\n".join(out) + "\n", (EXIT_BAD_INPUT if unmatched else code)


def _verdict(out: list[str], va: Any, vb: Any, names: tuple[str, str], confidence: float,
             width: int, detect: float | None) -> bool:
    """ministat's block and what ministat lacks, for two arrays; False if too few values."""
    from netrig.report import verdicts

    if min(len(va), len(vb)) < 2:  # each short side with its own count
        short = [f"{mark} has {len(v)} value(s)" for mark, v in (("x", va), ("+", vb)) if len(v) < 2]
        out.append(f"cannot compare: {' and '.join(short)}; at least 2 per side are needed")
        return False
    block = verdicts.ministat_block(names, va, vb, confidence, width)
    if block is None:
        out.append(
            f"(ministat's block left out: it needs at least {verdicts.MINISTAT_MIN_VALUES} "
            f"values per side, here {len(va)} and {len(vb)})"
        )
    else:
        out.append(block.decode().rstrip("\n"))
    comparison = verdicts.compare(va, vb, confidence, detect)
    out.extend(verdicts.beyond_ministat(comparison, student_shown=block is not None))
    return True


def _host_counts(groups: Sequence[Any]) -> dict[str, int]:
    """Runs that gave values, per cluster host (empty: not run on a cluster)."""
    counts: dict[str, int] = {}
    for g in groups:
        for run in g.ok_runs:
            if run.host:
                counts[run.host] = counts.get(run.host, 0) + 1
    return counts


def _confounding(a: dict[str, int], b: dict[str, int]) -> list[str]:
    """A warning when A's and B's runs come from different hosts (or in very different
    shares): a difference between them may then be one between hosts."""
    if not a or not b:
        return []
    na, nb = sum(a.values()), sum(b.values())
    shares = {h: (a.get(h, 0) / na, b.get(h, 0) / nb) for h in set(a) | set(b)}
    if all(abs(x - y) <= 0.25 for x, y in shares.values()):
        return []
    def where(counts: dict[str, int]) -> str:
        return ", ".join(f"{h}×{n}" for h, n in sorted(counts.items()))

    return [
        f"warning: the difference is confounded with hosts: x ran on {where(a)}, + on "
        f"{where(b)}; `--by host` compares within each host"
    ]


def _side_notes(symbol: str, selector: str, groups: Sequence[Any]) -> list[str]:
    """What a side's values stand for, when not one plain sweep point: pooled points,
    failed and interrupted runs (with reasons), or nothing at all."""
    from netrig.stats.stored import failure_reasons

    if not groups:
        return [f"{symbol} {selector}: no run matches"]
    failed = [run for g in groups for run in g.failed]
    notes = []
    if len(groups) > 1:
        labels = "; ".join(g.label for g in groups)
        notes.append(f"{symbol} {selector}: pooled from {len(groups)} sweep points ({labels})")
    if failed:
        reasons = "; ".join(
            f"{reason}" + (f" (×{n})" if n > 1 else "") for reason, n in failure_reasons(failed)
        )
        notes.append(f"{symbol} {len(failed)} failed run(s), not counted: {reasons}")
    interrupted = sum(g.interrupted for g in groups)
    if interrupted:
        notes.append(f"{symbol} {interrupted} interrupted run(s), not counted")
    return notes


# -- netrig stat --experiment -------------------------------------------------------------------


@click.command(
    "stat",
    context_settings={"help_option_names": ["--help"]},
    short_help="ministat per sweep point of a stored experiment.",
)
@click.option(
    "--experiment",
    "ref",
    required=True,
    metavar="EXPERIMENT",
    help="Id or name, optionally with filters: ring:routing=ecmp.",
)
@click.option(
    "--by",
    "by",
    metavar="PARAM",
    help="One block per combination of the other parameters, comparing the values of PARAM.",
)
@METRIC_OPTION
@INTERVALS_OPTION
@click.option("-A", "suppress_plot", is_flag=True, help="Statistics only, no graph.")
@click.option("-n", "summary_only", is_flag=True, help="Summary statistics only, no graph/test.")
@click.option("-s", "separate_bars", is_flag=True, help="avg/median/stddev bars on separate lines.")
@click.option(
    "-c",
    "confidence",
    type=click.Choice(CONFIDENCE_LEVELS),
    default="95",
    help="Confidence level: 80, 90, 95 (default), 98, 99 or 99.5.",
)
@click.option("-w", "width", type=click.IntRange(10), help="Width of the graph.")
@DB_OPTION
def stat_stored_command(
    ref: str,
    by: str | None,
    metrics: tuple[str, ...],
    intervals: bool,
    suppress_plot: bool,
    summary_only: bool,
    separate_bars: bool,
    confidence: str,
    width: int | None,
    db: str,
) -> None:
    """ministat on a stored experiment: one block per sweep point, or with --by PARAM one
    block per combination of the other parameters whose data sets are PARAM's values
    (the first value is the reference, as ministat's first file)."""
    from netrig.cli.terminal import terminal_width

    stdout = sys.stdout.buffer
    with reported_errors(), open_store(db) as store:
        text, code = stat_text(
            store,
            ref,
            by=by,
            metric_names=metrics,
            intervals=intervals,
            confidence=float(confidence) / 100,
            width=width or terminal_width(stdout, os.environ),
            suppress_plot=suppress_plot,
            summary_only=summary_only,
            separate_bars=separate_bars,
        )
    stdout.write(text.encode())
    stdout.flush()
    sys.exit(code)


def stat_text(
    store: Any,
    ref: str,
    *,
    by: str | None = None,
    metric_names: Sequence[str] = (),
    intervals: bool = False,
    confidence: float = 0.95,
    width: int = 74,
    suppress_plot: bool = False,
    summary_only: bool = False,
    separate_bars: bool = False,
) -> tuple[str, int]:
    """The whole `netrig stat --experiment` output and its exit code (1: nothing to show)."""
    from netrig.report import verdicts
    from netrig.stats.stored import (
        collect,
        failure_reasons,
        load,
        parse_selector,
        point_label,
        resolve_metrics,
    )

    selector = parse_selector(ref)
    if selector.experiment is None:
        raise CommandError(f"--experiment {ref!r}: name the experiment, e.g. 3 or ring:hops=5")
    data = load(store, selector.experiment)
    if by is not None and "," in by:  # the examples had said --by protocol,bfd
        others = " or ".join(f"--by {p.strip()}" for p in by.split(",") if p.strip())
        raise CommandError(
            f"--by {by}: --by takes one parameter, whose values are compared in one block "
            f"per combination of the others; try {others or '--by PARAM'}"
        )
    if by is not None:
        data.check_params([by])
    data.check_filters(selector.filters)
    metrics = resolve_metrics(data, metric_names)
    if not metrics:
        raise CommandError(f"experiment {data.experiment.id} stored no samples", EXIT_FAILURE)
    out: list[str] = []
    shown = 0
    matched = False
    for metric in metrics:
        kind: SampleKind = "intervals" if intervals else "auto"
        # the host (netrig run --cluster) is a block: each point's runs apart per host
        per_host = ["host"] if by == "host" else None
        groups = collect(data, metric, filters=selector.filters, by=per_host, kind=kind)
        matched = matched or bool(groups)
        # blocks: (title, [(data set name, group)])
        blocks: dict[str, list[tuple[str, Any]]] = {}
        for g in groups:
            if by is None:
                blocks[g.label] = [(g.label, g)]
            else:
                rest = tuple((k, v) for k, v in g.key if k != by)
                name = f"{by}={render(g.value(by))}"
                blocks.setdefault(point_label(rest) if rest else "", []).append((name, g))
        for title, members in blocks.items():
            out.append(f"== {metric}" + (f", {title}" if title else ""))
            usable = []
            for name, g in members:
                if len(g.values) >= verdicts.MINISTAT_MIN_VALUES:
                    usable.append((name, g.values))
                elif g.failed:
                    reasons = "; ".join(
                        r + (f" (×{n})" if n > 1 else "") for r, n in failure_reasons(g.failed)
                    )
                    out.append(f"{name}: {len(g.failed)} run(s) failed: {reasons}")
                else:
                    out.append(f"{name}: {len(g.values)} value(s); ministat needs at least 3")
            # ministat takes 7 data sets; more are shown in chunks against the same reference
            for start in range(1, max(len(usable), 2), MAX_DATASETS - 1):
                chunk = usable[:1] + usable[start : start + MAX_DATASETS - 1]
                if not chunk:
                    break
                out.append(
                    verdicts.ministat_text(
                        chunk,
                        confidence=confidence,
                        width=width,
                        suppress_plot=suppress_plot,
                        summary_only=summary_only,
                        separate_bars=separate_bars,
                    )
                    .decode()
                    .rstrip("\n")
                )
                shown += 1
            out.append("")
    if not matched:  # it printed nothing at all; bad input, as a side of compare is
        wanted = ref.split(":", 1)[1] if ":" in ref else ref
        raise CommandError(f"no run of experiment {data.experiment.id} matches {wanted}")
    return "\n".join(out), (EXIT_OK if shown else EXIT_FAILURE)


def stat_stored_main(argv: Sequence[str]) -> None:
    """Run `netrig stat --experiment …` (called by cmd_stat); exits with the code."""
    stat_stored_command.main(list(argv), prog_name="netrig stat")
