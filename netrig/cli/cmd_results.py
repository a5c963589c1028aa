"""netrig results list|show|export: browse the results store, export it tidy for analysis."""

from __future__ import annotations

import contextlib
import json
import sys
from typing import IO, Any

import click
from rich.markup import escape
from rich.table import Table

from netrig.base.values import render
from netrig.cli.common import (
    DB_OPTION,
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    console,
    fail,
    reports_errors,
    store_exit_code,
)
from netrig.cli.group import cli
from netrig.results.store import ExperimentRecord, ResultStore, Run, StoreError


@cli.group("results")
def results() -> None:
    """Browse stored experiments and runs; export them as tidy CSV or JSON.

    An EXPERIMENT is named by its id or its name (the newest of that name);
    a RUN by `r` and its id (r12), as `results show EXPERIMENT` lists them.
    """


def _open(db: str) -> ResultStore:
    import os

    if db != ":memory:" and not os.path.exists(db):
        fail(
            f"no results database at {db} (netrig run writes one; choose with --db)", EXIT_BAD_INPUT
        )
    try:
        return ResultStore(db)
    except StoreError as exc:  # its message names the file
        fail(str(exc), store_exit_code(exc))
    except OSError as exc:
        fail(f"{db}: {exc}", EXIT_FAILURE)


def _experiment(store: ResultStore, ref: str) -> ExperimentRecord:
    found = store.find_experiment(ref)
    if found is None:
        names = sorted({e.name for e in store.experiments()})
        known = ", ".join(names[:10]) or "none"
        fail(f"no experiment {ref!r} in {store.path}; experiments: {known}", EXIT_BAD_INPUT)
        raise AssertionError  # unreachable
    return found


def _counts(runs: list[Run]) -> str:
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    return " ".join(f"{n} {status}" for status, n in counts.items()) or "none"


@results.command("list")
@DB_OPTION
@reports_errors
def list_(db: str) -> None:
    """List the experiments in the database, oldest first."""
    with _open(db) as store:
        table = Table(title=f"experiments in {db}", title_justify="left")
        for column in ("id", "name", "started (UTC)", "status", "runs", "file hash"):
            table.add_column(column)
        for e in store.experiments():
            table.add_row(
                str(e.id),
                escape(e.name),
                e.started.strftime("%Y-%m-%d %H:%M:%S"),
                e.status,
                _counts(store.runs(e.id)),
                e.file_hash[:12],
            )
        console.print(table)


@results.command("show")
@click.argument("ref", metavar="EXPERIMENT|RUN")
@click.option(
    "--all-metrics", is_flag=True, help="Every summary metric, not only the headline ones."
)
@DB_OPTION
@reports_errors
def show(ref: str, all_metrics: bool, db: str) -> None:
    """Show an experiment (its runs and summary table) or one run (its samples)."""
    with _open(db) as store:
        if ref[:1] in ("r", "R") and ref[1:].isdigit():
            _show_run(store, int(ref[1:]))
        else:
            _show_experiment(store, _experiment(store, ref), all_metrics)


def _show_experiment(store: ResultStore, e: ExperimentRecord, all_metrics: bool) -> None:
    from netrig.cli.cmd_run import print_summary

    facts = e.host_facts
    ended = e.ended.strftime("%H:%M:%S") if e.ended else "-"
    console.print(
        f"[bold]experiment {e.id}[/] {escape(e.name)}: {e.status}, started "
        f"{e.started:%Y-%m-%d %H:%M:%S} UTC, ended {ended}; file hash {e.file_hash[:12]}",
        soft_wrap=True,
        highlight=False,
    )
    runs = store.runs(e.id)
    per_host = store.hosts_facts(e.id)  # a cluster experiment: each host's own facts
    if "cluster" in facts:
        console.print(f"cluster: {facts['cluster']}", soft_wrap=True, highlight=False)
    mine = [("host", facts)] if "kernel" in facts else []
    for label, known in mine + sorted(per_host.items()):
        console.print(_facts_line(label, known), soft_wrap=True, highlight=False, markup=False)
    if not mine and not per_host:
        console.print("host: no facts stored", highlight=False)
    table = Table(title="runs", title_justify="left")
    # which host ran each run, when they ran on more than one (a spread lab's: h1+h2)
    hosts = len({h for run in runs if run.host for h in run.host.split("+")}) > 1
    for column in ("run", "point", *(["host"] if hosts else []), "rep", "status",
                   "duration s", "reason"):  # fmt: skip
        table.add_column(column)
    for run in runs:
        point = ", ".join(f"{k}={render(v)}" for k, v in run.point.items()) or "-"
        duration = f"{run.duration:.2f}" if run.duration is not None else "-"
        table.add_row(
            f"r{run.id}", escape(point), *([escape(run.host or "-")] if hosts else []),
            str(run.repetition), run.status, duration, escape(run.reason or ""),
        )
    console.print(table)
    print_summary(store, e.id, "summary", all_metrics)


