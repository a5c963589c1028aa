"""netrig run FILE: run an experiment, store every run, print the summary table."""

from __future__ import annotations

import io
import os
import signal
import sys
from typing import TYPE_CHECKING

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from netrig.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    SET_OPTION,
    console,
    counted,
    err_console,
    fail,
    parse_overrides,
    real_console,
    reports_errors,
    require_root,
    store_exit_code,
)
from netrig.cli.group import cli
from netrig.plan.experiment import ExperimentPlan
from netrig.plan.runs import PlannedRun, measured
from netrig.results import summary
from netrig.results.store import ResultStore, StoreError
from netrig.rig.prepare import experiment_programs

if TYPE_CHECKING:
    from netrig.experiment.runner import Outcome


def _list_measurements(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """--measurements: every plugin's options, from its model (so it cannot go stale)."""
    if not value or ctx.resilient_parsing:
        return
    from netrig import measure

    for name, cls in sorted(measure.load_plugins().items()):
        table = Table(title=f"{name}: {cls.summary}", title_justify="left", box=box.SIMPLE_HEAD)
        for column in ("option", "default", "meaning"):
            table.add_column(column)
        for key, field in cls.Options.model_fields.items():
            default = (
                "required" if field.is_required()
                else "-" if field.default is None
                else repr(field.default)
            )  # fmt: skip
            # markup off: "[[src, dst], …]" had printed as "[, …]"
            table.add_row(escape(key), escape(default), escape(field.description or ""))
        console.print(table)
    ctx.exit(0)


@cli.command("run")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--db",
    default="netrig.db",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Results database (SQLite), created if missing.",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, 100000),  # as the file's `repeat:`
    metavar="N",
    help="Runs per sweep point, instead of the file's `repeat:`.",
)
@SET_OPTION
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the newest unfinished experiment of this same file (and the "
    "same --set/--repeat) in --db, running only the runs not stored yet.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Validate every sweep point and print the plan of runs; create nothing.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar; print only the summary table.")
@click.option(
    "--cluster",
    envvar="NETRIG_CLUSTER",
    metavar="tcp://HOST:PORT",
    help="Run on the hosts of this Dask scheduler (`netrig worker`s); results are stored "
    "here, each run with its host. Env: NETRIG_CLUSTER.",
)
@click.option(
    "--name",
    "lab_name",
    metavar="NAME",
    help="Name the lab and the stored experiment NAME instead of the file's name (run a "
    "file while it is up elsewhere).",
)
@click.option(
    "--measurements",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_list_measurements,
    help="List the measurements and their options.",
)
@reports_errors
def run(
    file: str,
    db: str,
    repeat: int | None,
    overrides: tuple[str, ...],
    resume: bool,
    dry_run: bool,
    quiet: bool,
    cluster: str | None,
    lab_name: str | None,
) -> None:
    """Run the experiment in FILE and store its results in --db.

    FILE is a lab file plus `measure:` (what to measure), or `lab: PATH` naming a lab
    file (netrig, containerlab *.clab.yml or Mininet *.py), and optionally `vary:`
    (parameters to sweep), `params:` (constants), `repeat:`, `order:`
    (sequential | interleaved), `warmup:` and `cooldown:`. Every combination of
    the `vary:` values × `repeat` is one run. The whole file is validated, for
    every sweep point, before anything is created.

    `events:` (e.g. `- link n8-n9 down @ 2s`, `- node n5 stop @ 1s`, `- link n1-n2
    rate 10mbit @ 3s`) runs the measurements side by side while the faults happen,
    restores the lab after each run and stores outage, reconvergence, packets lost
    and throughput before/during/after under the measurement name `events`.
    `stop_on_failure: true` ends at the first failed run and names the last sweep
    point that worked (exit 0: the limit was found).

    Parameters go anywhere in the file as {expr}: arithmetic (+ - * / // %)
    on numbers and parameters, e.g. `server: "n{1 + hops}"`. Measurements: iperf3,
    ping, pps, wrk, ab, convergence, stage_latency, command (--measurements lists
    their options).

    With --cluster ADDR (or NETRIG_CLUSTER) the runs go to the hosts of that Dask
    scheduler, one at a time per host; every host runs every sweep point where it
    can (the host is a block: `netrig stat --by host`), each run is stored here
    with the host it ran on; a run of a host that dies is retried on another. A lab
    with `placement: {hosts: N}` (or a node's `host: NAME`) is instead spread over the
    hosts (as `netrig up
    --cluster`), its runs one after another, each measurement's processes on the
    hosts of their nodes (stored with those hosts); a host lost mid-run fails that
    run with the reason, and the next run builds the lab again on the hosts left.

    Ctrl-C (or SIGTERM, SIGHUP) stops the current run cleanly: the lab is removed,
    finished runs are kept, the interrupted run is stored as interrupted; `--resume`
    continues. With --cluster, a client killed outright (kill -9) leaves nothing on
    the hosts for long: each releases the sweep's lab within seconds of the scheduler
    losing the client.

    Exit codes: 0 every run succeeded, 1 some run failed (or the lab could not be
    built), 2 bad input, 128 + the signal's number when interrupted (130 Ctrl-C,
    143 SIGTERM, 129 SIGHUP).
    """
    from netrig.experiment.interrupt import StopSignal
    from netrig.experiment.progress import RichReporter
    from netrig.experiment.runner import run_experiment
    from netrig.rig.prepare import load_experiment

    if not dry_run and not cluster:  # --dry-run creates nothing; --cluster's hosts do
        require_root("run")
    exp = load_experiment(file, parse_overrides(overrides), repeat, lab_name)
    placed = None
    if cluster:
        from netrig.cluster.sweep import placement_of  # light: no networkx for a sweep

        placed = placement_of(file, parse_overrides(overrides))
    runs = exp.runs()
    if dry_run:
        _print_plan(exp, runs)
        return
    if resume and db != ":memory:" and not os.path.exists(db):  # not made just to say so
        fail(
            f"nothing to resume: no results database at {db} (--db names the one the "
            "interrupted run wrote)",
            EXIT_BAD_INPUT,
        )
    if not cluster and not os.path.exists(db):
        _refuse_taken_names(exp)  # a refusal creates nothing, not even the database
    reporter = RichReporter(real_console(err_console), quiet)
    try:
        with ResultStore(db) as store:
            if cluster:
                from netrig.cluster.sweep import run_on_cluster

                if placed is None:  # a whole lab per host, the runs spread over the hosts
                    outcome = run_on_cluster(exp, store, cluster, resume=resume,
                                             reporter=reporter)
                else:  # one lab over the hosts, each measurement on its nodes' hosts
                    from netrig.cluster.spread import run_spread

                    outcome = run_spread(exp, store, cluster, placed.hosts or None,
                                         resume=resume, reporter=reporter, pins=placed.pins)
                import gc

                gc.freeze()  # the command ends soon: no last collection over Dask's objects
            else:
                outcome = run_experiment(exp, store, resume=resume, reporter=reporter)
            # every run is stored and the lab removed: a signal from here on is only noted,
            # so the summary and the resume line are printed whole (a second Ctrl-C had
            # said "everything this command created was removed", a third killed Python)
            with StopSignal() as late:
                code = _report(store, exp, runs, outcome, db, quiet,
                               _resume_command(file, db, repeat, overrides, lab_name, cluster))
            if late.requested and not outcome.signal:
                code = late.exit_code
            if code:
                sys.exit(code)
    except StoreError as exc:  # its message names the file
        fail(str(exc), store_exit_code(exc))