def _facts_line(label: str, facts: dict[str, Any]) -> str:
    """One host's facts in a line: kernel, CPU, netrig and tool versions."""
    tools = json.dumps(facts.get("tool_versions", {}))
    return (
        f"{label}: kernel {facts.get('kernel', '?')}, {facts.get('cpu_model', '?')} "
        f"({facts.get('cpu_usable', '?')} CPUs usable), netrig {facts.get('netrig_version', '?')};"
        f" tools: {tools}"
    )


def _show_run(store: ResultStore, run_id: int) -> None:
    try:
        run = store.run(run_id)
    except StoreError as exc:
        fail(str(exc), EXIT_BAD_INPUT)
        return
    e = store.experiment(run.experiment_id)
    point = ", ".join(f"{k}={render(v)}" for k, v in run.point.items()) or "-"
    duration = f"{run.duration:.2f} s" if run.duration is not None else "-"
    console.print(
        f"[bold]run r{run.id}[/] of experiment {e.id} {escape(e.name)}: point {escape(point)}, "
        f"repetition {run.repetition}, [bold]{run.status}[/], {duration}",
        soft_wrap=True,
        highlight=False,
    )
    if run.reason:
        console.print(f"reason: {run.reason}", soft_wrap=True, highlight=False, markup=False)
    samples = store.samples(run.id)
    if run.failed_measurements:
        kept = sorted({name for name, _ in samples} - set(run.failed_measurements))
        console.print(
            f"failed: {', '.join(run.failed_measurements)}; "
            + (f"{', '.join(kept)} still count in stat, compare and plots" if kept else
               "no other measurement"),
            soft_wrap=True, highlight=False, markup=False,
        )  # fmt: skip
    if run.host:  # a lab spread over hosts: "h1+h2", each host's facts
        known = store.hosts_facts(e.id)
        for host in run.host.split("+"):
            console.print(_facts_line(f"ran on {host}", known.get(host, {})), soft_wrap=True,
                          markup=False)
    table = Table(title="summary samples", title_justify="left")
    for column in ("measurement", "metric", "stream", "value", "unit"):
        table.add_column(column, justify="right" if column == "value" else "left")
    intervals = 0
    for name, s in samples:
        if s.t is not None:
            intervals += 1
            continue
        table.add_row(escape(name), s.metric, escape(s.stream or ""), f"{s.value:.6g}", s.unit)
    console.print(table)
    if intervals:
        console.print(f"{intervals} interval samples (netrig results export for all of them)")
    for name, label, text in store.outputs(run.id):
        console.print(f"[bold]{escape(name)} {escape(label)}[/]:", highlight=False)
        console.out(text.rstrip(), highlight=False)
    if run.stderr:
        console.print("[bold]stderr[/]:")
        console.out(run.stderr.rstrip(), highlight=False)


@results.command("export")
@click.argument("ref", metavar="[EXPERIMENT]", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "json"]),
    default="csv",
    show_default=True,
    help="csv: one row per sample; json: the same rows plus each experiment's file and host facts.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    help="File to write (default: stdout).",
)
@DB_OPTION
@reports_errors
def export(ref: str | None, fmt: str, output: str, db: str) -> None:
    """Export samples tidy: one row per sample, ready for pandas or gnuplot.

    Columns: experiment, experiment_id, run, repetition, status, reason, one
    column per sweep parameter, measurement, metric, stream, value, unit, t
    (interval start in seconds; empty for a run's summary values). A failed run
    without samples is one row with an empty value. Without EXPERIMENT, every
    experiment in the database.
    """
    with _open(db) as store:
        eid = _experiment(store, ref).id if ref else None
        with contextlib.ExitStack() as stack:
            fh: IO[str] = sys.stdout
            if output != "-":
                try:
                    fh = stack.enter_context(open(output, "w", encoding="utf-8", newline=""))
                except OSError as exc:  # one line, as `netrig export` says it
                    fail(f"cannot write {output}: {exc.strerror or exc}", EXIT_FAILURE)
            count = store.export_csv(fh, eid) if fmt == "csv" else store.export_json(fh, eid)
        if output != "-":
            console.print(f"{count} rows written to {output}", highlight=False)