def _refuse_taken_names(exp: ExperimentPlan) -> None:
    """BadInput when a lab name of the experiment is up already, asked before a new
    database is made. (With a database there, the runner asks after it has removed a lab
    a killed run of that database left behind.)"""
    from netrig.lab.build import preflight
    from netrig.lab.ledger import Ledger

    ledger = Ledger()
    try:
        for plan in {p.plan.name: p.plan for p in exp.points}.values():
            preflight(plan, ledger)
    finally:
        ledger.close()


def _report(
    store: ResultStore, exp: ExperimentPlan, runs: list[PlannedRun], outcome: Outcome, db: str,
    quiet: bool, resume_command: str,
) -> int:
    """The summary table and what became of the runs; the exit code: 1 if one failed,
    128 + the signal's number if a signal stopped them."""
    print_summary(store, outcome.experiment_id, f"{exp.name} (experiment {outcome.experiment_id})")
    total = measured(runs)
    stored = outcome.ok + outcome.failed + outcome.skipped
    if outcome.signal:
        err_console.print(
            f"[yellow]interrupted ({outcome.signal})[/]: {stored} of {total} runs stored, the lab "
            f"removed; continue with: {escape(resume_command)}",  # --set 'lb=[pen,haproxy]'
            soft_wrap=True,
        )
        if outcome.signal not in signal.Signals.__members__:  # "no hosts left" (--cluster)
            return EXIT_FAILURE
        return 128 + signal.Signals[outcome.signal]  # 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
    if exp.stop_on_failure:
        last = f"the last point that worked: {outcome.last_ok or 'none'}"
        if outcome.stopped_at:
            err_console.print(
                f"[yellow]stopped at the first failure[/] ({escape(outcome.stopped_at)}); "
                f"{escape(last)} (see `netrig results show {outcome.experiment_id} --db "
                f"{escape(db)}`)",
                soft_wrap=True,
            )
            return 0  # the limit was found: that is the experiment's result, not an error
        err_console.print("[green]no run failed[/]: the limit lies beyond the last point")
    if outcome.failed:
        err_console.print(
            f"[red]{outcome.failed} of {outcome.ok + outcome.failed} runs failed[/] "
            f"(see `netrig results show {outcome.experiment_id} --db {escape(db)}`)",
            soft_wrap=True,
        )
        return EXIT_FAILURE
    if not quiet:
        err_console.print(
            f"[green]{counted(stored, 'run')} stored[/] in {escape(db)} (experiment "
            f"{outcome.experiment_id}; {counted(outcome.labs_built, 'lab build')})",
            soft_wrap=True,
        )
    return 0


def _print_plan(exp: ExperimentPlan, runs: list[PlannedRun]) -> None:
    """What `netrig run` would do: the sweep points, their labs, the runs."""
    table = Table(
        title=f"{exp.name}: {counted(len(exp.points), 'sweep point')} × {exp.repeat} "
        f"({exp.order}, warm-up {exp.warmup})",
        title_justify="left",
    )
    for column in ("point", "nodes", "links", "routes", "measurements"):
        table.add_column(column)
    for point in exp.points:
        table.add_row(
            escape(point.label),
            str(len(point.plan.nodes)),
            str(len(point.plan.links)),
            str(point.plan.route_count()),
            ", ".join(s.name for s in point.steps),
        )
    console.print(table)
    builds, network = 0, None
    for run in runs:
        if exp.points[run.point].network != network:
            builds, network = builds + 1, exp.points[run.point].network
    console.print(
        f"{counted(len(runs), 'run')}{_warmups(len(runs), measured(runs))}, "
        f"{counted(builds, 'lab build')}; "
        f"tools: {', '.join(sorted(experiment_programs(exp))) or 'none'}"
    )


def _warmups(runs: int, stored: int) -> str:
    """' (4 stored, 2 warm-up)' when some runs are warm-ups (not stored), else ''."""
    return f" ({stored} stored, {runs - stored} warm-up)" if runs > stored else ""


def print_summary(
    store: ResultStore, experiment_id: int, title: str, all_metrics: bool = False
) -> None:
    """The per-point table: N, median, min, max, stddev; failed runs counted, never as 0."""
    rows = summary.summarize(store, experiment_id, all_metrics)
    several = len({r.measurement for r in rows if r.measurement}) > 1
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("point", no_wrap=True)
    table.add_column("metric", no_wrap=True)
    for column in ("N", "failed", "median", "min", "max", "stddev"):
        table.add_column(column, justify="right", no_wrap=True)
    reference: dict[tuple[str, str], float] = {}
    for row in rows:  # one scale per metric, so every point reads in the same unit: the
        if row.median is not None:  # largest median's (the first point's had been taken:
            key = (row.measurement, row.metric)  # 643 bit/s made 4586552905 bit/s of the rest)
            reference[key] = max(reference.get(key, 0.0), abs(row.median))
    previous = None
    for row in rows:
        label, previous = ("" if row.label == previous else row.label), row.label
        factor, unit = summary.scale(row.unit, reference.get((row.measurement, row.metric)))
        failed = str(row.failed) if row.failed else ""
        if row.interrupted:
            failed += f" +{row.interrupted} interrupted"
        metric = summary.metric_label(row.measurement, row.metric) if several else row.metric
        metric += f" ({unit})" if unit else ""
        table.add_row(
            escape(label),
            escape(metric.strip()) or "(no data)",
            str(row.n),
            failed,
            summary.fmt(row.median, factor),
            summary.fmt(row.minimum, factor),
            summary.fmt(row.maximum, factor),
            summary.fmt(row.stddev, factor),
            style="red" if row.n == 0 else None,
        )
    # never squeeze a column away: a table wider than the terminal wraps instead
    probe = Console(file=io.StringIO(), width=1000, highlight=False)
    probe.print(table)
    lines = probe.file.getvalue().splitlines()  # type: ignore[attr-defined]
    needed = max(len(line.rstrip()) for line in lines) + 2  # the last column's padding
    out = console
    if needed > console.width:
        out = Console(
            file=console.file, width=needed, highlight=False, force_terminal=console.is_terminal
        )
    out.print(table)
    reasons: dict[str, int] = {}
    for run in store.runs(experiment_id):
        if run.status == "failed" and run.reason:
            reasons[run.reason] = reasons.get(run.reason, 0) + 1
    for reason, count in list(reasons.items())[:5]:
        console.print(f"[red]failed[/] ×{count}: {escape(reason)}", soft_wrap=True, highlight=False)


def _resume_command(
    file: str,
    db: str,
    repeat: int | None,
    overrides: tuple[str, ...],
    lab_name: str | None,
    cluster: str | None = None,
) -> str:
    """The command that continues this experiment: --resume finds it only with the same
    file, --set values, --repeat and --name."""
    import shlex

    argv = ["netrig", "run", file, "--resume"]
    argv += [arg for value in overrides for arg in ("--set", value)]
    argv += ["--repeat", str(repeat)] if repeat is not None else []
    argv += ["--name", lab_name] if lab_name else []
    argv += ["--db", db] if db != "netrig.db" else []
    argv += ["--cluster", cluster] if cluster else []
    return shlex.join(argv)
